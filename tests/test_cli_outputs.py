"""Outputs the commands refuse before any work: nothing is read, translated or lost."""

import shutil

import pytest

from kerasnmt import cli

from tests.test_written_by_0_1_0 import FIXTURE


@pytest.fixture
def run(tmp_path):
    """A copy of the committed 0.1.0 run (a trained tiny model, its vocabularies, val.src)."""
    return shutil.copytree(FIXTURE / "run", tmp_path / "run")


def run_cli(capsys, *argv):
    status = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_translate_refuses_an_output_that_is_its_input(run, capsys):
    source = run / "val.src"
    before = source.read_bytes()
    status, out, err = run_cli(capsys, "translate", "--config", run / "run.yml",
                               "--input", source, "--output", source)
    assert status == 2
    assert f"{source} is also an input: writing it would replace what is read" in err
    assert source.read_bytes() == before


def test_translate_refuses_a_missing_output_directory_before_translating(run, capsys):
    output = run / "missing" / "val.de"
    status, out, err = run_cli(capsys, "translate", "--config", run / "run.yml",
                               "--input", run / "val.src", "--output", output)
    assert status == 2
    assert f"{output}: its directory {run / 'missing'} does not exist" in err
    assert "Restored" not in err  # refused before the model was read
    status, out, err = run_cli(capsys, "translate", "--config", run / "run.yml",
                               "--input", run / "val.src", "--output", run)
    assert status == 2 and f"{run} is a directory, not a file to write" in err


def test_average_checkpoints_refuses_a_file_as_its_output(run, capsys):
    output = run / "average.txt"
    output.write_text("kept\n")
    status, out, err = run_cli(capsys, "average-checkpoints", "--config", run / "run.yml",
                               "--output", output)
    assert status == 2
    assert f"--output {output} is a file: average-checkpoints writes a checkpoint directory" in err
    assert output.read_text() == "kept\n"
