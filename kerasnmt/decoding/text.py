"""Decoded ids -> target tokens, text and alignments, with unknown-token replacement."""

import tensorflow as tf

from kerasnmt.data.vocabulary import PADDING_ID, START_OF_SENTENCE_ID, UNKNOWN_TOKEN


def longest(values):
    """The largest of integer `values`, 0 when there is none."""
    return tf.reduce_max(tf.concat([tf.reshape(values, [-1]), [0]], 0))


def hypothesis_texts(preprocessor, outputs, source_length, source_tokens=None,
                     with_alignments=False):
    """Turns `Translator.decode` outputs into text, in graph or eagerly.

    The tokens are those of the ids before each hypothesis' length, `<blank>` and `<s>`
    dropped (as `VocabLookup.invert`), ids past the vocabulary read as `<unk>`.

    Args:
        preprocessor: the `TranslationPreprocessor` whose target side decoded.
        outputs: the decode dict: `"ids"` `[B, n, T]`, `"lengths"` `[B, n]` and, for
            alignments or replacement, `"alignment"` `[B, n, T, S]`.
        source_length: int32 `[B]`.
        source_tokens: string `[B, S']` to replace each unknown target token by the source
            token it attends to most (among the sentence's real tokens); `None`: no
            replacement.
        with_alignments: also return the attention rows of the kept tokens.

    Returns:
        `{"texts": [B, n] string, "tokens": [B, n, T'] string (padded with ""),
        "token_counts": [B, n] int, "alignments": [B, n, T', max(source_length)] float32}`
        (`"alignments"` with `with_alignments` only).

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> source_vocabulary = ["<blank>", "<s>", "</s>", "ein", "Haus"]
        >>> target_vocabulary = ["<blank>", "<s>", "</s>", "X", "Y"]  # 5: <unk>
        >>> preprocessor = TranslationPreprocessor.whitespace(source_vocabulary, target_vocabulary)
        >>> attention = [[.6, .3, .9], [.2, .7, .9], [.5, .5, 0.], [0., 0., 0.]]
        >>> outputs = {"ids": tf.constant([[[3, 5, 4, 0]]]), "lengths": tf.constant([[3]]),
        ...            "alignment": tf.constant([[attention]])}
        >>> texts = hypothesis_texts(preprocessor, outputs, tf.constant([2]),
        ...                          tf.constant([["ein", "Haus"]]), with_alignments=True)
        >>> texts["texts"].numpy().tolist(), texts["alignments"].shape
        ([[b'X Haus Y']], TensorShape([1, 1, 3, 2]))
    """
    ids = outputs["ids"]
    shape = tf.shape(ids)
    rows = shape[0] * shape[1]
    flat_ids = tf.reshape(ids, [rows, shape[2]])
    steps = tf.sequence_mask(tf.reshape(outputs["lengths"], [-1]), shape[2])
    keep = steps & (flat_ids != PADDING_ID) & (flat_ids != START_OF_SENTENCE_ID)
    vocabulary = list(preprocessor.target_vocabulary) + [UNKNOWN_TOKEN]
    unknown_id = len(vocabulary) - 1
    tokens = tf.gather(tf.constant(vocabulary), tf.minimum(flat_ids, unknown_id))
    if source_tokens is not None or with_alignments:
        alignment = outputs["alignment"]
        flat_alignment = tf.reshape(alignment, [rows, shape[2], tf.shape(alignment)[3]])
    if source_tokens is not None:
        lengths = tf.repeat(source_length, shape[1])
        real = tf.range(tf.shape(flat_alignment)[2])[tf.newaxis, tf.newaxis] < (
            lengths[:, tf.newaxis, tf.newaxis])
        attended = tf.argmax(tf.where(real, flat_alignment, -1.0), axis=-1,
                             output_type=tf.int32)
        sources = tf.repeat(source_tokens, shape[1], axis=0)
        replaced = tf.gather(sources, tf.minimum(attended, tf.shape(sources)[1] - 1),
                             batch_dims=1)
        unknown = (flat_ids == unknown_id) & (lengths[:, tf.newaxis] > 0)
        tokens = tf.where(unknown, replaced, tokens)
    kept = tf.ragged.boolean_mask(tokens, keep)
    padded = kept.to_tensor("")
    result = {
        "texts": tf.reshape(preprocessor.detokenize_tokens(kept), shape[:2]),
        "tokens": tf.reshape(padded, tf.concat([shape[:2], tf.shape(padded)[1:]], 0)),
        "token_counts": tf.reshape(kept.row_lengths(), shape[:2]),
    }
    if with_alignments:
        rows_kept = tf.ragged.boolean_mask(flat_alignment, keep).to_tensor()
        rows_kept = rows_kept[:, :, : longest(source_length)]
        result["alignments"] = tf.reshape(
            rows_kept, tf.concat([shape[:2], tf.shape(rows_kept)[1:]], 0))
    return result
