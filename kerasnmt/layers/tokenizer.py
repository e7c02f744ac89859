"""The base of kerasnmt's tokenizers: keras-hub tokenizers of string tokens, as tensors."""

import keras_hub

from kerasnmt.layers.preprocessing_layer import PreprocessingLayer


class Tokenizer(PreprocessingLayer, keras_hub.tokenizers.Tokenizer):
    """A `keras_hub.tokenizers.Tokenizer` whose tokens are strings and whose outputs are
    TensorFlow tensors, eagerly as well.

    Subclasses implement `tokenize` (calling the layer tokenizes) and `detokenize`, which
    takes tokens (strings, as `tokenize` gives them), not ids: the ids are a `VocabLookup`'s.
    `detokenize` takes 1-D tokens, or `[B, L]` tokens as a `tf.RaggedTensor` or a dense
    tensor, skips the empty string (the padding of `padded_batch` or `to_tensor()`), and
    returns a string scalar for 1-D tokens, else a `[B]` string tensor.
    The dtype is always `"string"`, keras-hub's mark of a tokenizer of string tokens.

    keras-hub's tokenizers return Python lists when called eagerly (`tf.Tensor`s and
    `tf.RaggedTensor`s only in `tf.function` and `tf.data`); kerasnmt's return tensors
    everywhere, as they did before they were keras-hub tokenizers, which is also what
    keras-hub's own preprocessing layers get from a tokenizer when they call it inside their
    `call`. A keras-hub layer called eagerly on these tensors may take its Python path,
    which expects lists of `str`: run it in `tf.data` or `tf.function`, as kerasnmt's
    pipelines do.

    Args:
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`); a `dtype` is ignored.

    Examples:
        >>> import keras_hub, tensorflow as tf
        >>> class Characters(Tokenizer):
        ...     def tokenize(self, inputs):
        ...         return tf.strings.unicode_split(inputs, "UTF-8")
        ...     def detokenize(self, tokens):
        ...         return tf.strings.reduce_join(tokens, axis=-1)
        >>> tokenizer = Characters()
        >>> isinstance(tokenizer, keras_hub.tokenizers.Tokenizer), tokenizer.compute_dtype
        (True, 'string')
        >>> tokenizer(["ab", "c"]).to_list()
        [[b'a', b'b'], [b'c']]
        >>> tokenizer.detokenize(tokenizer("abc")).numpy()
        b'abc'
    """

    def __init__(self, **kwargs):
        kwargs["dtype"] = "string"
        super().__init__(**kwargs)

    def call(self, inputs):
        return self.tokenize(inputs)
