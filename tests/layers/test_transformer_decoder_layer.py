import numpy as np
import tensorflow as tf

from kerasnmt.decoding import BeamSegmentCache
from kerasnmt.layers import TransformerDecoderLayer
from tests.layer_test_helper import run_layer_test

INIT = dict(num_units=8, num_heads=2, ffn_inner_dim=16, maximum_relative_position=3)


def _inputs():
    rng = np.random.default_rng(1)
    return (
        rng.normal(size=[2, 4, 8]).astype("float32"),
        rng.normal(size=[2, 5, 8]).astype("float32"),
        np.array([[1] * 5, [1] * 2 + [0] * 3], dtype=bool),
    )


def test_run_layer_test():
    run_layer_test(TransformerDecoderLayer, dict(INIT, pre_norm=False), _inputs(), atol=1e-5)


def test_attention_shape_and_masked_source():
    layer = TransformerDecoderLayer(**INIT)
    outputs, attention = layer(*_inputs())
    assert outputs.shape == (2, 4, 8) and attention.shape == (2, 2, 4, 5)
    np.testing.assert_allclose(tf.reduce_sum(attention, -1), np.ones([2, 2, 4]), atol=1e-6)
    assert np.all(attention.numpy()[1, :, :, 2:] == 0)


def test_cached_steps_equal_full_call():
    layer = TransformerDecoderLayer(**INIT)
    targets, encoder_outputs, mask = _inputs()
    full_outputs, full_attention = layer(targets, encoder_outputs, mask)
    cache = BeamSegmentCache.zeros(2, 6, beam_size=1, num_heads=2, key_dim=4)
    memory = layer.project_memory(encoder_outputs)
    for step in range(4):
        outputs, attention, cache = layer.decode_step(
            targets[:, step : step + 1], step, cache, memory, encoder_padding_mask=mask
        )
        np.testing.assert_allclose(outputs[:, 0], full_outputs[:, step], atol=1e-5)
        np.testing.assert_allclose(attention[:, :, 0], full_attention[:, :, step], atol=1e-6)
