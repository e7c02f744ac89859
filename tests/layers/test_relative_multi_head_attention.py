import math

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding.beam_segment_cache import BeamSegmentCache
from kerasnmt.layers import RelativeMultiHeadAttention
from tests.layer_test_helper import run_layer_test

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(11)


def _dense(layer, x):
    return x @ layer.kernel.numpy() + layer.bias.numpy()


def loop_attention(layer, query, value=None, key_mask=None, causal=False):
    """The formulas of Shaw et al. (2018) with OpenNMT-tf's scaling, one scalar at a time."""
    value = query if value is None else value
    batch, length, _ = query.shape
    memory_length = value.shape[1]
    heads, depth, k = layer.num_heads, layer.key_dim, layer.maximum_relative_position
    q = _dense(layer.query_dense, query).reshape(batch, length, heads, depth)
    keys = _dense(layer.key_dense, value).reshape(batch, memory_length, heads, depth)
    values = _dense(layer.value_dense, value).reshape(batch, memory_length, heads, depth)
    if k is not None:
        table_k = layer.relative_position_keys.numpy()
        table_v = layer.relative_position_values.numpy()
    heads_out = np.zeros([batch, length, heads, depth])
    weights = np.zeros([batch, heads, length, memory_length])
    for b in range(batch):
        for h in range(heads):
            for i in range(length):
                logits = np.full([memory_length], -np.inf)
                for j in range(memory_length):
                    if key_mask is not None and not key_mask[b][j]:
                        continue
                    if causal and j > i:
                        continue
                    key = keys[b, j, h].copy()
                    if k is not None:
                        key += table_k[min(max(j - i, -k), k) + k]
                    logits[j] = sum(q[b, i, h, d] * key[d] for d in range(depth)) / math.sqrt(depth)
                probabilities = np.exp(logits - logits.max())
                probabilities /= probabilities.sum()
                weights[b, h, i] = probabilities
                for j in range(memory_length):
                    item = values[b, j, h].copy()
                    if k is not None:
                        item += table_v[min(max(j - i, -k), k) + k]
                    heads_out[b, i, h] += probabilities[j] * item
    outputs = _dense(layer.output_dense, heads_out.reshape(batch, length, heads * depth))
    return outputs, weights


def _random(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


@pytest.mark.parametrize("causal", [False, True])
def test_relative_self_attention_matches_loop_formulas(causal):
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=2)
    query = _random([2, 6, 5], 0)
    key_mask = np.array([[1] * 6, [1] * 4 + [0] * 2], dtype=bool)
    layer(query)  # build
    # Non-trivial relative tables, so that a missing or transposed term shows.
    layer.relative_position_keys.assign(_random([5, 3], 1))
    layer.relative_position_values.assign(_random([5, 3], 2))
    outputs, weights = layer(
        query, attention_mask=key_mask, use_causal_mask=causal, return_attention_scores=True
    )
    expected_outputs, expected_weights = loop_attention(layer, query, None, key_mask, causal)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    np.testing.assert_allclose(outputs, expected_outputs, atol=1e-5)


def test_relative_terms_change_the_output():
    """Shifting a table changes the output: the relative terms are really used."""
    layer = RelativeMultiHeadAttention(num_heads=1, key_dim=2, maximum_relative_position=1)
    query = _random([1, 4, 2], 3)
    before = layer(query).numpy()
    layer.relative_position_values.assign(layer.relative_position_values + 1.0)
    assert not np.allclose(before, layer(query).numpy())


def test_cross_attention_matches_loop_formulas():
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=2, maximum_relative_position=None)
    query, value = _random([2, 3, 4], 4), _random([2, 5, 4], 5)
    key_mask = np.array([[1] * 5, [1] * 2 + [0] * 3], dtype=bool)
    outputs, weights = layer(query, value, attention_mask=key_mask, return_attention_scores=True)
    expected_outputs, expected_weights = loop_attention(layer, query, value, key_mask)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    np.testing.assert_allclose(outputs, expected_outputs, atol=1e-5)
    # Padding positions get exactly zero weight.
    assert np.all(weights.numpy()[1, :, :, 2:] == 0)


def test_incremental_self_attention_equals_full_causal_attention():
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=2)
    query = _random([3, 7, 6], 6)
    full = layer(query, use_causal_mask=True).numpy()
    step_fn = tf.function(layer.call_with_cache, jit_compile=True)
    cache = BeamSegmentCache.zeros(3, 9, beam_size=1, num_heads=2, key_dim=3)
    for step in range(7):
        outputs, cache = step_fn(query[:, step : step + 1], cache, tf.constant(step))
        np.testing.assert_allclose(outputs[:, 0], full[:, step], atol=1e-5)
    # The cache [B, H, 1 slot, L + 1 spare, D] holds the keys of the 7 decoded positions
    # and zeros after them.
    (keys,) = cache.keys
    assert keys.shape == (3, 2, 1, 10, 3)
    assert np.all(keys.numpy()[:, :, :, 7:] == 0)
    assert np.all(np.abs(keys.numpy()[:, :, 0, :7]).sum(axis=(1, 3)) > 0)


