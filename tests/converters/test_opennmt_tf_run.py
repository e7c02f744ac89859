"""A converted OpenNMT-tf model is a kerasnmt run directory: its run.yml, vocabularies and
checkpoint, the Adam moments at OpenNMT-tf's step, and training continues from it."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import yaml

from kerasnmt.cli import main
from kerasnmt.config import load_config
from kerasnmt.runner import train
from kerasnmt.runner.run_model import build_translator
from kerasnmt.training.run_optimizer import build_optimizer
from tests.converters.opennmt_tf_fixtures import FIXTURE, VALUE, convert, heldout

pytestmark = pytest.mark.heavy(39)

# The relative-position model: LazyAdam, NoamDecay, SentencePiece, one shared vocabulary.
MODEL = "relative"
STEP = 1200


@pytest.fixture(scope="module")
def conversion(tmp_path_factory):
    return convert(MODEL, tmp_path_factory.mktemp("converted") / "run")


def test_the_run_directory_holds_the_run_configuration_files_and_checkpoint(conversion):
    directory = os.path.dirname(conversion.run_config)
    assert sorted(os.listdir(directory)) == ["model", "run.yml", "sentencepiece.model",
                                              "vocabulary.txt"]
    assert sorted(os.listdir(os.path.join(directory, "model"))) == [
        "checkpoint", f"ckpt-{STEP}.data-00000-of-00001", f"ckpt-{STEP}.index", "recipe.json"]
    with open(FIXTURE / MODEL / "vocab.txt", "rb") as original, \
            open(os.path.join(directory, "vocabulary.txt"), "rb") as copy:
        assert copy.read() == original.read()
    with open(conversion.run_config, encoding="utf-8") as file:
        run = yaml.safe_load(file)
    # model.py: 2 layers, 16 units, 4 heads, FFN 32, relative positions up to 8, pre-norm,
    # EmbeddingsSharingLevel.ALL; Keras' layer normalization epsilon.
    assert run["model"] == dict(
        num_layers=2, num_units=16, num_heads=4, ffn_inner_dim=32, dropout=0.1,
        attention_dropout=0.1, ffn_dropout=0.1, maximum_relative_position=8, pre_norm=True,
        share_embeddings="all", source_eos=False, use_output_bias=True,
        layer_norm_epsilon=1e-3)
    assert run["data"] == {"source_vocabulary": "vocabulary.txt",
                           "target_vocabulary": "vocabulary.txt",
                           "source_sentencepiece": "sentencepiece.model",
                           "target_sentencepiece": "sentencepiece.model"}
    # config.yml's keys; LazyAdam is Adam; OpenNMT-tf's constant decoding limit.
    assert run["params"]["optimizer"] == "Adam"
    assert run["params"]["decay_params"] == {"model_dim": 16, "warmup_steps": 100}
    assert (run["params"]["beam_width"], run["params"]["length_penalty"]) == (4, 0.6)
    assert (run["params"]["decoding_length_ratio"],
            run["params"]["decoding_length_offset"]) == (0.0, 60)
    assert run["train"]["effective_batch_size"] is None  # OpenNMT-tf's default
    assert run["train"]["batch_type"] == "examples"
    assert conversion.step == STEP and conversion.optimizer_state
    assert conversion.left_out == [
        "score (kerasnmt does not have it)",
        "data.train_features_file (no such file from here)",
        "data.train_labels_file (no such file from here)",
        "params.average_loss_in_time (kerasnmt does not have it)",
        "infer.length_bucket_width (kerasnmt does not have it)",
    ]


def test_the_checkpoint_holds_opennmt_tf_adam_moments_at_its_step(conversion):
    config = load_config(conversion.run_config)
    translator = build_translator(config)
    optimizer = build_optimizer(config)
    optimizer.build(translator.trainable_variables)
    path = os.path.join(config["model_dir"], f"ckpt-{STEP}")
    tf.train.Checkpoint(model=translator, optimizer=optimizer).restore(
        path).assert_existing_objects_matched()
    assert int(optimizer.iterations) == STEP
    original = tf.train.load_checkpoint(str(FIXTURE / MODEL / "checkpoint"))
    pairs = {
        "model/examples_inputter/features_inputter/embedding": translator.source_embedding.embeddings,
        "model/decoder/layers/1/ffn/layer/inner/kernel": translator.decoder.layer_1.ffn.inner.kernel,
        "model/encoder/layers/0/self_attention/layer/relative_position_keys":
            translator.encoder.layer_0.self_attention.relative_position_keys,
        "model/decoder/output_layer/bias": translator.output_bias,
    }
    for name, variable in pairs.items():
        np.testing.assert_array_equal(variable.numpy(), original.get_tensor(name + VALUE))
        index = optimizer._get_variable_index(variable)
        for slot, moments in (("m", optimizer._momentums), ("v", optimizer._velocities)):
            np.testing.assert_array_equal(
                moments[index].numpy(),
                original.get_tensor(f"{name}/.OPTIMIZER_SLOT/optimizer/{slot}{VALUE}"))


def test_training_continues_from_the_converted_step(conversion, tmp_path):
    directory = tmp_path / "run"
    shutil.copytree(os.path.dirname(conversion.run_config), directory)
    for side, name in (("en", "train.en"), ("de", "train.de")):
        (tmp_path / name).write_text("\n".join(heldout(MODEL, side)) + "\n", encoding="utf-8")
    run = yaml.safe_load((directory / "run.yml").read_text(encoding="utf-8"))
    run["data"].update(train_features_file=str(tmp_path / "train.en"),
                       train_labels_file=str(tmp_path / "train.de"))
    run["train"].update(max_step=STEP + 2, batch_size=10, save_checkpoints_steps=1,
                        sample_buffer_size=0)
    (directory / "run.yml").write_text(yaml.safe_dump(run), encoding="utf-8")
    config = load_config(directory / "run.yml")
    name = "model/source_embedding/_embeddings" + VALUE
    before = tf.train.load_checkpoint(str(directory / "model" / f"ckpt-{STEP}")).get_tensor(name)
    result = train(config, verbose=0)
    assert result.step == STEP + 2
    after = tf.train.load_checkpoint(result.checkpoint)
    assert result.checkpoint.endswith(f"ckpt-{STEP + 2}")
    assert not np.array_equal(before, after.get_tensor(name))


def test_the_command_converts_and_replaces_a_run_with_force(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(FIXTURE / "absolute")
    arguments = ["convert", "opennmt-tf", "--config", "config.yml",
                 "--output", str(tmp_path / "run"), "--num-heads", "2"]
    assert main(arguments) == 0
    assert capsys.readouterr().out.startswith(
        f"Wrote {tmp_path / 'run' / 'run.yml'}: a kerasnmt run at step 400, with the "
        "optimizer's moments\n")
    assert main(arguments) == 2
    assert "already holds a run: pass --force" in capsys.readouterr().err
    assert main(arguments + ["--force", "--model-type", "TransformerTiny"]) == 2  # 64 units
    assert main(arguments + ["--force"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_the_converted_run_exports_a_saved_model_that_translates_as_translate_config(
        conversion, tmp_path, capsys):
    source = tmp_path / "heldout.en"
    source.write_text("\n".join(heldout(MODEL, "en")[:6]) + "\n", encoding="utf-8")
    export = tmp_path / "export"
    assert main(["export", "--config", conversion.run_config, str(export), "--no-warmup"]) == 0
    outputs = {}
    for name, model in (("config", ["--config", conversion.run_config]),
                        ("saved_model", ["--saved-model", str(export)])):
        outputs[name] = tmp_path / f"{name}.de"
        assert main(["translate", *model, "--input", str(source),
                     "--output", str(outputs[name])]) == 0
    capsys.readouterr()
    # The fixture's infer section sets with_scores, which the run carries over and a bare
    # SavedModel translation has no configuration for: the sentences are compared.
    scored = outputs["config"].read_text(encoding="utf-8").splitlines()
    assert len(scored) == 6 and all(" ||| " in line for line in scored)
    from_checkpoint = [line.split(" ||| ", 1)[1] for line in scored]
    assert outputs["saved_model"].read_text(encoding="utf-8").splitlines() == from_checkpoint
