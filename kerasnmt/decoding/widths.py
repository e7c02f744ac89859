"""The one rule for the source widths sentences are padded to, and the decoding length.

Every path that decodes text (`Translator.translate`, its decoding streams, the
SavedModel, and `Translator.decode` when the width is unknown at tracing time) pads a
sentence to the smallest width of `source_width_buckets` that holds it: 8, 16, 32, 64,
..., the last one `maximum_source_length`. Each width is a trace and, under XLA, a
compilation (seconds each, paid by the first request of that width), so one width per
doubling: two per doubling (8, 12, 16, 24, ...) pad less but made a cold start about 1.5
times as long (beam search's first pass over Multi30k's 1,000 test sentences: 37 s against
25.5 s, 2 CPU cores, 2026-11-25), and warm decoding no faster.

Decoding length: a sentence of `n` source tokens gets at most
`min(sampler.max_length, max(sampler.min_length, floor(length_ratio * n) + length_offset))`
target tokens (fairseq's `max_len_a * n + max_len_b`), by default `2 n + 10`.
"""

import numpy as np
import tensorflow as tf

DEFAULT_MAXIMUM_SOURCE_LENGTH = 256
SMALLEST_SOURCE_WIDTH = 8
DEFAULT_LENGTH_RATIO = 2.0
DEFAULT_LENGTH_OFFSET = 10


def source_width_ladder(limit):
    """The widths 8, 16, 32, 64, ... below `limit` (`8 * 2**k`).

    Examples:
        >>> source_width_ladder(100)
        [8, 16, 32, 64]
    """
    widths, width = [], SMALLEST_SOURCE_WIDTH
    while width < limit:
        widths.append(width)
        width *= 2
    return widths


def source_width_buckets(maximum_source_length):
    """The ladder's widths below `maximum_source_length`, then `maximum_source_length`.

    Examples:
        >>> source_width_buckets(100)
        [8, 16, 32, 64, 100]
        >>> source_width_buckets(12)
        [8, 12]
    """
    return source_width_ladder(maximum_source_length) + [maximum_source_length]


def check_maximum_source_length(value):
    """A `ValueError` unless `value` is a positive int (sources are cut to this many
    tokens).

    Examples:
        >>> check_maximum_source_length(None)
        Traceback (most recent call last):
        ...
        ValueError: maximum_source_length must be a positive integer, got None
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"maximum_source_length must be a positive integer, got {value!r}")


def check_buckets(name, buckets):
    """`buckets` as a list of increasing positive ints, or a `ValueError` naming `name`."""
    buckets = [int(value) for value in buckets]
    if not buckets or buckets != sorted(set(buckets)) or buckets[0] < 1:
        raise ValueError(f"{name} must be increasing positive integers, got {buckets}")
    return buckets


def bucket_index(value, buckets):
    """Index of the smallest bucket >= value, for each of `value` (a tensor, scalar or
    vector, values <= buckets[-1]).

    Examples:
        >>> bucket_index([1, 8, 9, 12], [8, 12]).numpy().tolist()
        [0, 0, 1, 1]
    """
    value = tf.convert_to_tensor(value, tf.int32)
    indices = tf.searchsorted(tf.constant(buckets, tf.int32), tf.reshape(value, [-1]))
    return tf.reshape(indices, tf.shape(value))


def width_of(length, buckets):
    """The smallest of `buckets` that holds `length` tokens (at least one), in Python.

    Examples:
        >>> [width_of(n, [8, 12, 16]) for n in (0, 8, 9, 16)]
        [8, 8, 12, 16]
    """
    length = max(int(length), 1)
    return next(width for width in buckets if width >= length)


def decoding_length_limit(source_length, sampler, length_ratio, length_offset):
    """The most target tokens each sentence may get: int32 `[B]` (see the module doc;
    computed in float32, as `decoding_steps`).

    Examples:
        >>> from kerasnmt.decoding import BeamSampler
        >>> decoding_length_limit([0, 3, 100], BeamSampler(max_length=150), 2.0, 10).numpy()
        array([ 10,  16, 150], dtype=int32)
    """
    check_length_arguments(length_ratio, length_offset)
    scaled = tf.floor(tf.constant(length_ratio, tf.float32) * tf.cast(source_length, tf.float32))
    limits = tf.cast(scaled, tf.int32) + length_offset
    return tf.minimum(sampler.max_length, tf.maximum(sampler.min_length, limits))


def decoding_steps(source_width, sampler, length_ratio, length_offset):
    """The decoding steps buffers must hold for sources padded to `source_width` tokens.

    One more than the limit of a sentence that fills the width (the step that emits the
    forced `</s>`), at most `sampler.max_length`; `sampler.max_length` when the width is
    not static (`None`).

    Examples:
        >>> from kerasnmt.decoding import BeamSampler
        >>> [decoding_steps(width, BeamSampler(max_length=60), 2.0, 10) for width in (8, 32)]
        [27, 60]
    """
    check_length_arguments(length_ratio, length_offset)
    if source_width is None:
        return sampler.max_length
    scaled = np.floor(np.float32(length_ratio) * np.float32(source_width))
    limit = max(sampler.min_length, int(scaled) + length_offset)
    return min(sampler.max_length, limit + 1)


def check_length_arguments(length_ratio, length_offset):
    """A `ValueError` unless `length_ratio >= 0` and `length_offset` is an int >= 1."""
    if not length_ratio >= 0:
        raise ValueError(f"Translator.decode: length_ratio must be >= 0, got {length_ratio!r}")
    if isinstance(length_offset, bool) or not isinstance(length_offset, (int, np.integer)) or (
        length_offset < 1
    ):
        raise ValueError(
            f"Translator.decode: length_offset must be an int >= 1, got {length_offset!r}"
        )
