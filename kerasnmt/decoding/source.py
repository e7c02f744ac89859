"""Raw source text -> the padded ids the decoder reads, as every translation path does it."""

import numpy as np
import tensorflow as tf

from kerasnmt.layers.preprocessing_layer import drop_padding_tokens


def source_features(preprocessor, sentences, maximum_source_length):
    """Tokenizes and looks up a batch of raw sentences, in graph or eagerly.

    Bytes that are not UTF-8 become U+FFFD; each source is cut to its first
    `maximum_source_length` tokens (a sentence of no token, empty or blank, has length 0).

    Args:
        preprocessor: a `TranslationPreprocessor`.
        sentences: string `[B]`.
        maximum_source_length: the most source tokens kept.

    Returns:
        `{"ids": int32 [B, S], "length": int32 [B], "tokens": string [B, S]}` (`S` the
        longest kept length; ids padded with 0, tokens with `""`).

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> features = source_features(preprocessor, tf.constant(["a b a", " ", "b"]), 2)
        >>> features["ids"].numpy().tolist(), features["length"].numpy().tolist()
        ([[3, 4], [0, 0], [4, 0]], [2, 0, 1])
    """
    sentences = tf.strings.unicode_transcode(
        sentences, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    tokens = drop_padding_tokens(preprocessor.source_tokenizer(sentences))
    tokens = tokens[:, :maximum_source_length]
    features = preprocessor.source_lookup(tokens)
    return {
        "ids": tf.cast(features["ids"], tf.int32),
        "length": tf.cast(features["length"], tf.int32),
        "tokens": tokens.to_tensor(""),
    }


def unknown_source_tokens(preprocessor, sentences):
    """How many tokens of each raw sentence the source vocabulary does not hold (each is
    read as the unknown id), among those the preprocessor keeps (all, unless it was built
    with a `maximum_source_length`; translation's own cut comes later).

    A SentencePiece vocabulary built with byte fallback gives 0 for any text; a vocabulary
    without it, or a word vocabulary, counts the pieces or words it never saw.

    Args:
        preprocessor: a `TranslationPreprocessor`.
        sentences: raw strings, a list or 1-D array.

    Returns:
        An int64 NumPy array, one count a sentence.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> unknown_source_tokens(preprocessor, ["a b", "a zz b yy", ""]).tolist()
        [0, 2, 0]
    """
    if len(sentences) == 0:
        return np.zeros([0], np.int64)
    sentences = tf.strings.unicode_transcode(
        tf.constant(list(sentences), tf.string), "UTF-8", "UTF-8", errors="replace",
        replacement_char=0xFFFD)
    ids = preprocessor(sentences)["ids"]
    return unknown_id_counts(preprocessor, ids).numpy().astype(np.int64)


def unknown_id_counts(preprocessor, ids):
    """int32 `[B]`: how many of each row's source ids are the unknown id (the one after the
    source vocabulary), in graph or eagerly.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> unknown_id_counts(preprocessor, tf.constant([[3, 5, 5], [5, 0, 0]])).numpy().tolist()
        [2, 1]
    """
    unknown_id = len(preprocessor.source_vocabulary)
    return tf.reduce_sum(tf.cast(tf.equal(ids, unknown_id), tf.int32), axis=-1)
