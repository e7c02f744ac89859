"""Helpers of `Translator.decode` and `Translator.translate`: decoding lengths, source widths."""

import numpy as np
import tensorflow as tf


def decoding_length_limit(source_length, sampler, length_ratio, length_offset):
    """The most target tokens each sentence may get: int32 `[B]`.

    `min(sampler.max_length, max(sampler.min_length, floor(length_ratio * n) + length_offset))`
    for a source of `n` tokens (computed in float32, as `decoding_steps`).
    """
    _check_length_arguments(length_ratio, length_offset)
    scaled = tf.floor(tf.constant(length_ratio, tf.float32) * tf.cast(source_length, tf.float32))
    limits = tf.cast(scaled, tf.int32) + length_offset
    return tf.minimum(sampler.max_length, tf.maximum(sampler.min_length, limits))


def decoding_steps(source_width, sampler, length_ratio, length_offset):
    """The decoding steps buffers must hold for sources padded to `source_width` tokens.

    One more than the limit of a sentence that fills the width (the step that emits the
    forced `</s>`), at most `sampler.max_length`; `sampler.max_length` when the width is
    not static (`None`).
    """
    _check_length_arguments(length_ratio, length_offset)
    if source_width is None:
        return sampler.max_length
    scaled = np.floor(np.float32(length_ratio) * np.float32(source_width))
    limit = max(sampler.min_length, int(scaled) + length_offset)
    return min(sampler.max_length, limit + 1)


def _check_length_arguments(length_ratio, length_offset):
    if not length_ratio >= 0:
        raise ValueError(f"Translator.decode: length_ratio must be >= 0, got {length_ratio!r}")
    if isinstance(length_offset, bool) or not isinstance(length_offset, (int, np.integer)) or (
        length_offset < 1
    ):
        raise ValueError(
            f"Translator.decode: length_offset must be an int >= 1, got {length_offset!r}"
        )
