"""Splits raw text into SentencePiece pieces in the TensorFlow graph."""

import base64
import os

import keras
import sentencepiece
import tensorflow as tf
import tensorflow_text

from kerasnmt.data.sentencepiece_trainer import BYTE_PIECES
from kerasnmt.layers.preprocessing_layer import drop_padding_tokens
from kerasnmt.layers.tokenizer import Tokenizer


@keras.saving.register_keras_serializable(package="kerasnmt")
class SentencePieceTokenizer(Tokenizer):
    """Splits raw strings into SentencePiece pieces (strings) and joins pieces back into text.

    Tokenization runs in-graph through `tensorflow_text.SentencepieceTokenizer`, so the layer
    works eagerly (returning tensors), inside `tf.data`, inside a `keras.Model` and in an
    exported SavedModel (which then needs `import tensorflow_text` to load in Python; TF Serving
    links these ops). Pieces, not ids, come out: a `VocabLookup` maps them to the ids of an
    OpenNMT-format vocabulary, which keeps `<blank>`, `<s>`, `</s>` at 0, 1, 2 whatever the
    SentencePiece model's own numbering.

    It is a `keras_hub.tokenizers.Tokenizer` of string tokens that returns tensors, eagerly
    too (see `kerasnmt.layers.tokenizer.Tokenizer`); `get_vocabulary`, `vocabulary_size`,
    `id_to_token` and `token_to_id` give the SentencePiece model's own pieces and ids.
    keras-hub's `SentencePieceTokenizer(dtype="string")` tokenizes alike, but returns Python
    lists eagerly, detokenizes ids (eagerly) and keeps its model out of its config.

    The serialized model is embedded in `get_config()` (base64), so `from_config` alone rebuilds
    a working layer and a `.keras` file is self-contained: no asset file to keep next to it.

    A model trained with byte fallback (`kerasnmt build-vocab --sentencepiece` trains one by
    default; `byte_fallback` tells) encodes a character it never saw as the pieces of its
    UTF-8 bytes, `<0xE6>`, `<0x9D>`, ..., and `detokenize` joins them back into the
    character: the SentencePiece op of `tensorflow_text` does both, in the graph and in a
    SavedModel. Detokenized text is the NFKC-normalized input (SentencePiece's default
    normalization): a combining mark that has a precomposed form comes back composed.

    Set seeds (`keras.utils.set_random_seed`, `tf.random.set_seed`) before creating the
    layer: they reset TensorFlow's eager kernel cache, which holds the SentencePiece model
    of `tensorflow_text`, and a layer created before then fails with "Resource
    .../SentencepieceOp/... does not exist" (tensorflow/text#570).

    Args:
        model: a path to a SentencePiece `.model` file, or the serialized model as `bytes`.
        sampling_alpha: when called with `training=True`, sample each sentence's
            segmentation instead of taking the best one: BPE-dropout with this drop
            probability for a BPE model (Provilkov et al., 2020), subword regularization
            with this smoothing over all segmentations for a unigram model (Kudo, 2018), as
            SentencePiece's `enable_sampling=True, alpha=..., nbest_size=-1`. `None` (the
            default) segments deterministically always. Without `training=True` (in
            evaluation, in translation, in an exported model) segmentation is deterministic.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        inputs: a string scalar (one sentence) or a 1-D string tensor `[B]` (a batch). Empty and
            whitespace-only strings give zero pieces.
        training: with `sampling_alpha`, sample the segmentation (see above).

    Returns:
        For a scalar, a 1-D string tensor of pieces; for `[B]`, a string `tf.RaggedTensor`
        `[B, None]`.

    Examples:
        >>> import io, sentencepiece
        >>> model = io.BytesIO()
        >>> sentencepiece.SentencePieceTrainer.train(
        ...     sentence_iterator=iter(["he can", "door open", "I like it"] * 5),
        ...     model_writer=model, model_type="word", vocab_size=10, minloglevel=2)
        >>> tokenizer = SentencePieceTokenizer(model.getvalue())
        >>> [piece.decode() for piece in tokenizer("he can").numpy()]
        ['▁he', '▁can']
        >>> tokenizer.detokenize(tokenizer(["door open", "I like it"])).numpy().tolist()
        [b'door open', b'I like it']
        >>> tokenizer.vocabulary_size(), tokenizer.token_to_id("▁can"), tokenizer.id_to_token(0)
        (10, 4, '<unk>')

        With byte fallback, an unseen character becomes its bytes and comes back whole:

        >>> model = io.BytesIO()
        >>> sentencepiece.SentencePieceTrainer.train(
        ...     sentence_iterator=iter(["he can", "door open", "I like it"] * 5),
        ...     model_writer=model, vocab_size=280, byte_fallback=True,
        ...     hard_vocab_limit=False, minloglevel=2)
        >>> tokenizer = SentencePieceTokenizer(model.getvalue())
        >>> tokenizer.byte_fallback
        True
        >>> [piece.decode() for piece in tokenizer("he can ë").numpy()][-3:]
        ['▁', '<0xC3>', '<0xAB>']
        >>> tokenizer.detokenize(tokenizer("he can ë")).numpy().decode()
        'he can ë'

    References:
        [Kudo and Richardson, 2018](https://arxiv.org/abs/1808.06226);
        [Kudo, 2018](https://arxiv.org/abs/1804.10959) (subword regularization);
        [Provilkov et al., 2020](https://arxiv.org/abs/1910.13267) (BPE-dropout)
    """

    def __init__(self, model, sampling_alpha=None, **kwargs):
        super().__init__(**kwargs)
        if sampling_alpha is not None and not 0.0 < sampling_alpha < 1.0:
            raise ValueError(
                f"SentencePieceTokenizer: sampling_alpha must be in (0, 1) or None, got "
                f"{sampling_alpha}"
            )
        self.model = model
        self.sampling_alpha = sampling_alpha
        self.proto, self._processor = _read_model(model)
        self.byte_fallback = all(
            self._processor.IsByte(self._processor.piece_to_id(piece)) for piece in BYTE_PIECES
        )
        self._sentencepiece = tensorflow_text.SentencepieceTokenizer(
            self.proto, out_type=tf.string
        )
        self._sampling = None
        if sampling_alpha is not None:
            self._sampling = tensorflow_text.SentencepieceTokenizer(
                self.proto, out_type=tf.string, nbest_size=-1, alpha=sampling_alpha
            )

    def call(self, inputs, training=None):
        return self.tokenize(inputs, training=training)

    def tokenize(self, inputs, training=None):
        """Splits `inputs` into pieces (what calling the layer does); with `training=True`
        and `sampling_alpha`, into a sampled segmentation."""
        inputs = self.strings_tensor(inputs)
        if training and self._sampling is not None:
            return self._sampling.tokenize(inputs)
        return self._sentencepiece.tokenize(inputs)

    def detokenize(self, pieces):
        """Joins pieces back into text (`▁` becomes a space, the leading one is dropped);
        shapes and padding as `Tokenizer` says."""
        return self._sentencepiece.detokenize(drop_padding_tokens(pieces))

    def get_vocabulary(self):
        """The model's pieces, in id order."""
        return self._processor.id_to_piece(list(range(self.vocabulary_size())))

    def vocabulary_size(self):
        """The number of pieces of the model."""
        return self._processor.vocab_size()

    def id_to_token(self, id):
        """The piece of id `id`; an id outside `[0, vocabulary_size())` is refused."""
        if not 0 <= id < self.vocabulary_size():
            raise ValueError(
                f"SentencePieceTokenizer: id {id} is not in [0, {self.vocabulary_size() - 1}]"
            )
        return self._processor.id_to_piece(int(id))

    def token_to_id(self, token):
        """The id of piece `token` (`str` or `bytes`); a piece the model does not have gives
        the unknown piece's id, as SentencePiece's `piece_to_id` does."""
        return self._processor.piece_to_id(token)

    @property
    def model_name(self):
        """The model's file, for messages (or a phrase when the model was given as bytes)."""
        if isinstance(self.model, bytes):
            return "the SentencePiece model given as bytes"
        return os.fspath(self.model)

    def get_config(self):
        config = super().get_config()
        config["model"] = base64.b64encode(self.proto).decode("ascii")
        config["sampling_alpha"] = self.sampling_alpha
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["model"] = base64.b64decode(config["model"])
        return cls(**config)


