"""How an OpenNMT-tf run configuration's keys become a kerasnmt configuration's."""

import json

import pytest
import yaml

from kerasnmt.converters import ConversionError
from kerasnmt.converters.opennmt_tf_config import carried_keys, tokenizer_models
from tests.converters.opennmt_tf_fixtures import FIXTURE


def test_keys_carried_renamed_defaulted_and_left_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.en").write_text("a\n", encoding="utf-8")
    sections, left_out = carried_keys({
        "model_dir": "run",
        "data": {"train_features_file": "train.en", "train_labels_file": "train.de",
                 "source_embedding": {"dropout": 0.1}},
        "params": {"optimizer": "LazyAdam", "maximum_decoding_length": 80,
                   "decoding_subword_token": "￭"},
        "eval": {"external_evaluators": ["BLEU", "ROUGE"]},
        "infer": {"n_best": 2},
        "score": {"batch_size": 8},
    }, "onmt.yml")
    assert sections["data"] == {"train_features_file": str(tmp_path / "train.en")}
    assert sections["params"] == {
        "optimizer": "Adam", "decay_type": None, "label_smoothing": 0.0, "beam_width": 1,
        "maximum_decoding_length": 80, "decoding_length_ratio": 0.0,
        "decoding_length_offset": 80, "num_hypotheses": 2}
    assert sections["train"]["batch_type"] == "examples"
    assert sections["train"]["sample_buffer_size"] == 500000
    assert sections["eval"] == {"scorers": ["bleu"]}
    assert sections["infer"] == {"batch_size": 16, "n_best": 2}
    assert left_out == [
        "score (kerasnmt does not have it)",
        "data.train_labels_file (no such file from here)",
        "data.source_embedding (kerasnmt does not have it)",
        "params.decoding_subword_token (kerasnmt does not have it)",
        "eval.external_evaluators: ROUGE (kerasnmt scores bleu and chrf)",
    ]


def test_tokenizations_read_as_onmt_main_reads_them(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURE / "relative")
    sentencepiece = {"type": "SentencePieceTokenizer",
                     "params": {"model": "sp.model", "nbest_size": -1, "alpha": 0.1}}
    (tmp_path / "tok.yml").write_text(yaml.safe_dump(sentencepiece), encoding="utf-8")
    models, alpha = tokenizer_models({"data": {
        "source_tokenization": str(tmp_path / "tok.yml"),
        "target_tokenization": json.dumps(sentencepiece),
    }}, "onmt.yml")
    model = str(FIXTURE / "relative" / "sp.model")
    assert (models, alpha) == ({"source": model, "target": model}, 0.1)
    models, alpha = tokenizer_models({"data": {
        "source_tokenization": {"type": "SpaceTokenizer"}}}, "onmt.yml")
    assert (models, alpha) == ({"source": None, "target": None}, None)


def test_a_tokenization_that_is_neither_a_file_nor_json(monkeypatch):
    monkeypatch.chdir(FIXTURE / "relative")
    with pytest.raises(ConversionError, match=r"onmt.yml: data.target_tokenization: "
                       r"missing.yml is neither a file nor a JSON"):
        tokenizer_models({"data": {"target_tokenization": "missing.yml"}}, "onmt.yml")
