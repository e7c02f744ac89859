"""Preprocessing numbered lines of parallel files, with errors that name the file and line.

The training pipeline and the shard writer both read `(line_number, source, target[,
alignment])` from files and map them through the model's `TranslationPreprocessor`. An
alignment line that is malformed or points outside the sentences then fails with the
alignment file's name and the line number, checked before the preprocessor sees it.
"""

import tensorflow as tf

from kerasnmt.data.batching import source_length, target_length

# Up to 9 digits, so that every index that matches converts to int32.
_PAIR_PATTERN = "[0-9]{1,9}-[0-9]{1,9}"


def _fail(message_parts):
    check = tf.debugging.Assert(tf.constant(False), [tf.strings.join(message_parts)])
    with tf.control_dependencies([check]):
        return tf.constant(False)


def check_alignment_line(line, num_source_tokens, num_target_tokens, path, line_number):
    """A boolean tensor that is True, or fails naming `path` and `line_number`.

    Args:
        line: a Pharaoh line, `"s-t s-t ..."` (0-based source and target token indices).
        num_source_tokens: the number of source tokens of that line's sentence pair.
        num_target_tokens: the number of target tokens.
        path: the alignment file, for the message.
        line_number: the 1-based line number, for the message.

    Returns:
        `tf.constant(True)`, once the line is checked; use it as a control dependency.
        Running it raises `tf.errors.InvalidArgumentError` on a malformed pair or an
        index outside the sentences.
    """
    pairs = tf.strings.split(line)
    location = [str(path), ", line ", tf.strings.as_string(line_number), ": "]

    def _check_ranges():
        numbers = tf.strings.to_number(
            tf.reshape(tf.strings.split(pairs, "-").flat_values, [-1, 2]), tf.int32
        )
        largest = tf.reduce_max(tf.concat([numbers, [[-1, -1]]], axis=0), axis=0)
        in_range = (largest[0] < num_source_tokens) & (largest[1] < num_target_tokens)
        return tf.cond(
            in_range,
            lambda: tf.constant(True),
            lambda: _fail(
                location
                + [
                    "alignment index out of range: largest source index ",
                    tf.strings.as_string(largest[0]),
                    " for ",
                    tf.strings.as_string(num_source_tokens),
                    " source tokens, largest target index ",
                    tf.strings.as_string(largest[1]),
                    " for ",
                    tf.strings.as_string(num_target_tokens),
                    " target tokens, in line: ",
                    line,
                ]
            ),
        )

    well_formed = tf.reduce_all(tf.strings.regex_full_match(pairs, _PAIR_PATTERN))
    return tf.cond(
        well_formed,
        _check_ranges,
        lambda: _fail(
            location
            + [
                "malformed Pharaoh alignment: expected space-separated source-target index "
                "pairs such as 0-0 1-2, got line: ",
                line,
            ]
        ),
    )


def numbered_lines_preprocessor(preprocessor, alignment_path=None):
    """Wraps `preprocessor` for `(line_number, source, target[, alignment])` elements.

    Args:
        preprocessor: `preprocessor(source, target[, alignment]) -> (features, labels)`.
        alignment_path: the alignment file the alignment lines come from, or `None` when
            the elements have no alignment.

    Returns:
        A function for `tf.data.Dataset.map` that returns `(features, labels)`; with an
        alignment file, each alignment line is checked first (`check_alignment_line`).
    """
    if alignment_path is None:
        return lambda line_number, source, target: preprocessor(source, target)

    def _preprocess(line_number, source, target, alignment):
        features, labels = preprocessor(source, target)
        checked = check_alignment_line(
            alignment, source_length(features), target_length(labels), alignment_path, line_number
        )
        with tf.control_dependencies([checked]):
            alignment = tf.identity(alignment)
        return preprocessor(source, target, alignment)

    return _preprocess
