"""The TransformerBackbone: the network a Translator holds, its config and its defaults."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.config import default_config
from kerasnmt.models import TransformerBackbone, Translator
from kerasnmt.models.transformer_backbone import ARCHITECTURE_ARGUMENTS, ARCHITECTURE_DEFAULTS
from tests.models.translator_fixtures import preprocessor, tiny_translator

TINY = dict(num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16)
BATCH = {"source_ids": tf.constant([[3, 4, 5], [6, 0, 0]]),
         "source_length": tf.constant([3, 1]),
         "target_ids": tf.constant([[1, 7, 8], [1, 9, 0]])}


def test_the_configuration_and_the_python_api_share_each_default():
    """`model` keys are the backbone's arguments with its defaults, and both default to
    the card's relative positions (20), not to sinusoidal ones."""
    model = default_config()["model"]
    assert set(model) <= set(ARCHITECTURE_ARGUMENTS)
    assert model == {key: ARCHITECTURE_DEFAULTS[key] for key in model}
    assert model["maximum_relative_position"] == 20
    translator = Translator(preprocessor(), **TINY)
    attention = translator.encoder.layer_0.self_attention
    assert attention.maximum_relative_position == 20
    assert attention.relative_position_keys.shape[0] == 2 * 20 + 1


def test_a_translator_runs_the_backbone_it_is_given():
    keras.utils.set_random_seed(0)
    vocabulary_sizes = (len(preprocessor().source_vocabulary) + 1,
                        len(preprocessor().target_vocabulary) + 1)
    backbone = TransformerBackbone(*vocabulary_sizes, maximum_relative_position=4, **TINY)
    translator = Translator(preprocessor(), backbone=backbone)
    assert translator.backbone is backbone and translator.encoder is backbone.encoder
    np.testing.assert_array_equal(translator(BATCH)["logits"], backbone(BATCH)["logits"])
    with pytest.raises(ValueError, match=r"give a backbone or its architecture arguments, not "
                                         r"both \(got num_units\)"):
        Translator(preprocessor(), backbone=backbone, num_units=8)
    smaller = TransformerBackbone(5, 5, **TINY)
    with pytest.raises(ValueError, match=r"vocabulary sizes \(5, 5\) are not the "
                                         r"preprocessor's \(12, 12\)"):
        Translator(preprocessor(), backbone=smaller)


def test_the_backbone_config_rebuilds_it_and_the_translator_config_holds_it():
    translator = tiny_translator(share_embeddings="target", source_eos=True)
    backbone = translator.backbone
    rebuilt = TransformerBackbone.from_config(backbone.get_config())
    assert rebuilt.get_config() == backbone.get_config()
    rebuilt.set_weights(backbone.get_weights())
    np.testing.assert_allclose(rebuilt(BATCH)["logits"], backbone(BATCH)["logits"], atol=1e-6)

    copy = Translator.from_config(translator.get_config())
    assert copy.backbone.get_config() == backbone.get_config()
    assert copy.label_smoothing == translator.label_smoothing


def test_the_translator_keeps_the_layout_of_its_files(tmp_path):
    """Checkpoints and `.keras` files name the network's weights as kerasnmt 0.1.0 did:
    by the translator's own attributes, not under a `backbone` (tests/test_written_by_0_1_0.py
    loads files of that version)."""
    translator = tiny_translator(share_embeddings="target")
    path = tf.train.Checkpoint(model=translator).write(str(tmp_path / "ckpt"))
    names = {name for name, _ in tf.train.list_variables(path)}
    assert "model/output_bias/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert any(name.startswith("model/encoder/") for name in names)
    assert not any("backbone" in name for name in names)


def test_a_keras_hub_backbone_built_first_leaves_the_translator_constructible():
    """Building any keras-hub backbone rebases keras-hub's `Backbone` class onto Keras'
    `Functional`; the TransformerBackbone, a subclassed `keras.Model`, is not affected."""
    import keras_hub

    keras_hub.models.GPT2Backbone(vocabulary_size=10, num_layers=1, num_heads=1,
                                  hidden_dim=4, intermediate_dim=4, max_sequence_length=8)
    translator = tiny_translator()
    assert translator(BATCH)["logits"].shape == (2, 3, 12)


def test_layer_norm_epsilon_reaches_every_layer_normalization_and_its_config():
    def epsilons(backbone):
        return {layer.epsilon for layer in backbone._flatten_layers()
                if isinstance(layer, keras.layers.LayerNormalization)}

    options = dict(num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16)
    assert epsilons(TransformerBackbone(6, 6, **options)) == {1e-6}
    backbone = TransformerBackbone(6, 6, layer_norm_epsilon=1e-3, **options)
    assert epsilons(backbone) == {1e-3}
    assert epsilons(TransformerBackbone.from_config(backbone.get_config())) == {1e-3}
    # Layer normalization by hand: (x - mean) / sqrt(variance + epsilon), gamma 1, beta 0.
    row = np.array([[0.0, 0.02, 0.0, 0.02, 0.0, 0.02, 0.0, 0.02]], np.float32)
    expected = (row - 0.01) / np.sqrt(0.01**2 + 1e-3)
    np.testing.assert_allclose(backbone.encoder.output_norm(row), expected, rtol=1e-5)
