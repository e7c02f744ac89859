import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding import BeamSegmentCache
from kerasnmt.layers import TransformerDecoder, TransformerEncoder
from tests.layer_test_helper import run_layer_test


def _inputs():
    rng = np.random.default_rng(3)
    return (
        rng.normal(size=[3, 6, 8]).astype("float32"),
        rng.normal(size=[3, 5, 8]).astype("float32"),
        np.array([[1] * 5, [1] * 3 + [0] * 2, [1] + [0] * 4], dtype=bool),
    )


def test_run_layer_test():
    run_layer_test(
        TransformerDecoder,
        dict(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16, maximum_relative_position=3),
        _inputs(),
        atol=1e-5,
    )


def test_returns_first_head_of_last_layer_cross_attention():
    decoder = TransformerDecoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16)
    targets, encoder_outputs, mask = _inputs()
    _, attention = decoder(targets, encoder_outputs, mask)
    y = decoder.position_encoding(targets * np.sqrt(8.0))
    y, _ = decoder.transformer_layers[0](y, encoder_outputs, mask)
    _, last_layer_attention = decoder.transformer_layers[1](y, encoder_outputs, mask)
    np.testing.assert_allclose(attention, last_layer_attention[:, 0], atol=1e-6)


@pytest.mark.parametrize("maximum_relative_position,pre_norm", [(3, True), (None, False)])
def test_cached_decoding_equals_teacher_forcing(maximum_relative_position, pre_norm):
    """Step-by-step decoding (XLA-compiled, fixed shapes) gives the teacher-forced outputs."""
    encoder = TransformerEncoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 maximum_relative_position=maximum_relative_position, pre_norm=pre_norm)
    decoder = TransformerDecoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 maximum_relative_position=maximum_relative_position, pre_norm=pre_norm)
    targets, sources, mask = _inputs()
    encoder_outputs = encoder(sources, mask)
    full_outputs, full_attention = decoder(targets, encoder_outputs, mask)
    decode_step = tf.function(decoder.decode_step, jit_compile=True)
    caches = BeamSegmentCache.for_decoder(decoder, batch_size=3, max_length=9)
    memories = decoder.project_memory(encoder_outputs)
    for step in range(targets.shape[1]):
        outputs, attention, caches = decode_step(targets[:, step], tf.constant(step), caches,
                                                 memories, mask)
        np.testing.assert_allclose(outputs, full_outputs[:, step], atol=1e-5)
        np.testing.assert_allclose(attention, full_attention[:, step], atol=1e-5)


def test_cache_is_batch_major_and_reorderable():
    """Reordering the caches and memories with tf.gather on axis 0 reorders the next step's
    outputs."""
    decoder = TransformerDecoder(num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 maximum_relative_position=3)
    targets, encoder_outputs, mask = _inputs()
    caches = BeamSegmentCache.for_decoder(decoder, batch_size=3, max_length=4)
    memories = decoder.project_memory(encoder_outputs)
    for tensor in tf.nest.flatten((caches, memories)):
        assert tensor.shape[0] == 3
    _, _, caches = decoder.decode_step(targets[:, 0], 0, caches, memories, mask)
    order = [2, 0, 1]
    reordered = tf.nest.map_structure(lambda t: tf.gather(t, order), (caches, memories))
    expected, _, _ = decoder.decode_step(targets[:, 1], 1, caches, memories, mask)
    outputs, _, _ = decoder.decode_step(tf.gather(targets[:, 1], order), 1, *reordered,
                                        tf.gather(mask, order))
    np.testing.assert_allclose(outputs, tf.gather(expected, order), atol=1e-6)


def test_tensorflow_checkpoint_holds_every_layer(tmp_path):
    """tf.train.Checkpoint reaches the weights of every layer of the stack."""
    arguments = dict(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
                     maximum_relative_position=3)
    saved, restored = TransformerDecoder(**arguments), TransformerDecoder(**arguments)
    saved.build((None, None, 8))
    restored.build((None, None, 8))
    path = tf.train.Checkpoint(decoder=saved).save(str(tmp_path / "ckpt"))
    tf.train.Checkpoint(decoder=restored).restore(path).assert_consumed()
    assert len(saved.weights) == len(restored.weights) > 0
    for a, b in zip(saved.weights, restored.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
