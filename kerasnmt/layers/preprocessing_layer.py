"""The base of kerasnmt's string layers (tokenizers, vocabulary lookup, alignments)."""

import keras
import tensorflow as tf


class PreprocessingLayer(keras.layers.Layer):
    """A layer that takes strings (Python, NumPy or tensors) and runs only TensorFlow ops.

    Keras converts positional inputs to floating tensors and refuses Python strings; string
    layers convert their own inputs instead (as keras-hub's preprocessing layers do). They
    never run under XLA (`supports_jit = False`) and have no weights.

    Args:
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Examples:
        >>> import tensorflow as tf
        >>> class Lowercase(PreprocessingLayer):
        ...     def call(self, text):
        ...         return tf.strings.lower(tf.convert_to_tensor(text))
        >>> Lowercase()(["Hello World", "NMT"]).numpy().tolist()
        [b'hello world', b'nmt']
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_jit = False
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def strings_tensor(self, inputs, items="strings"):
        """`inputs` as a string tensor, checked to be a scalar or a 1-D batch, what string
        layers take (else a `ValueError` naming the layer's class, `items` and the shape).

        Examples:
            >>> from kerasnmt.layers import WhitespaceTokenizer
            >>> WhitespaceTokenizer().strings_tensor(["a b", "c"]).shape
            TensorShape([2])
        """
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if inputs.shape.rank not in (0, 1):
            raise ValueError(
                f"{type(self).__name__} expects a string scalar or a 1-D batch of {items}, "
                f"got shape {inputs.shape}"
            )
        return inputs


def drop_padding_tokens(tokens):
    """Returns tokens as a 1-D tensor or a `[B, None]` ragged tensor without "" padding.

    Args:
        tokens: 1-D tokens, or `[B, L]` tokens, dense (padded with "") or ragged.

    Examples:
        >>> drop_padding_tokens([["a", "b", ""], ["c", "", ""]]).to_list()
        [[b'a', b'b'], [b'c']]
        >>> drop_padding_tokens(["a", "", "b"]).numpy().tolist()
        [b'a', b'b']
    """
    if not isinstance(tokens, tf.RaggedTensor):
        tokens = tf.convert_to_tensor(tokens, dtype=tf.string)
    if tokens.shape.rank not in (1, 2):
        raise ValueError(f"expected 1-D or 2-D tokens, got shape {tokens.shape}")
    keep = tf.not_equal(tokens, "")
    if tokens.shape.rank == 1:
        return tf.boolean_mask(tokens, keep)
    return tf.ragged.boolean_mask(tokens, keep)
