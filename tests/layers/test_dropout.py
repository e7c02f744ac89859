import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.layers import Dropout
from kerasnmt.layers.dropout import keep_mask


def philox_words(shape, seed):
    """The 32-bit Philox numbers `keep_mask` draws, as NumPy uint32."""
    return tf.random.stateless_uniform(shape, seed, minval=None, maxval=None,
                                       dtype=tf.uint32, alg="philox").numpy()


@pytest.mark.parametrize("size", [6, 7])
def test_keep_mask_reads_two_16_bit_numbers_from_each_draw(size):
    seed = tf.constant([5, 9])
    threshold = round(0.3 * 65536)
    words = philox_words([3, (size + 1) // 2], seed)
    low, high = words & 0xFFFF, words >> 16
    expected = np.concatenate([low >= threshold, high >= threshold], axis=1)[:, :size]
    mask = keep_mask(tf.constant([3, size]), threshold, seed).numpy()
    np.testing.assert_array_equal(mask, expected)


def test_kept_values_are_scaled_to_keep_the_expectation():
    layer = Dropout(0.1, seed=3)
    inputs = tf.random.uniform([64, 512], 1.0, 2.0)
    outputs = layer(inputs, training=True).numpy()
    kept = outputs != 0
    threshold = round(0.1 * 65536)
    np.testing.assert_allclose(outputs[kept], inputs.numpy()[kept] * 65536 / (65536 - threshold),
                               rtol=1e-6)
    # 32,768 positions, kept with probability 1 - 6554 / 65536: 4 standard deviations.
    keep_rate = 1 - threshold / 65536
    assert abs(kept.mean() - keep_rate) < 4 * np.sqrt(keep_rate * (1 - keep_rate) / kept.size)


def test_gradient_is_the_mask_times_the_scale():
    layer = Dropout(0.25, seed=4)
    inputs = tf.random.normal([8, 10])
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = layer(inputs, training=True)
    gradient = tape.gradient(outputs, inputs).numpy()
    expected = np.where(outputs.numpy() != 0, 65536 / (65536 - 16384), 0.0)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_each_call_draws_a_new_mask_and_a_seed_repeats_them():
    first, second = Dropout(0.5, seed=7), Dropout(0.5, seed=7)
    inputs = tf.ones([4, 100])
    a1, a2 = first(inputs, training=True), first(inputs, training=True)
    b1 = second(inputs, training=True)
    assert not np.array_equal(a1.numpy(), a2.numpy())
    np.testing.assert_array_equal(a1.numpy(), b1.numpy())


def test_xla_draws_the_same_mask_as_the_graph():
    seed = tf.constant([1, 2])
    shape = tf.constant([5, 33])
    graph = tf.function(lambda: keep_mask(shape, 6554, seed))
    compiled = tf.function(lambda: keep_mask(shape, 6554, seed), jit_compile=True)
    np.testing.assert_array_equal(graph().numpy(), compiled().numpy())


@pytest.mark.parametrize("rate", [0.0, 1.0, 1e-6])
def test_rates_16_bits_cannot_express_take_keras_path(rate):
    inputs = tf.ones([3, 4])
    outputs = Dropout(rate, seed=1)(inputs, training=True).numpy()
    expected = np.zeros([3, 4]) if rate == 1.0 else np.ones([3, 4]) / (1 - rate)  # Keras' scale
    np.testing.assert_allclose(outputs, expected, rtol=1e-6)


def test_inference_and_noise_shape():
    inputs = tf.random.normal([2, 5, 6])
    np.testing.assert_array_equal(Dropout(0.5)(inputs).numpy(), inputs.numpy())
    outputs = Dropout(0.5, noise_shape=[2, 1, 6], seed=2)(inputs, training=True).numpy()
    dropped = outputs == 0
    assert (dropped == dropped[:, :1]).all()  # one mask over axis 1 (Keras' own path)