def check_byte_fallback_vocabulary(tokenizer, vocabulary, vocabulary_name):
    """Refuses a vocabulary and a SentencePiece model that disagree on byte fallback.

    A byte-fallback model needs every byte piece in the vocabulary (a missing one would
    turn the bytes of unseen characters into unknown ids); a vocabulary that holds the
    byte pieces needs a model that produces and decodes them (one without byte fallback
    would give unknown characters as unknown tokens and never use those ids).

    Args:
        tokenizer: a `SentencePieceTokenizer`.
        vocabulary: the tokens of the vocabulary paired with it.
        vocabulary_name: the vocabulary's file, or a phrase, for the message.

    Raises:
        ValueError: naming the model file and the vocabulary.

    Examples:
        >>> import io, sentencepiece
        >>> model = io.BytesIO()
        >>> sentencepiece.SentencePieceTrainer.train(
        ...     sentence_iterator=iter(["he can", "door open"] * 5), model_writer=model,
        ...     model_type="word", vocab_size=7, minloglevel=2)
        >>> vocabulary = ["<blank>", "<s>", "</s>"] + list(BYTE_PIECES) + ["▁he"]
        >>> check_byte_fallback_vocabulary(
        ...     SentencePieceTokenizer(model.getvalue()), vocabulary, "vocab.txt")
        Traceback (most recent call last):
        ...
        ValueError: the SentencePiece model given as bytes has no byte fallback, but vocab.txt holds the 256 byte pieces <0x00> ... <0xFF> of a model trained with it: use the model built with this vocabulary (build-vocab --sentencepiece writes OUTPUT.model beside OUTPUT.vocab)
    """
    present = set(vocabulary)
    missing = [piece for piece in BYTE_PIECES if piece not in present]
    if tokenizer.byte_fallback and missing:
        raise ValueError(
            f"{tokenizer.model_name} encodes unseen characters as byte pieces (byte "
            f"fallback), but {vocabulary_name} lacks {len(missing)} of the "
            f"{len(BYTE_PIECES)} (e.g. {missing[0]}), whose bytes would become unknown: use "
            "the vocabulary built with this model (build-vocab --sentencepiece writes "
            "OUTPUT.vocab beside OUTPUT.model)"
        )
    if not tokenizer.byte_fallback and not missing:
        raise ValueError(
            f"{tokenizer.model_name} has no byte fallback, but {vocabulary_name} holds the "
            f"{len(BYTE_PIECES)} byte pieces {BYTE_PIECES[0]} ... {BYTE_PIECES[-1]} of a "
            "model trained with it: use the model built with this vocabulary "
            "(build-vocab --sentencepiece writes OUTPUT.model beside OUTPUT.vocab)"
        )


def _read_model(model):
    """The serialized SentencePiece model from bytes or a file, and its
    `sentencepiece.SentencePieceProcessor` (which checks that it parses)."""
    if isinstance(model, bytes):
        proto, origin = model, "the given bytes"
    else:
        path = os.fspath(model)
        with tf.io.gfile.GFile(path, "rb") as file:
            proto, origin = file.read(), path
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
    except RuntimeError as error:
        raise ValueError(f"{origin}: not a SentencePiece model ({error})") from None
    return proto, processor
