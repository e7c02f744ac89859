"""The committed OpenNMT-tf fixture (`tests/fixtures/opennmt_tf/`) is what its README says.

Other tests compare kerasnmt with OpenNMT-tf's own outputs on these checkpoints; this one
checks, without OpenNMT-tf, that each checkpoint is a TensorFlow 2.12 checkpoint that
TensorFlow 2.21 reads, that its variables are the ones the model definition (`model.py`,
read as text) and the run configuration (`config.yml`, vocabularies) describe, and that
the recorded outputs belong to the held-out sentences.
"""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "opennmt_tf"
MODELS = ("relative", "absolute")
VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"


def _transformer_arguments(model_file):
    """The keyword arguments of the `opennmt.models.Transformer(...)` call in `model.py`
    (literals, and `EmbeddingsSharingLevel.X` as `"X"`)."""
    calls = [
        node for node in ast.walk(ast.parse(model_file.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "opennmt.models.Transformer"
    ]
    assert len(calls) == 1
    arguments = {}
    for keyword in calls[0].keywords:
        if isinstance(keyword.value, ast.Attribute):
            arguments[keyword.arg] = keyword.value.attr
        else:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
    return arguments


def _vocabulary_size(path):
    """OpenNMT-tf's vocabulary size: the file's tokens and one out-of-vocabulary id."""
    tokens = path.read_text(encoding="utf-8").splitlines()
    assert tokens[:3] == ["<blank>", "<s>", "</s>"]
    assert len(set(tokens)) == len(tokens)
    return len(tokens) + 1


def _load(model):
    directory = FIXTURE / model
    config = yaml.safe_load((directory / "config.yml").read_text(encoding="utf-8"))
    path = tf.train.latest_checkpoint(str(directory / config["model_dir"]))
    assert path is not None
    reader = tf.train.load_checkpoint(path)
    shapes = {
        name[: -len(VALUE)]: shape
        for name, shape in reader.get_variable_to_shape_map().items() if name.endswith(VALUE)
    }
    return directory, config, path, reader, shapes


@pytest.mark.parametrize("model", MODELS)
def test_checkpoint_variables_match_the_model_definition_and_vocabularies(model):
    directory, config, path, reader, shapes = _load(model)
    arguments = _transformer_arguments(directory / "model.py")
    units, ffn = arguments["num_units"], arguments["ffn_inner_dim"]
    depth = units // arguments["num_heads"]
    weights = {name: shape for name, shape in shapes.items()
               if name.startswith("model/") and "OPTIMIZER_SLOT" not in name}
    # The step in the file name is the optimizer's.
    step = int(re.search(r"ckpt-(\d+)$", path).group(1))
    assert step == config["train"]["max_step"]
    assert reader.get_tensor("optimizer/iter" + VALUE) == step

    expected = {}

    def layer_norm(prefix):
        expected[f"{prefix}/gamma"] = [units]
        expected[f"{prefix}/beta"] = [units]

    def attention(prefix, relative):
        for projection in ("queries", "keys", "values", "output"):
            expected[f"{prefix}/layer/linear_{projection}/kernel"] = [units, units]
            expected[f"{prefix}/layer/linear_{projection}/bias"] = [units]
        if relative:
            for table in ("keys", "values"):
                size = 2 * arguments["maximum_relative_position"] + 1
                expected[f"{prefix}/layer/relative_position_{table}"] = [size, depth]
        layer_norm(f"{prefix}/{'input' if pre_norm else 'output'}_layer_norm")

    def feed_forward(prefix):
        expected[f"{prefix}/layer/inner/kernel"] = [units, ffn]
        expected[f"{prefix}/layer/inner/bias"] = [ffn]
        expected[f"{prefix}/layer/outer/kernel"] = [ffn, units]
        expected[f"{prefix}/layer/outer/bias"] = [units]
        layer_norm(f"{prefix}/{'input' if pre_norm else 'output'}_layer_norm")

    pre_norm = arguments["pre_norm"]
    relative = arguments.get("maximum_relative_position") is not None
    for i in range(arguments["num_layers"]):
        attention(f"model/encoder/layers/{i}/self_attention", relative)
        feed_forward(f"model/encoder/layers/{i}/ffn")
        attention(f"model/decoder/layers/{i}/self_attention", relative)
        attention(f"model/decoder/layers/{i}/attention/0", relative=False)
        feed_forward(f"model/decoder/layers/{i}/ffn")
    if pre_norm:
        layer_norm("model/encoder/layer_norm")
        layer_norm("model/decoder/layer_norm")

    source_size = _vocabulary_size(directory / config["data"]["source_vocabulary"])
    target_size = _vocabulary_size(directory / config["data"]["target_vocabulary"])
    inputters = "model/examples_inputter"
    expected[f"{inputters}/features_inputter/embedding"] = [source_size, units]
    # Shared embeddings: ALL keeps one matrix for the source, the target and the output
    # layer; TARGET one for the target and the output layer.
    sharing = arguments.get("share_embeddings", "NONE")
    if sharing == "ALL":
        assert source_size == target_size
    else:
        expected[f"{inputters}/labels_inputter/embedding"] = [target_size, units]
    if sharing not in ("ALL", "TARGET"):
        expected["model/decoder/output_layer/kernel"] = [units, target_size]
    expected["model/decoder/output_layer/bias"] = [target_size]
    assert weights == expected

    # Adam's two slots for every weight, of its shape.
    slots = {name: shape for name, shape in shapes.items() if "OPTIMIZER_SLOT" in name}
    assert slots == {
        f"{name}/.OPTIMIZER_SLOT/optimizer/{slot}": shape
        for name, shape in expected.items() for slot in ("m", "v")
    }
    for name in expected:
        assert np.all(np.isfinite(reader.get_tensor(name + VALUE)))


@pytest.mark.parametrize("model", MODELS)
def test_recorded_outputs_are_those_of_the_held_out_sentences(model):
    directory = FIXTURE / model
    config = yaml.safe_load((directory / "config.yml").read_text(encoding="utf-8"))
    sources = (directory / "heldout.en").read_text(encoding="utf-8").splitlines()
    references = (directory / "heldout.de").read_text(encoding="utf-8").splitlines()
    assert len(sources) == len(references) == 20
    sentencepiece = "target_tokenization" in config["data"]
    scores = (directory / "score.txt").read_text(encoding="utf-8").splitlines()
    assert len(scores) == len(references)
    for line, reference in zip(scores, references):
        total, tokens, token_scores = line.split(" ||| ")
        tokens, token_scores = tokens.split(" "), [float(x) for x in token_scores.split(" ")]
        # The scored tokens are the reference's (SentencePiece pieces, or words).
        if sentencepiece:
            assert "".join(tokens).replace("\u2581", " ").strip() == reference
        else:
            assert tokens == reference.split()
        # One cross-entropy a token; the sentence's also counts </s>.
        assert len(token_scores) == len(tokens)
        assert all(score > 0 for score in token_scores)
        assert float(total) > sum(token_scores) - 1e-4 * len(tokens)
    for name in ("greedy.txt", "beam4.txt"):
        lines = (directory / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(sources)
        for line in lines:
            log_probability, translation = line.split(" ||| ")
            assert float(log_probability) < 0 and translation.strip()
    # The beam search found other translations than the greedy search for some sentences.
    greedy = (directory / "greedy.txt").read_text(encoding="utf-8").splitlines()
    beam = (directory / "beam4.txt").read_text(encoding="utf-8").splitlines()
    assert any(g.split(" ||| ")[1] != b.split(" ||| ")[1] for g, b in zip(greedy, beam))
