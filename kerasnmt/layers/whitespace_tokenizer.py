"""Splits text on whitespace, for corpora that are already tokenized."""

import keras
import tensorflow as tf

from kerasnmt.layers.preprocessing_layer import drop_padding_tokens
from kerasnmt.layers.tokenizer import Tokenizer


@keras.saving.register_keras_serializable(package="kerasnmt")
class WhitespaceTokenizer(Tokenizer):
    """Splits strings into tokens on runs of whitespace, and joins tokens back with spaces.

    This is the tokenizer of pre-tokenized corpora (OpenNMT-tf's default `SpaceTokenizer`):
    leading, trailing and repeated whitespace (spaces, tabs, newlines) produce no token, so an
    empty or whitespace-only string gives zero tokens. Only core TensorFlow ops are used, so a
    SavedModel holding this layer loads without extra op libraries.

    It is a `keras_hub.tokenizers.Tokenizer` of string tokens that returns tensors, eagerly
    too (see `kerasnmt.layers.tokenizer.Tokenizer`). It has no vocabulary, its tokens being
    whatever words the text has: `get_vocabulary`, `vocabulary_size`, `id_to_token` and
    `token_to_id` raise `NotImplementedError`, as keras-hub's base `Tokenizer` does for a
    tokenizer without one; a `VocabLookup` gives the ids.

    Args:
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        inputs: a string scalar (one sentence) or a 1-D string tensor `[B]` (a batch).

    Returns:
        For a scalar, a 1-D string tensor of tokens; for `[B]`, a string `tf.RaggedTensor`
        `[B, None]`.

    Examples:
        >>> tokenizer = WhitespaceTokenizer()
        >>> tokenizer(" ▁he  ▁can\\t").numpy().tolist() == ["▁he".encode(), "▁can".encode()]
        True
        >>> tokenizer(["a b c", "  "]).to_list()
        [[b'a', b'b', b'c'], []]
        >>> tokenizer.detokenize([["a", "b", ""], ["c", "", ""]]).numpy().tolist()
        [b'a b', b'c']
        >>> import keras_hub
        >>> isinstance(tokenizer, keras_hub.tokenizers.Tokenizer)
        True

    Reference:
        [OpenNMT-tf `SpaceTokenizer`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/tokenizers/tokenizer.py)
    """

    def tokenize(self, inputs):
        """Splits `inputs` on whitespace (what calling the layer does)."""
        inputs = self.strings_tensor(inputs)
        return tf.strings.split(inputs)

    def detokenize(self, tokens):
        """Joins tokens with single spaces; shapes and padding as `Tokenizer` says."""
        tokens = drop_padding_tokens(tokens)
        return tf.strings.reduce_join(tokens, axis=-1, separator=" ")

    def get_vocabulary(self):
        raise _no_vocabulary("get_vocabulary")

    def vocabulary_size(self):
        raise _no_vocabulary("vocabulary_size")

    def id_to_token(self, id):
        raise _no_vocabulary("id_to_token")

    def token_to_id(self, token):
        raise _no_vocabulary("token_to_id")


def _no_vocabulary(method):
    return NotImplementedError(
        f"WhitespaceTokenizer has no vocabulary, so no {method}(): its tokens are the words "
        "of the text; map them to ids with a VocabLookup"
    )
