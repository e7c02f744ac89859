"""Adds the Transformer's fixed sine/cosine position encodings to a sequence."""

import math

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kerasnmt")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Adds sinusoidal position encodings to `[B, T, D]` inputs, as OpenNMT-tf does.

    Position `p` (counted from 1, as OpenNMT-tf's `SinusoidalPositionEncoder` does) is encoded
    as `concat(sin(p * w), cos(p * w))` with `w_i = exp(-i * log(10000) / (D / 2 - 1))` for
    `i = 0 .. D/2 - 1`. Used by the Transformer when `maximum_relative_position` is `None`.

    Args:
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`, `dtype`).

    Call arguments:
        inputs: `[B, T, D]` float tensor, `D` even (and at least 4).
        start_index: int, the 0-based position of the first time step (the decoding
            step when decoding one position at a time): a scalar, or `[B]` (one per
            example).

    Returns:
        `inputs` plus the encodings of positions `start_index + 1 .. start_index + T`.

    Examples:
        >>> layer = SinusoidalPositionEncoding()
        >>> outputs = layer(tf.zeros([1, 2, 4]))
        >>> [round(float(v), 4) for v in outputs[0, 0]]  # position 1: sin(1), sin(1e-4), cos(1), cos(1e-4)
        [0.8415, 0.0001, 0.5403, 1.0]

    Reference:
        [Vaswani et al., 2017, Attention Is All You Need](https://arxiv.org/abs/1706.03762);
        [OpenNMT-tf `SinusoidalPositionEncoder`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/layers/position.py)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_jit = True

    def call(self, inputs, start_index=0):
        depth = inputs.shape[-1]
        if depth is None or depth % 2 != 0 or depth < 4:
            raise ValueError(
                "SinusoidalPositionEncoding: the last dimension must be even and >= 4, got "
                f"inputs of shape {inputs.shape}"
            )
        start_index = tf.cast(start_index, tf.int32)
        # [1, T] positions, or [B, T] with one start per example.
        positions = tf.cast(
            tf.reshape(start_index, [-1, 1]) + 1 + tf.range(tf.shape(inputs)[1]), tf.float32
        )
        increment = math.log(10000.0) / (depth / 2 - 1)
        inverse_timescales = tf.exp(tf.range(depth // 2, dtype=tf.float32) * -increment)
        scaled_time = positions[:, :, tf.newaxis] * inverse_timescales
        encoding = tf.concat([tf.sin(scaled_time), tf.cos(scaled_time)], axis=2)
        return inputs + tf.cast(encoding, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape
