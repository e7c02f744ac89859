"""Every bad input of `kerasnmt convert opennmt-tf` gets a clear error naming the file, the
variable or the key, and nothing is written under the output directory."""

import shutil

import numpy as np
import pytest
import yaml

from kerasnmt import runner
from kerasnmt.cli import main
from kerasnmt.converters import ConversionError, convert_opennmt_tf
from tests.converters.opennmt_tf_fixtures import (
    FIXTURE,
    fixture_values,
    write_checkpoint,
    written_files,
)


@pytest.fixture
def onmt_dir(tmp_path, monkeypatch):
    """A copy of the fixture's absolute-position model directory, the working directory."""
    directory = tmp_path / "onmt"
    shutil.copytree(FIXTURE / "absolute", directory)
    monkeypatch.chdir(directory)
    return directory


def _refused(output, match, **options):
    options.setdefault("num_heads", 2)
    with pytest.raises(ConversionError, match=match):
        convert_opennmt_tf("config.yml", output, **options)
    assert written_files(output) == ([], None)


def test_a_checkpoint_outside_the_transformer_family(onmt_dir, tmp_path):
    rnn = write_checkpoint({
        "model/examples_inputter/features_inputter/embedding": np.zeros([201, 16], np.float32),
        "model/encoder/rnn/cell/kernel": np.zeros([32, 64], np.float32),
    }, str(tmp_path / "rnn" / "ckpt-1"))
    _refused(tmp_path / "run", r"ckpt-1: not an OpenNMT-tf Transformer .*"
             r"model/encoder/rnn/cell/kernel.*not RNN", checkpoint=rnn)


def test_a_catalogue_model_outside_the_transformer_family(onmt_dir, tmp_path):
    _refused(tmp_path / "run", "--model-type NMTSmallV1: an OpenNMT-tf model outside the "
             "Transformer family", model_type="NMTSmallV1")


def test_a_model_type_the_checkpoint_contradicts(onmt_dir, tmp_path):
    _refused(tmp_path / "run", r"ckpt-400: its num_layers is 2, --model-type TransformerBig's "
             "is 6", model_type="TransformerBig", num_heads=None)


def test_an_absolute_position_model_without_its_heads(onmt_dir, tmp_path):
    _refused(tmp_path / "run", "ckpt-400: an absolute-position model, whose variables do not "
             "tell its number of heads: pass --num-heads", num_heads=None)


def test_a_number_of_heads_the_relative_position_tables_contradict(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURE / "relative")
    _refused(tmp_path / "run", "ckpt-1200: the numbers of heads disagree: 4 from its "
             "relative position tables, 2 from --num-heads", num_heads=2)


def test_a_number_of_heads_that_does_not_split_the_units(onmt_dir, tmp_path):
    _refused(tmp_path / "run", r"ckpt-400: 16 units do not split into 3 heads", num_heads=3)


def test_a_transformer_variant_with_learned_positions(onmt_dir, tmp_path):
    values = fixture_values("absolute")
    values["model/encoder/position_encoder/embedding"] = np.zeros([129, 16], np.float32)
    variant = write_checkpoint(values, str(tmp_path / "learned" / "ckpt-400"))
    _refused(tmp_path / "run", "has no place for: model/encoder/position_encoder/embedding",
             checkpoint=variant)


def test_a_transformer_variant_without_attention_biases(onmt_dir, tmp_path):
    values = {name: value for name, value in fixture_values("absolute").items()
              if not ("/linear_" in name and name.endswith("/bias"))}
    variant = write_checkpoint(values, str(tmp_path / "no_bias" / "ckpt-400"))
    _refused(tmp_path / "run", "lacks: model/decoder/layers/0/attention/0/layer/"
             "linear_keys/bias", checkpoint=variant)


def test_a_vocabulary_whose_size_is_not_the_embeddings(onmt_dir, tmp_path):
    lines = (onmt_dir / "tgt_vocab.txt").read_text(encoding="utf-8").splitlines()[:150]
    (onmt_dir / "tgt_vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _refused(tmp_path / "run", r"tgt_vocab.txt: 150 tokens, where the target embeddings of "
             r"checkpoint .*ckpt-400 have 201 rows")


