"""Turns Pharaoh word alignments ("0-0 1-2 ...") into dense target-by-source matrices."""

import keras
import tensorflow as tf

from kerasnmt.layers.preprocessing_layer import PreprocessingLayer

# Up to 9 digits, so that every index that matches converts to int32.
_PAIR_PATTERN = "[0-9]{1,9}-[0-9]{1,9}"


@keras.saving.register_keras_serializable(package="kerasnmt")
class PharaohAlignment(PreprocessingLayer):
    """Densifies Pharaoh alignment lines into 0/1 float matrices of shape `[target, source]`.

    A Pharaoh line lists `source-target` index pairs (0-based token positions) separated by
    spaces, e.g. `"0-0 1-1 2-2"`, as written by fast_align or eflomal. Pair `i-j` sets
    `matrix[j, i] = 1` (OpenNMT-tf's `alignment_matrix_from_pharaoh`, already transposed to
    `[target, source]`). An empty or whitespace-only line is an all-zero matrix; a pair listed
    twice is still 1. A malformed pair (`"0-x"`, `"1"`, `"0--1"`, `"-1-0"`), an index outside
    the lengths, or a negative length raises `tf.errors.InvalidArgumentError` whose message
    holds both lengths and the line (the first bad line of a batch). Only core TensorFlow ops
    are used.

    Args:
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        lines: a string scalar (one sentence pair) or a 1-D string tensor `[B]`.
        source_length: the number of source tokens, an integer scalar or `[B]` (a scalar is
            broadcast over the batch).
        target_length: the number of target tokens, likewise.

    Returns:
        float32 `[target_length, source_length]` for one line; for a batch,
        `[B, max(target_length), max(source_length)]` with each matrix zero-padded.

    Examples:
        >>> alignment = PharaohAlignment()
        >>> alignment("0-0 1-1 2-2", 3, 3).numpy().tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        >>> alignment(["0-1 1-0", ""], [2, 1], [2, 1]).numpy().tolist()
        [[[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]

    Reference:
        [OpenNMT-tf `alignment_matrix_from_pharaoh`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/data/text.py)
    """

    def call(self, lines, source_length, target_length):
        lines = self.strings_tensor(lines, items="lines")
        source_length = _lengths(source_length, lines)
        target_length = _lengths(target_length, lines)
        if lines.shape.rank == 0:
            return _densify(lines[tf.newaxis], source_length, target_length)[0]
        return _densify(lines, source_length, target_length)


def _lengths(length, lines):
    length = tf.cast(tf.convert_to_tensor(length), tf.int32)
    if length.shape.rank not in (0, lines.shape.rank):
        raise ValueError(
            f"a length must be a scalar or match lines {lines.shape}, got {length.shape}"
        )
    return tf.reshape(tf.broadcast_to(length, tf.shape(lines)), [-1])


def _densify(lines, source_length, target_length):
    """`[B, T_max, S_max]` matrices for `[B]` lines and lengths, after validating them."""
    pairs = tf.strings.split(lines)
    flat_pairs, rows = pairs.flat_values, tf.cast(pairs.value_rowids(), tf.int32)
    well_formed = tf.strings.regex_full_match(flat_pairs, _PAIR_PATTERN)
    safe_pairs = tf.where(well_formed, flat_pairs, "0-0")
    source_index = tf.strings.to_number(tf.strings.regex_replace(safe_pairs, "-.*", ""), tf.int32)
    target_index = tf.strings.to_number(tf.strings.regex_replace(safe_pairs, ".*-", ""), tf.int32)
    valid_pair = (
        well_formed
        & (source_index < tf.gather(source_length, rows))
        & (target_index < tf.gather(target_length, rows))
    )
    batch_size = tf.size(lines)
    invalid_pairs = tf.math.unsorted_segment_sum(
        tf.cast(tf.logical_not(valid_pair), tf.int32), rows, batch_size
    )
    valid_line = (invalid_pairs == 0) & (source_length >= 0) & (target_length >= 0)
    # A sentinel invalid row keeps the index defined when every line (or no line) is valid.
    first_invalid = tf.argmin(tf.concat([tf.cast(valid_line, tf.int32), [0]], axis=0))
    # Plain text, the line last: Assert escapes quotes, so none delimit the line.
    message = tf.strings.join(
        [
            "invalid Pharaoh alignment: expected space-separated source-target pairs of "
            "non-negative integers with source < source_length=",
            tf.strings.as_string(tf.concat([source_length, [0]], axis=0)[first_invalid]),
            " and target < target_length=",
            tf.strings.as_string(tf.concat([target_length, [0]], axis=0)[first_invalid]),
            ", got line: ",
            tf.concat([lines, [""]], axis=0)[first_invalid],
        ]
    )
    check = tf.debugging.Assert(tf.reduce_all(valid_line), [message])
    with tf.control_dependencies([check]):
        indices = tf.stack([rows, target_index, source_index], axis=1)
        shape = tf.stack(
            [
                batch_size,
                tf.reduce_max(tf.concat([target_length, [0]], axis=0)),
                tf.reduce_max(tf.concat([source_length, [0]], axis=0)),
            ]
        )
        counts = tf.scatter_nd(indices, tf.ones_like(source_index, tf.float32), shape)
        return tf.minimum(counts, 1.0)
