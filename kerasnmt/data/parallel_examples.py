"""Preprocessing chunks of numbered parallel lines, with errors naming the file and line.

The training pipeline and the shard writer both read `(line_number, source, target[,
alignment])` lines from files, `CHUNK_SIZE` at a time, and map each chunk through the
model's `TranslationPreprocessor` (called on `[B]` strings: one `tf.data` function call
a chunk instead of one an example). An alignment line that is malformed or points
outside its sentences fails with the alignment file's name and the line number: the
lines are checked before the preprocessor sees them.
"""

import tensorflow as tf

from kerasnmt.data.batching import count_target_tokens, source_length

# Up to 9 digits, so that every index that matches converts to int32.
_PAIR_PATTERN = "[0-9]{1,9}-[0-9]{1,9}"


def check_alignment_lines(lines, num_source_tokens, num_target_tokens, path, line_numbers):
    """A boolean tensor that is True, or fails naming `path` and a bad line's number.

    Args:
        lines: `[B]` Pharaoh lines, `"s-t s-t ..."` (0-based source and target token
            indices).
        num_source_tokens: `[B]` source token counts of the sentence pairs.
        num_target_tokens: `[B]` target token counts.
        path: the alignment file, for the message.
        line_numbers: `[B]` 1-based line numbers, for the message.

    Returns:
        `tf.constant(True)` once the lines are checked; use it as a control dependency.
        Running it raises `tf.errors.InvalidArgumentError` on the first line (of the
        chunk) with a malformed pair or an index outside its sentences.

    Examples:
        >>> import tensorflow as tf
        >>> def check(lines):
        ...     return check_alignment_lines(
        ...         tf.constant(lines), num_source_tokens=tf.constant([2, 2]),
        ...         num_target_tokens=tf.constant([2, 2]), path="train.align",
        ...         line_numbers=tf.constant([1, 2]))
        >>> bool(check(["0-0 1-1", "1-0"]))
        True
        >>> try:
        ...     check(["0-0 1-1", "0-0 2-0"])
        ... except tf.errors.InvalidArgumentError as error:
        ...     print(error.message)
        Expected ...train.align, line 2: alignment index out of range: ...; got line: 0-0 2-0'
    """
    pairs = tf.strings.split(lines)
    flat_pairs, rows = pairs.flat_values, pairs.value_rowids()
    num_lines = tf.size(lines, out_type=tf.int64)
    well_formed = tf.strings.regex_full_match(flat_pairs, _PAIR_PATTERN)
    safe_pairs = tf.where(well_formed, flat_pairs, "0-0")
    source_index = tf.strings.to_number(tf.strings.regex_replace(safe_pairs, "-.*", ""), tf.int32)
    target_index = tf.strings.to_number(tf.strings.regex_replace(safe_pairs, ".*-", ""), tf.int32)
    out_of_range = (source_index >= tf.gather(num_source_tokens, rows)) | (
        target_index >= tf.gather(num_target_tokens, rows)
    )

    def _lines_with(pair_flags):
        counts = tf.math.unsorted_segment_sum(tf.cast(pair_flags, tf.int32), rows, num_lines)
        return counts > 0

    malformed_lines = _lines_with(tf.logical_not(well_formed))
    out_of_range_lines = _lines_with(well_formed & out_of_range)
    bad_lines = malformed_lines | out_of_range_lines

    def _fail():
        first = tf.argmax(tf.cast(bad_lines, tf.int32))
        reason = tf.where(
            malformed_lines[first],
            "malformed Pharaoh alignment: expected space-separated source-target index "
            "pairs such as 0-0 1-2",
            tf.strings.join([
                "alignment index out of range: source indices must be below the ",
                tf.strings.as_string(num_source_tokens[first]),
                " source tokens and target indices below the ",
                tf.strings.as_string(num_target_tokens[first]),
                " target tokens",
            ]),
        )
        message = tf.strings.join([
            str(path), ", line ", tf.strings.as_string(line_numbers[first]), ": ", reason,
            "; got line: ", lines[first],
        ])
        check = tf.debugging.Assert(tf.constant(False), [message])
        with tf.control_dependencies([check]):
            return tf.constant(False)

    return tf.cond(tf.reduce_any(bad_lines), _fail, lambda: tf.constant(True))


def chunk_preprocessor(preprocessor, alignment_path=None, training=None):
    """Wraps `preprocessor` for chunks of `(line_numbers, sources, targets[, alignments])`.

    Args:
        preprocessor: `preprocessor(sources, targets[, alignments]) -> (features, labels)`
            on `[B]` strings, padded (a `TranslationPreprocessor`).
        alignment_path: the file the alignment lines come from, or `None` when the
            chunks have no alignments.
        training: passed to `preprocessor` for chunks without alignments (True samples
            the segmentation of a `SentencePieceTokenizer` with `sampling_alpha`); chunks
            with alignments, whose indices hold for the best segmentation only, are
            always preprocessed with `training=False`.

    Returns:
        A function for `tf.data.Dataset.map` over chunks that returns padded
        `(features, labels)` chunks; with an alignment file, the alignment lines are
        checked first (`check_alignment_lines`).

    Examples:
        >>> import tensorflow as tf
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> lines = tf.data.Dataset.from_tensor_slices(
        ...     ([1, 2], ["a b", "b"], ["b", "a a"], ["0-0 1-0", "0-1"]))
        >>> chunks = lines.batch(2).map(chunk_preprocessor(preprocessor, "train.align"))
        >>> features, labels = chunks.get_single_element()
        >>> features["ids"].numpy().tolist(), labels["ids_out"].numpy().tolist()
        ([[3, 4], [4, 0]], [[4, 2, 0], [3, 3, 2]])
        >>> labels["alignment"].numpy().tolist()  # [chunk, target tokens, source tokens]
        [[[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]]
    """
    if alignment_path is None:
        return lambda line_numbers, sources, targets: preprocessor(
            sources, targets, training=training
        )

    def _preprocess(line_numbers, sources, targets, alignments):
        features, labels = preprocessor(sources, targets)
        checked = check_alignment_lines(
            alignments, source_length(features), count_target_tokens(labels), alignment_path,
            line_numbers,
        )
        with tf.control_dependencies([checked]):
            alignments = tf.identity(alignments)
        return preprocessor(sources, targets, alignments)

    return _preprocess