def test_memory_cache_equals_cross_attention():
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=2)
    query, value = _random([2, 1, 4], 7), _random([2, 5, 4], 8)
    mask = np.array([[1] * 5, [1] * 3 + [0] * 2], dtype=bool)
    expected, expected_weights = layer(query, value, attention_mask=mask,
                                       return_attention_scores=True)
    outputs, weights = layer.call_with_memory(query, layer.project_memory(value),
                                              attention_mask=mask)
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)


@pytest.mark.parametrize("kind", ["self-attention cache", "beam cache", "memory cache"])
def test_one_position_per_row_is_a_query_of_length_one(kind):
    """Decoding steps pass `[B, D]` queries, one position per row: the outputs are those
    of the `[B, 1, D]` queries without their length axis, and so are the new caches and
    the attention weights, step after step."""
    memory = kind == "memory cache"
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3,
                                       maximum_relative_position=None if memory else 2)
    inputs = _random([5, 4, 6], 9)  # 5 steps of 4 rows
    if memory:
        memory_values = _random([2, 7, 6], 10)
        cache = layer.project_memory(memory_values)  # 2 rows an example
    elif kind == "beam cache":
        cache = BeamSegmentCache.zeros(2, 20, beam_size=2, num_heads=2, key_dim=3)
    else:
        cache = BeamSegmentCache.zeros(4, 20, beam_size=1, num_heads=2, key_dim=3)

    def run(query, cache, step):
        if memory:  # (outputs, weights)
            return layer.call_with_memory(query, cache)
        return layer.call_with_cache(query, cache, tf.constant(step))  # (outputs, cache)

    for step in range(5):
        expected = run(inputs[step][:, np.newaxis], cache, step)
        outputs = run(inputs[step], cache, step)
        assert outputs[0].shape == (4, 6)
        np.testing.assert_allclose(outputs[0], expected[0][:, 0], atol=1e-6)
        tf.nest.map_structure(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6),
                              outputs[1:], expected[1:])
        if memory:  # the weights of each row over its example's memory
            _, weights = layer(inputs[step][:, np.newaxis], np.repeat(memory_values, 2, axis=0),
                               return_attention_scores=True)
            np.testing.assert_allclose(outputs[1], weights, atol=1e-6)
        else:
            cache = expected[1]


def test_one_position_per_row_needs_a_cache():
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3)
    with pytest.raises(ValueError, match=r"shape \[B, D\] \(one position per row\) needs a cache"):
        layer(_random([2, 6], 0))


def test_relative_positions_refuse_cross_attention():
    layer = RelativeMultiHeadAttention(num_heads=1, key_dim=2, maximum_relative_position=2)
    with pytest.raises(ValueError, match="only apply to self-attention"):
        layer(_random([1, 2, 2], 0), _random([1, 3, 2], 1))
    memory = RelativeMultiHeadAttention(num_heads=1, key_dim=2).project_memory(
        _random([1, 3, 2], 1))
    with pytest.raises(ValueError, match="only apply to self-attention"):
        layer.call_with_memory(_random([1, 2], 0), memory)


def test_run_layer_test_self_attention():
    run_layer_test(
        RelativeMultiHeadAttention,
        dict(num_heads=2, key_dim=2, maximum_relative_position=3, dropout=0.1),
        _random([2, 4, 4], 9),
        call_kwargs=dict(use_causal_mask=True),
        atol=1e-5,
    )


def test_run_layer_test_cross_attention():
    run_layer_test(
        RelativeMultiHeadAttention,
        dict(num_heads=2, key_dim=3),
        (_random([2, 3, 4], 10), _random([2, 5, 4], 11)),
        call_kwargs=dict(return_attention_scores=True),
        atol=1e-5,
    )


@pytest.mark.parametrize("beam, length", [(1, 6), (2, 6), (2, 21)])
def test_each_example_of_the_cache_at_its_own_step(beam, length):
    """Examples that start decoding at different steps (`step` `[B]`, as a decoding slot
    that takes a new sentence restarts at 0 over its previous entries): each row gets the
    full causal attention over its own example's inputs since its start, with one
    hypothesis per example and with beams (the hypotheses of an example share its step; with 21
    steps, the first example reads the second segment of the cache while the last one
    restarts in the first, over its older example's entries in both)."""
    layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=2)
    batch = 3
    rng = np.random.default_rng(1)
    # The step at which each example restarts from 0 (the last one, with 21 steps, after
    # its older example has written positions 16 and 17).
    starts = np.array([0, 2, 3 if length < 20 else 18])
    inputs = rng.normal(size=[length, batch * beam, 1, 6]).astype(np.float32)
    cache = BeamSegmentCache.zeros(batch, length, beam, num_heads=2, key_dim=3)
    step_fn = tf.function(layer.call_with_cache, jit_compile=True)
    for t in range(length):
        steps = np.where(t >= starts, t - starts, t)  # before its start: an older example
        outputs, cache = step_fn(inputs[t], cache, tf.constant(steps, tf.int32))
        for row in range(batch * beam):
            first = starts[row // beam] if t >= starts[row // beam] else 0
            own_inputs = inputs[first:t + 1, row, 0][np.newaxis]
            full = layer(own_inputs, use_causal_mask=True)
            np.testing.assert_allclose(outputs[row, 0], full[0, -1], atol=1e-5)
