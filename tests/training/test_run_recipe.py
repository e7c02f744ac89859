import json

import pytest

from kerasnmt.config import load_config
from kerasnmt.training.run_recipe import (
    check_checkpoint_recipe,
    check_run_recipe,
    copy_run_recipe,
    run_recipe,
)
from tests.run_fixtures import tiny_run, write_config, write_corpus


@pytest.fixture
def run_directory(tmp_path):
    return write_corpus(tmp_path)


def configuration(directory, **model):
    path = write_config(directory, tiny_run(model=model))
    return load_config(path)


def test_the_first_run_writes_its_recipe_and_an_unchanged_one_resumes(run_directory):
    config = configuration(run_directory)
    (run_directory / "model").mkdir()
    check_run_recipe(config, resuming=False)
    stored = json.loads((run_directory / "model" / "recipe.json").read_text())
    assert stored["model.num_units"] == 16
    assert stored["data.source_vocabulary"].startswith("sha256:")
    assert stored == run_recipe(config)
    check_run_recipe(configuration(run_directory, dropout=0.3), resuming=True)  # allowed


def test_a_changed_size_or_vocabulary_is_named(run_directory):
    (run_directory / "model").mkdir()
    check_run_recipe(configuration(run_directory), resuming=False)
    with pytest.raises(ValueError) as error:
        check_run_recipe(configuration(run_directory, num_units=32, pre_norm=False),
                         resuming=True)
    message = str(error.value)
    assert "was trained with another recipe" in message
    assert "model.num_units: 16 in the checkpoint, 32 in the configuration" in message
    assert "model.pre_norm: True in the checkpoint, False in the configuration" in message
    assert "model.num_heads" not in message

    vocabulary = run_directory / "vocab.tgt"
    vocabulary.write_text(vocabulary.read_text() + "extra\n")
    with pytest.raises(ValueError, match=r"data\.target_vocabulary: a file with sha256:"):
        check_run_recipe(configuration(run_directory), resuming=True)


def test_source_eos_is_recorded_only_when_set_so_earlier_recipes_still_match(run_directory):
    (run_directory / "model").mkdir()
    check_run_recipe(configuration(run_directory), resuming=False)
    stored = json.loads((run_directory / "model" / "recipe.json").read_text())
    assert "model.source_eos" not in stored  # as written before the option existed
    with pytest.raises(ValueError,
                       match=r"model\.source_eos: none in the checkpoint, True in the conf"):
        check_run_recipe(configuration(run_directory, source_eos=True), resuming=True)
    check_run_recipe(configuration(run_directory, source_eos=False), resuming=True)


def test_restoring_a_checkpoint_checks_the_model_section_of_its_run(run_directory, tmp_path):
    """Translation and export restore through the same check: `source_eos` changes no
    weight, so only the recipe tells that the checkpoint was trained with it."""
    model_dir = run_directory / "model"
    model_dir.mkdir()
    check_run_recipe(configuration(run_directory, source_eos=True), resuming=False)
    checkpoint = model_dir / "ckpt-5"
    check_checkpoint_recipe(configuration(run_directory, source_eos=True, dropout=0.3),
                            checkpoint)
    with pytest.raises(ValueError) as error:
        check_checkpoint_recipe(configuration(run_directory), checkpoint)
    assert str(error.value).startswith(
        f"{checkpoint} was trained with another model than the configuration's: "
        "model.source_eos: True in the checkpoint, none in the configuration.")
    averaged = tmp_path / "avg"
    averaged.mkdir()
    check_checkpoint_recipe(configuration(run_directory), averaged / "ckpt-5")  # no recipe
    copy_run_recipe(model_dir, averaged)
    with pytest.raises(ValueError, match="model.source_eos: True in the checkpoint"):
        check_checkpoint_recipe(configuration(run_directory), averaged / "ckpt-5")


def test_a_run_directory_without_a_recipe_gets_one_when_it_resumes(run_directory):
    (run_directory / "model").mkdir()
    check_run_recipe(configuration(run_directory), resuming=True)
    assert (run_directory / "model" / "recipe.json").exists()


def test_kerasnmt_train_refuses_to_resume_with_another_size(run_directory, capsys):
    from kerasnmt import cli

    config = tiny_run(train={"max_step": 1, "save_checkpoints_steps": 1,
                             "average_last_checkpoints": 0})
    assert cli.main(["train", "--config", str(write_config(run_directory, config)),
                     "--verbose", "0"]) == 0
    config["model"]["ffn_inner_dim"] = 64
    config["train"]["max_step"] = 2
    capsys.readouterr()
    status = cli.main(["train", "--config", str(write_config(run_directory, config)),
                       "--verbose", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert "model.ffn_inner_dim: 32 in the checkpoint, 64 in the configuration" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in (run_directory / "model").glob("ckpt-*.index")) == [
        "ckpt-1.index"]
