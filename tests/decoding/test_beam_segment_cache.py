"""`BeamSegmentCache` driven by `RelativeMultiHeadAttention` decoding steps, as a beam search
drives it: each row must get the full causal attention over its own hypothesis' inputs."""

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding.beam_segment_cache import BeamSegmentCache
from kerasnmt.layers import RelativeMultiHeadAttention, TransformerDecoder

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(14)


def _grow_hypotheses_from_random_parents(layer, step_fn, cache, inputs, rng):
    """Decodes `inputs` `[steps, batch * beam, 1, features]` as a beam search does: before
    each step but the first, every row continues the hypothesis of a random parent of its
    example (only the cache's history is reordered). Each row's output must equal the full
    causal attention over its own hypothesis' inputs."""
    batch, beam, steps = cache.history.shape
    hypotheses = [[] for _ in range(batch * beam)]
    for step in range(steps):
        if step:
            rows = np.arange(batch * beam) // beam * beam + rng.integers(0, beam, batch * beam)
            hypotheses = [list(hypotheses[row]) for row in rows]
            history = tf.gather(tf.reshape(cache.history, [batch * beam, steps]), rows)
            cache = cache._replace(history=tf.reshape(history, [batch, beam, steps]))
        for row, hypothesis in enumerate(hypotheses):
            hypothesis.append(inputs[step, row, 0])
        outputs, cache = step_fn(inputs[step], cache, tf.constant(step))
        for row, hypothesis in enumerate(hypotheses):
            full = layer(np.array(hypothesis)[np.newaxis], use_causal_mask=True)
            np.testing.assert_allclose(outputs[row, 0], full[0, -1], atol=1e-5)


@pytest.mark.parametrize("steps, segment_sizes", [(5, [6]), (40, [17, 17, 9])])
def test_beam_cache_reads_each_hypothesis_through_its_history(steps, segment_sizes):
    """Hypotheses change rows at every step (random parents inside each example), as in a
    beam search: only the history is reordered, never the keys and values, and each row
    still gets the full causal attention over its own hypothesis' inputs, also once its
    positions span the cache's segments [0, 16), [16, 32) and [32, 40) (each with its
    spare entry)."""
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=2)
    batch, beam = 2, 3
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=[steps, batch * beam, 1, 6]).astype(np.float32)
    cache = BeamSegmentCache.zeros(batch, steps, beam, num_heads=2, key_dim=3)
    assert [segment.shape for segment in cache.keys] == [
        (batch, 2, beam, size, 3) for size in segment_sizes
    ]
    step_fn = tf.function(layer.call_with_cache, jit_compile=True)
    _grow_hypotheses_from_random_parents(layer, step_fn, cache, inputs, rng)


def test_a_step_known_when_tracing_reads_only_the_segments_it_reaches():
    """At a step known when tracing (given as a number) the later segments of a
    beam cache are left out of the graph, where a step given when the graph runs reads
    each of them under a `tf.cond`; the outputs are the same."""
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=2)
    # Segments [0, 16), [16, 32), [32, 40).
    cache = BeamSegmentCache.zeros(2, 40, beam_size=3, num_heads=2, key_dim=3)
    query = np.random.default_rng(4).normal(size=[6, 1, 6]).astype(np.float32)
    known = tf.function(lambda q: layer.call_with_cache(q, cache, tf.constant(0)))
    given = tf.function(lambda q, s: layer.call_with_cache(q, cache, s))

    def conds(function, *args):
        operations = function.get_concrete_function(*args).graph.get_operations()
        return sum(op.type in ("If", "StatelessIf") for op in operations)

    assert conds(known, query) == 0
    assert conds(given, query, tf.constant(0)) == 4  # 2 later segments: logits, values
    outputs, new_cache = known(query)
    expected, expected_cache = given(query, tf.constant(0))
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    for key in ("keys", "values"):
        for segment, expected_segment in zip(getattr(new_cache, key),
                                             getattr(expected_cache, key)):
            np.testing.assert_array_equal(segment, expected_segment)


def test_a_write_lands_in_the_segment_of_its_step_and_in_the_others_spare_entries():
    """Segments [0, 16), [16, 32), [32, 40), each with a spare entry at key position 2**30;
    a write at step 17 fills slot k of position 1 of the second segment for hypothesis k,
    the spare entries of the other two, and slot k at position 17 of each history."""
    cache = BeamSegmentCache.zeros(1, 40, beam_size=2, num_heads=1, key_dim=1)
    spare = 2**30
    assert cache.key_positions().numpy().tolist() == (
        list(range(16)) + [spare] + list(range(16, 32)) + [spare] + list(range(32, 40))
        + [spare])
    new = tf.constant([5.0, 7.0])[:, tf.newaxis, tf.newaxis, tf.newaxis]  # [2 rows, 1, 1, 1]
    written = cache.write(new, 2 * new, step=17)
    for segments, scale in ((written.keys, 1), (written.values, 2)):
        entries = [segment.numpy()[0, 0, :, :, 0] for segment in segments]  # [slot, P + 1]
        expected = [np.zeros([2, 17]), np.zeros([2, 17]), np.zeros([2, 9])]
        expected[0][:, 16] = expected[1][:, 1] = expected[2][:, 8] = [5 * scale, 7 * scale]
        for entry, expected_entry in zip(entries, expected):
            np.testing.assert_array_equal(entry, expected_entry)
    history = np.zeros([1, 2, 40], np.int32)
    history[0, 1, 17] = 1
    np.testing.assert_array_equal(written.history, history)


def test_for_decoder_gives_one_cache_per_layer_in_its_heads_and_dtype():
    decoder = TransformerDecoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 dtype="mixed_bfloat16")
    caches = BeamSegmentCache.for_decoder(decoder, batch_size=3, max_length=5, beam_size=4)
    assert len(caches) == 2
    for cache in caches:
        assert [(s.shape, s.dtype) for s in cache.keys] == [((3, 2, 4, 6, 4), tf.bfloat16)]
        assert cache.history.shape == (3, 4, 5)
