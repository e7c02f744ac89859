"""Sentences given from Python (a list, a NumPy array, a string tensor) as one 1-D string
tensor, or a clear error."""

import numpy as np
import tensorflow as tf


def string_array(values, name):
    """`values` as a 1-D string tensor; a `ValueError` naming `name` for anything else.

    Examples:
        >>> string_array(["a b", b"c"], "x").numpy().tolist()
        [b'a b', b'c']
        >>> string_array([["a"]], "x")
        Traceback (most recent call last):
        ...
        ValueError: Translator: x must be a 1-D array or list of sentences (str or bytes), got list of shape (1, 1)
    """
    if isinstance(values, tf.Tensor):
        if values.dtype != tf.string or values.shape.rank != 1:
            raise ValueError(f"Translator: {name} must be a 1-D string tensor, got {values}")
        return values
    array = np.asarray(values, dtype=object)
    if array.ndim != 1 or not all(isinstance(v, (str, bytes)) for v in array):
        raise ValueError(
            f"Translator: {name} must be a 1-D array or list of sentences (str or bytes), "
            f"got {type(values).__name__} of shape {array.shape}"
        )
    return tf.constant(array.tolist(), dtype=tf.string)