@pytest.mark.parametrize("tokenization, match", [
    ({"type": "OpenNMTTokenizer", "params": {"mode": "aggressive"}},
     "data.source_tokenization: the OpenNMTTokenizer tokenizer is not one kerasnmt reproduces"),
    ({"mode": "aggressive", "joiner_annotate": True},
     "data.source_tokenization: the OpenNMTTokenizer tokenizer"),
    ({"type": "CharacterTokenizer"},
     "data.source_tokenization: the CharacterTokenizer tokenizer"),
    ({"type": "SentencePieceTokenizer", "params": {"model": "sp.model", "nbest_size": 5}},
     "data.source_tokenization: kerasnmt cannot reproduce nbest_size 5"),
])
def test_a_tokenizer_kerasnmt_cannot_reproduce(onmt_dir, tmp_path, tokenization, match):
    shutil.copy(FIXTURE / "relative" / "sp.model", onmt_dir / "sp.model")
    config = yaml.safe_load((onmt_dir / "config.yml").read_text(encoding="utf-8"))
    config["data"]["source_tokenization"] = tokenization
    (onmt_dir / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _refused(tmp_path / "run", match)


def test_configuration_values_kerasnmt_does_not_take(onmt_dir, tmp_path):
    config = yaml.safe_load((onmt_dir / "config.yml").read_text(encoding="utf-8"))
    config["params"]["decay_type"] = "RsqrtDecay"
    (onmt_dir / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _refused(tmp_path / "run", r"config.yml: its keys do not make a valid kerasnmt "
             r"configuration: params.decay_type: .*RsqrtDecay")


def test_a_missing_checkpoint_file(onmt_dir, tmp_path):
    (onmt_dir / "checkpoint" / "ckpt-400.data-00000-of-00001").unlink()
    _refused(tmp_path / "run", r"checkpoint .*ckpt-400 cannot be read \(a file is missing")


def test_a_truncated_checkpoint(onmt_dir, tmp_path):
    with open(onmt_dir / "checkpoint" / "ckpt-400.data-00000-of-00001", "r+b") as data:
        data.truncate(1000)
    _refused(tmp_path / "run", r"checkpoint .*ckpt-400 cannot be read .*truncated")


def test_a_checkpoint_that_does_not_exist(onmt_dir, tmp_path):
    _refused(tmp_path / "run", r"checkpoint/ckpt-300: no such checkpoint \(no .*ckpt-300.index",
             checkpoint="checkpoint/ckpt-300")


def test_an_output_directory_that_holds_a_run_without_force(onmt_dir, tmp_path):
    output = tmp_path / "run"
    output.mkdir()
    (output / "run.yml").write_text("model_dir: model\n", encoding="utf-8")
    with pytest.raises(ConversionError, match=r"run already holds a run: pass --force"):
        convert_opennmt_tf("config.yml", output, num_heads=2)
    assert written_files(output) == ([], ["run.yml"])
    assert (output / "run.yml").read_text(encoding="utf-8") == "model_dir: model\n"


def test_the_command_reports_bad_input_on_one_line_with_status_2(onmt_dir, tmp_path, capsys):
    status = main(["convert", "opennmt-tf", "--config", "config.yml",
                   "--output", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert status == 2
    assert error.startswith("kerasnmt convert: error: checkpoint ") and error.count("\n") == 1
    assert "pass --num-heads N" in error
    assert written_files(tmp_path / "run") == ([], None)



def test_a_toolkit_without_a_converter_is_refused_by_name_with_nothing_written(tmp_path):
    output = tmp_path / "run"
    with pytest.raises(ValueError, match="no converter for 'marian'; one of opennmt-tf"):
        runner.convert("marian", str(tmp_path / "config.yml"), str(output))
    assert not output.exists()
