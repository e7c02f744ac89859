"""Maps tokens to the ids of an OpenNMT-format vocabulary, and ids back to tokens."""

import numbers
import os

import keras
import tensorflow as tf

from kerasnmt.data.vocabulary import (
    END_OF_SENTENCE_ID,
    PADDING_ID,
    START_OF_SENTENCE_ID,
    UNKNOWN_TOKEN,
    check_vocabulary,
    load_vocabulary,
)
from kerasnmt.layers.preprocessing_layer import PreprocessingLayer, drop_padding_tokens

SIDES = ("source", "target")


@keras.saving.register_keras_serializable(package="kerasnmt")
class VocabLookup(PreprocessingLayer):
    """Turns tokens into vocabulary ids with OpenNMT-tf's `<s>`/`</s>` conventions.

    The vocabulary starts with `<blank>` (id 0, padding), `<s>` (1) and `</s>` (2); every
    token not in it gets the one out-of-vocabulary id `len(vocabulary)`, so a model embeds
    `vocabulary_size = len(vocabulary) + 1` ids. The source side gives the ids of the tokens.
    The target side gives the decoder's input and output: `ids = <s> + tokens`,
    `ids_out = tokens + </s>`, `length = number of tokens + 1`.

    The empty string is padding (from `padded_batch` or `to_tensor()`), never a token: it is
    dropped wherever it appears. The vocabulary itself is embedded in `get_config()`, so a
    `.keras` file or SavedModel holding this layer needs no vocabulary file. Lookups use
    `tf.lookup.StaticHashTable` (core TensorFlow ops).

    Args:
        vocabulary: a vocabulary file (one token a line, see `kerasnmt.data.load_vocabulary`)
            or a list of tokens in id order; both must start with `<blank>`, `<s>`, `</s>` and
            hold no duplicate.
        side: `"source"` (encoder ids) or `"target"` (decoder ids shifted by `<s>`/`</s>`).
        maximum_length: when set, only the first `maximum_length` tokens of each sentence are
            kept, before `<s>`/`</s>` are added (so a target `length` is at most
            `maximum_length + 1`). This truncates; the training pipeline filters sentences that
            are too long beforehand, so truncation only bounds the cost of inference.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        tokens: one sentence as 1-D string tokens, or a batch `[B, L]` as a string
            `tf.RaggedTensor` or a dense tensor padded with "".

    Returns:
        A dict of int32 tensors. One sentence: `ids` `[N]` and a scalar `length`. A batch:
        `ids` `[B, N_max]` padded with 0 (`<blank>`) and `length` `[B]`. The target side also
        has `ids_out`, shaped like `ids`.

    Examples:
        >>> vocabulary = ["<blank>", "<s>", "</s>", "▁он", "▁может"]
        >>> lookup = VocabLookup(vocabulary, side="target")
        >>> outputs = lookup(["▁он", "▁может", "▁всё"])
        >>> outputs["ids"].numpy().tolist(), outputs["ids_out"].numpy().tolist()
        ([1, 3, 4, 5], [3, 4, 5, 2])
        >>> int(outputs["length"]), lookup.vocabulary_size
        (4, 6)
        >>> [token.decode() for token in lookup.invert([1, 3, 4, 5, 2, 0]).numpy()]
        ['▁он', '▁может', '<unk>']

    Reference:
        [OpenNMT-tf `WordEmbedder`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/inputters/text_inputter.py)
    """

    def __init__(self, vocabulary, side="source", maximum_length=None, **kwargs):
        super().__init__(**kwargs)
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        if maximum_length is not None:
            if (
                isinstance(maximum_length, bool)
                or not isinstance(maximum_length, numbers.Integral)
                or maximum_length < 1
            ):
                raise ValueError(
                    f"maximum_length must be a positive integer or None, got {maximum_length!r}"
                )
            maximum_length = int(maximum_length)
        if isinstance(vocabulary, (str, os.PathLike)):
            tokens = load_vocabulary(vocabulary)
        else:
            tokens = check_vocabulary(vocabulary)
        self.vocabulary = tuple(tokens)
        self.side = side
        self.maximum_length = maximum_length
        with tf.init_scope():
            keys = tf.constant(self.vocabulary, dtype=tf.string)
            values = tf.range(len(self.vocabulary), dtype=tf.int64)
            self._token_to_id = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(keys, values),
                default_value=len(self.vocabulary),
            )
            self._id_to_token = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(values, keys),
                default_value=UNKNOWN_TOKEN,
            )

    @property
    def vocabulary_size(self):
        """The number of ids: the vocabulary's tokens plus the unknown-token id."""
        return len(self.vocabulary) + 1

    def get_vocabulary(self):
        """The vocabulary's tokens in id order (the unknown id has no token of its own)."""
        return list(self.vocabulary)

    def call(self, tokens):
        if not isinstance(tokens, tf.RaggedTensor):
            tokens = tf.convert_to_tensor(tokens, dtype=tf.string)
        if tokens.shape.rank not in (1, 2):
            raise ValueError(
                f"VocabLookup expects 1-D tokens (one sentence) or [B, L] tokens (a batch), "
                f"got shape {tokens.shape}"
            )
        tokens = drop_padding_tokens(tokens)
        if self.maximum_length is not None:
            tokens = tokens[..., : self.maximum_length]
        if tokens.shape.rank == 1:
            return self._sentence_ids(tf.cast(self._token_to_id.lookup(tokens), tf.int32))
        ids = tf.cast(tf.ragged.map_flat_values(self._token_to_id.lookup, tokens), tf.int32)
        return self._batch_ids(ids)

    def _sentence_ids(self, ids):
        length = tf.size(ids, out_type=tf.int32)
        if self.side == "source":
            return {"ids": ids, "length": length}
        return {
            "ids": tf.concat([[START_OF_SENTENCE_ID], ids], axis=0),
            "ids_out": tf.concat([ids, [END_OF_SENTENCE_ID]], axis=0),
            "length": length + 1,
        }

    def _batch_ids(self, ids):
        length = tf.cast(ids.row_lengths(), tf.int32)
        if self.side == "source":
            return {"ids": ids.to_tensor(PADDING_ID), "length": length}
        batch_size = ids.nrows(out_type=tf.int32)
        start = tf.RaggedTensor.from_tensor(tf.fill([batch_size, 1], START_OF_SENTENCE_ID))
        end = tf.RaggedTensor.from_tensor(tf.fill([batch_size, 1], END_OF_SENTENCE_ID))
        return {
            "ids": tf.concat([start, ids], axis=1).to_tensor(PADDING_ID),
            "ids_out": tf.concat([ids, end], axis=1).to_tensor(PADDING_ID),
            "length": length + 1,
        }

    def invert(self, ids):
        """Maps ids back to tokens, up to the first `</s>`, without `<s>` and `<blank>`.

        Ids outside the vocabulary (the unknown id `len(vocabulary)`, or any other) become
        `"<unk>"`.

        Args:
            ids: integer ids, 1-D (one sentence) or `[B, L]` (dense or `tf.RaggedTensor`).

        Returns:
            1-D string tokens for 1-D ids, else a string `tf.RaggedTensor` `[B, None]`.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(PADDING_ID)
        ids = tf.cast(tf.convert_to_tensor(ids), tf.int64)
        if ids.shape.rank not in (1, 2):
            raise ValueError(f"invert expects 1-D or [B, L] ids, got shape {ids.shape}")
        ended = tf.cumsum(tf.cast(tf.equal(ids, END_OF_SENTENCE_ID), tf.int32), axis=-1) > 0
        keep = tf.logical_not(ended) & (ids != PADDING_ID) & (ids != START_OF_SENTENCE_ID)
        tokens = self._id_to_token.lookup(ids)
        if ids.shape.rank == 1:
            return tf.boolean_mask(tokens, keep)
        return tf.ragged.boolean_mask(tokens, keep)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary=list(self.vocabulary),
            side=self.side,
            maximum_length=self.maximum_length,
        )
        return config
