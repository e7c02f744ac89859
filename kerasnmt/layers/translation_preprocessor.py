"""A translation model's preprocessing: text to ids (and alignments), and ids back to text."""

import base64
import os

import keras
import keras_hub
import tensorflow as tf

from kerasnmt.data.vocabulary import SPECIAL_TOKENS
from kerasnmt.layers.pharaoh_alignment import PharaohAlignment
from kerasnmt.layers.preprocessing_layer import PreprocessingLayer
from kerasnmt.layers.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
    check_byte_fallback_vocabulary,
)
from kerasnmt.layers.tokenizer import Tokenizer
from kerasnmt.layers.vocab_lookup import VocabLookup
from kerasnmt.layers.whitespace_tokenizer import WhitespaceTokenizer

# The fields of keras-hub tokenizers' configs that keras-hub saves as asset files instead.
KERAS_HUB_ASSET_FIELDS = ("proto", "vocabulary", "merges")


@keras.saving.register_keras_serializable(package="kerasnmt")
class TranslationPreprocessor(PreprocessingLayer):
    """Turns source (and target) text into the features (and labels) of a translation model.

    One definition for both uses of preprocessing: mapped over a `tf.data` pipeline for training
    and evaluation (on single examples before batching, or on batches), and inside the exported
    model for serving. Source text goes through `source_tokenizer` then a source-side
    `VocabLookup`; target text through `target_tokenizer` then a target-side `VocabLookup`
    (`<s>`/`</s>` shift). Pharaoh alignment lines become `[T, S]` matrices, where `T` and `S`
    count the target and source tokens (without `<s>`/`</s>`), as OpenNMT-tf's guided alignment
    expects. `detokenize_target` goes the other way, from decoded ids to text.

    A `keras_hub.tokenizers.Tokenizer` (SentencePiece, WordPiece, byte-pair) can be either
    tokenizer: built with `dtype="string"`, its tokens go through the `VocabLookup` like any
    other tokenizer's (and back to its own ids for its `detokenize`, dropping tokens it does
    not know). Without a vocabulary argument the tokenizer's own vocabulary is used (a
    keras-hub tokenizer's, or that of kerasnmt's `SentencePieceTokenizer`, also a keras-hub
    `Tokenizer`), which must start with `<blank>`, `<s>`, `</s>` (ids 0, 1, 2; e.g. a
    SentencePiece model trained with `pad_id=0, pad_piece="<blank>", bos_id=1, eos_id=2`).
    keras-hub's vocabulary files (a SentencePiece model, WordPiece or byte-pair
    vocabularies), which it saves as assets, are embedded in `get_config()`. The exported
    model needs only its TensorFlow ops, not keras-hub.

    Args:
        source_tokenizer: a tokenizer layer (`WhitespaceTokenizer`, `SentencePieceTokenizer`,
            a keras-hub tokenizer, or any serializable layer that maps a string scalar to
            1-D tokens and `[B]` strings to `[B, None]` ragged tokens).
        target_tokenizer: the same for the target language; its `detokenize` is used by
            `detokenize_target`.
        source_vocabulary: the source vocabulary file or token list (see `VocabLookup`);
            `None` for the source tokenizer's own vocabulary (see above).
        target_vocabulary: the target vocabulary file or token list, or `None` likewise.
        maximum_source_length: keep at most this many source tokens (truncation, see
            `VocabLookup`); `None` keeps all.
        maximum_target_length: keep at most this many target tokens, before `<s>`/`</s>`.
        return_tokens: also return the (truncated) tokens as `"tokens"` in the features and the
            labels, padded with "" in a batch.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        source: a string scalar (one example, as in `Dataset.map` before batching) or `[B]`
            strings.
        target: optional target strings shaped like `source`.
        alignment: optional Pharaoh lines (`"source-target"` pairs) shaped like `source`;
            needs `target`. A malformed line or an index beyond the tokens raises
            `tf.errors.InvalidArgumentError` naming the line and the token counts.
        training: passed to both tokenizers (a `SentencePieceTokenizer` with
            `sampling_alpha` samples its segmentation when it is True); with an
            `alignment`, whose indices hold for the best segmentation only, always False.

    Returns:
        `features` when `target` is None, else `(features, labels)`. `features` is
        `{"ids", "length"}`, `labels` is `{"ids", "ids_out", "length"}` (int32, see
        `VocabLookup`); `labels["alignment"]` is float32 `[T, S]` (`[B, T_max, S_max]` for a
        batch) when `alignment` is given; both have `"tokens"` when `return_tokens`.

    Examples:
        >>> from kerasnmt.layers import WhitespaceTokenizer
        >>> preprocessor = TranslationPreprocessor(
        ...     WhitespaceTokenizer(), WhitespaceTokenizer(),
        ...     ["<blank>", "<s>", "</s>", "▁he", "▁knows", "▁it"],
        ...     ["<blank>", "<s>", "</s>", "▁он", "▁знает", "▁это"])
        >>> features, labels = preprocessor("▁he ▁knows ▁it", "▁он ▁знает ▁это", "0-0 1-1 2-2")
        >>> features["ids"].numpy().tolist(), labels["ids"].numpy().tolist()
        ([3, 4, 5], [1, 3, 4, 5])
        >>> labels["ids_out"].numpy().tolist(), int(labels["length"])
        ([3, 4, 5, 2], 4)
        >>> labels["alignment"].numpy().tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        >>> preprocessor.detokenize_target([[1, 5, 3, 2, 0]]).numpy().tolist() == ["▁это ▁он".encode()]
        True

    Reference:
        [OpenNMT-tf training data](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/inputters/text_inputter.py)
    """

    def __init__(
        self,
        source_tokenizer,
        target_tokenizer,
        source_vocabulary=None,
        target_vocabulary=None,
        maximum_source_length=None,
        maximum_target_length=None,
        return_tokens=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.maximum_source_length = maximum_source_length
        self.maximum_target_length = maximum_target_length
        self.return_tokens = return_tokens
        for side, tokenizer in (("source", source_tokenizer), ("target", target_tokenizer)):
            if _is_keras_hub(tokenizer) and tokenizer.compute_dtype != "string":
                raise ValueError(
                    f"TranslationPreprocessor: the {side} tokenizer, a keras-hub "
                    f"{type(tokenizer).__name__}, returns {tokenizer.compute_dtype} ids; build "
                    "it with dtype=\"string\": kerasnmt maps tokens to ids itself (VocabLookup)"
                )
        if source_vocabulary is None:
            source_vocabulary = _tokenizer_vocabulary(source_tokenizer, "source")
        if target_vocabulary is None:
            target_vocabulary = _tokenizer_vocabulary(target_tokenizer, "target")
        self.source_lookup = VocabLookup(
            source_vocabulary, side="source", maximum_length=maximum_source_length,
            name="source_lookup",
        )
        self.target_lookup = VocabLookup(
            target_vocabulary, side="target", maximum_length=maximum_target_length,
            name="target_lookup",
        )
        for side, tokenizer, vocabulary, lookup in (
            ("source", source_tokenizer, source_vocabulary, self.source_lookup),
            ("target", target_tokenizer, target_vocabulary, self.target_lookup),
        ):
            if isinstance(tokenizer, SentencePieceTokenizer):
                name = (os.fspath(vocabulary) if isinstance(vocabulary, (str, os.PathLike))
                        else f"the {side} vocabulary")
                check_byte_fallback_vocabulary(tokenizer, lookup.vocabulary, name)
        self.alignment_densifier = PharaohAlignment(name="alignment_densifier")
        self._target_tokenizer_ids = None
        if _is_keras_hub(target_tokenizer):  # it detokenizes its own ids, not tokens
            with tf.init_scope():
                tokens = _tokens_in_id_order(target_tokenizer)
                self._target_tokenizer_ids = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(
                        tf.constant(tokens, tf.string), tf.range(len(tokens), dtype=tf.int32)),
                    default_value=-1,
                )

    @classmethod
    def whitespace(cls, source_vocabulary, target_vocabulary=None, **kwargs):
        """A preprocessor of whitespace-tokenized text on both sides.

        Args:
            source_vocabulary: the source tokens (a list or a vocabulary file).
            target_vocabulary: the target tokens; default: the source ones.
            **kwargs: the other `TranslationPreprocessor` arguments.

        Examples:
            >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a"])
            >>> preprocessor.source_vocabulary == preprocessor.target_vocabulary
            True
        """
        if target_vocabulary is None:
            target_vocabulary = source_vocabulary
        return cls(WhitespaceTokenizer(), WhitespaceTokenizer(), source_vocabulary,
                   target_vocabulary, **kwargs)

    @property
    def source_vocabulary(self):
        """The source tokens in id order (`source_lookup.get_vocabulary()`)."""
        return self.source_lookup.get_vocabulary()

    @property
    def target_vocabulary(self):
        """The target tokens in id order (`target_lookup.get_vocabulary()`)."""
        return self.target_lookup.get_vocabulary()

    def call(self, source, target=None, alignment=None, training=None):
        if alignment is not None:
            training = False
        source_tokens = _tensor(self.source_tokenizer(source, training=training))
        features = self.source_lookup(source_tokens)
        if self.return_tokens:
            features["tokens"] = _padded_tokens(source_tokens, self.maximum_source_length)
        if target is None:
            if alignment is not None:
                raise ValueError("an alignment needs a target")
            return features
        target_tokens = _tensor(self.target_tokenizer(target, training=training))
        labels = self.target_lookup(target_tokens)
        if self.return_tokens:
            labels["tokens"] = _padded_tokens(target_tokens, self.maximum_target_length)
        if alignment is not None:
            # Checked against the full token counts, then cut like the tokens were.
            matrix = self.alignment_densifier(
                alignment, _token_count(source_tokens), _token_count(target_tokens)
            )
            labels["alignment"] = matrix[
                ..., : tf.shape(labels["ids_out"])[-1] - 1, : tf.shape(features["ids"])[-1]
            ]
        return features, labels

    def detokenize_target(self, ids):
        """Turns target ids (e.g. decoded by a sampler) back into text.

        Args:
            ids: integer ids, 1-D or `[B, L]`; reading stops at `</s>`, and `<s>`/`<blank>`
                are skipped (see `VocabLookup.invert`).

        Returns:
            A string scalar for 1-D ids, else `[B]` strings.
        """
        return self.detokenize_tokens(self.target_lookup.invert(ids))

    def detokenize_tokens(self, tokens):
        """Joins target tokens into text with `target_tokenizer.detokenize` (a keras-hub
        tokenizer detokenizes its own ids: the tokens it does not know are dropped).

        Args:
            tokens: 1-D string tokens, or `[B, None]` as a `tf.RaggedTensor`.

        Returns:
            A string scalar for 1-D tokens, else `[B]` strings.
        """
        if self._target_tokenizer_ids is not None:
            ids = self._target_tokenizer_ids.lookup(tokens)
            mask = tf.boolean_mask if ids.shape.rank == 1 else tf.ragged.boolean_mask
            tokens = mask(ids, ids >= 0)
        return _tensor(self.target_tokenizer.detokenize(tokens))

    def get_config(self):
        config = super().get_config()
        config.update(
            source_tokenizer=_serialized_tokenizer(self.source_tokenizer),
            target_tokenizer=_serialized_tokenizer(self.target_tokenizer),
            source_vocabulary=self.source_vocabulary,
            target_vocabulary=self.target_vocabulary,
            maximum_source_length=self.maximum_source_length,
            maximum_target_length=self.maximum_target_length,
            return_tokens=self.return_tokens,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("source_tokenizer", "target_tokenizer"):
            config[key] = _deserialized_tokenizer(config[key])
        return cls(**config)


def _is_keras_hub(tokenizer):
    """Whether `tokenizer` is one of keras-hub's tokenizers: a `keras_hub.tokenizers.Tokenizer`
    that is not kerasnmt's (which are, but take tokens in `detokenize`, return tensors and
    keep their models in their configs)."""
    return (isinstance(tokenizer, keras_hub.tokenizers.Tokenizer)
            and not isinstance(tokenizer, Tokenizer))


def _serialized_tokenizer(tokenizer):
    """The tokenizer's Keras config, self-contained: the fields keras-hub saves as asset
    files instead (`KERAS_HUB_ASSET_FIELDS`) are embedded, a SentencePiece model in base64."""
    serialized = keras.saving.serialize_keras_object(tokenizer)
    if _is_keras_hub(tokenizer):
        config = serialized["config"]
        for field in KERAS_HUB_ASSET_FIELDS:
            value = getattr(tokenizer, field, None)
            if value is not None and config.get(field) is None:  # a byte-pair config omits them
                config[field] = (base64.b64encode(value).decode("ascii") if field == "proto"
                                 else value)
    return serialized


def _deserialized_tokenizer(serialized):
    """The tokenizer of a `_serialized_tokenizer` config."""
    config = serialized.get("config", {})
    if isinstance(config.get("proto"), str) and serialized["module"].startswith("keras_hub"):
        serialized = dict(serialized, config=dict(config,
                                                  proto=base64.b64decode(config["proto"])))
    return keras.saving.deserialize_keras_object(serialized)


def _tokens_in_id_order(tokenizer):
    """A keras-hub tokenizer's tokens as a list, in id order (a byte-pair tokenizer's
    `get_vocabulary()` is its vocabulary dict's keys, in the dict's order)."""
    return [tokenizer.id_to_token(token_id) for token_id in range(tokenizer.vocabulary_size())]


def _tokenizer_vocabulary(tokenizer, side):
    """The vocabulary of a keras-hub tokenizer that has one (`get_vocabulary()`; kerasnmt's
    `SentencePieceTokenizer` has, its `WhitespaceTokenizer` has not), checked to start with
    kerasnmt's special tokens."""
    vocabulary = None
    if isinstance(tokenizer, keras_hub.tokenizers.Tokenizer):
        try:
            vocabulary = _tokens_in_id_order(tokenizer)
        except NotImplementedError:
            pass
    if vocabulary is None:
        raise ValueError(f"TranslationPreprocessor: {side}_vocabulary is needed: the {side} "
                         f"tokenizer ({type(tokenizer).__name__}) has no vocabulary of its own")
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if token_id >= len(vocabulary) or vocabulary[token_id] != token:
            where = (f"it is at id {vocabulary.index(token)}" if token in vocabulary
                     else "it has no such token")
            raise ValueError(
                f"TranslationPreprocessor: the vocabulary of the {side} tokenizer "
                f"({type(tokenizer).__name__}) needs {token!r} at id {token_id} "
                f"(<blank>, <s>, </s> = 0, 1, 2), but {where}; pass a {side}_vocabulary"
            )
    return vocabulary


def _tensor(strings):
    """Tokens or text as a tensor: keras-hub's tokenizers return Python lists eagerly."""
    if isinstance(strings, (tf.Tensor, tf.RaggedTensor)):
        return strings
    return tf.ragged.constant(strings, dtype=tf.string)


def _token_count(tokens):
    if isinstance(tokens, tf.RaggedTensor):
        return tokens.row_lengths()
    return tf.size(tokens)


def _padded_tokens(tokens, maximum_length):
    """Tokens cut to `maximum_length`; a ragged batch becomes dense, padded with ""."""
    if maximum_length is not None:
        tokens = tokens[..., :maximum_length]
    if isinstance(tokens, tf.RaggedTensor):
        return tokens.to_tensor("")
    return tokens
