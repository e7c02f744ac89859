"""The runner's functions called from Python with the command line's options as keyword
arguments: the same results as the commands, and the same refusals before any work."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt import runner
from kerasnmt.config import load_config
from kerasnmt.runner.run_checkpoints import restore_translator
from tests.test_written_by_0_1_0 import FIXTURE, _scored


@pytest.fixture
def run(tmp_path):
    """A copy of the committed 0.1.0 run (a trained tiny model, its vocabularies, val.src)."""
    return shutil.copytree(FIXTURE / "run", tmp_path / "run")


def test_translate_file_writes_the_translations_the_0_1_0_run_wrote(run, capsys):
    output = run / "val.out"
    count = runner.translate_file(input=str(run / "val.src"), output=str(output),
                                  config=str(run / "run.yml"), with_scores=True, no_xla=True)
    lines = output.read_text(encoding="utf-8").splitlines()
    assert count == len(lines)
    texts, scores = _scored(lines)
    expected_texts, expected_scores = _scored(
        (FIXTURE / "run" / "val.translations").read_text(encoding="utf-8").splitlines())
    assert texts == expected_texts
    np.testing.assert_allclose(scores, expected_scores, atol=1e-4)
    assert f"wrote {count} translations to {output}" in capsys.readouterr().out


def test_translate_file_refuses_its_input_as_output_before_reading_the_model(run, capsys):
    source = run / "val.src"
    before = source.read_bytes()
    with pytest.raises(ValueError, match="is also an input: writing it would replace"):
        runner.translate_file(input=str(source), output=str(source),
                              config=str(run / "run.yml"))
    assert source.read_bytes() == before
    assert "Restored" not in capsys.readouterr().err
    with pytest.raises(runner.OptionError, match="--no-xla does not apply to --saved-model"):
        runner.translate_file(saved_model=str(run), no_xla=True)


def test_average_checkpoints_is_the_mean_of_the_weights(run, tmp_path):
    """A second checkpoint, every trainable weight of the first plus 1: their average is
    the first plus 0.5 (the configuration given as the dictionary `load_config` returns)."""
    config = load_config(run / "run.yml")
    translator, first = restore_translator(config)
    original = [weight.numpy() for weight in translator.trainable_weights]
    for weight in translator.trainable_weights:
        weight.assign(weight + 1.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=translator),
                                         config["model_dir"], max_to_keep=5)
    second = manager.save(checkpoint_number=int(first.rsplit("-", 1)[1]) + 1)

    path = runner.average_checkpoints(config, max_count=2, output=str(tmp_path / "averaged"))
    assert path == str(tmp_path / "averaged" / second.rsplit("/", 1)[1])
    averaged, _ = restore_translator(config, path)
    for weight, value in zip(averaged.trainable_weights, original, strict=True):
        np.testing.assert_allclose(weight.numpy(), value + 0.5, rtol=1e-6, atol=1e-6)


def test_average_checkpoints_refuses_a_file_as_its_output(run):
    output = run / "average.txt"
    output.write_text("kept\n")
    with pytest.raises(ValueError, match="is a file: average-checkpoints writes a checkpoint"):
        runner.average_checkpoints(str(run / "run.yml"), output=str(output))
    assert output.read_text() == "kept\n"
