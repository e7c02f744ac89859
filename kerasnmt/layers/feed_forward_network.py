"""The Transformer's position-wise feed-forward network."""

import keras

from kerasnmt.layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="kerasnmt")
class FeedForwardNetwork(keras.layers.Layer):
    """Two dense layers with an activation and dropout between: `W2 · dropout(act(W1 · x))`.

    Args:
        inner_dim: units of the inner layer.
        output_dim: units of the outer layer.
        dropout: dropout rate on the inner activations (OpenNMT-tf's `ffn_dropout`).
        activation: the inner activation (a Keras activation name or function).
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: `[..., D]` float tensor.
        training: enables dropout.

    Returns:
        `[..., output_dim]`.

    Examples:
        >>> FeedForwardNetwork(inner_dim=8, output_dim=4)(keras.ops.ones([2, 3, 4])).shape
        TensorShape([2, 3, 4])

    Reference:
        [Vaswani et al., 2017, Attention Is All You Need](https://arxiv.org/abs/1706.03762)
    """

    def __init__(self, inner_dim, output_dim, dropout=0.0, activation="relu", **kwargs):
        super().__init__(**kwargs)
        self.inner_dim = inner_dim
        self.output_dim = output_dim
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.supports_jit = True
        self.inner = keras.layers.Dense(
            inner_dim, activation=self.activation, dtype=self.dtype_policy, name="inner"
        )
        self.inner_dropout = Dropout(dropout, dtype=self.dtype_policy)
        self.outer = keras.layers.Dense(output_dim, dtype=self.dtype_policy, name="outer")

    def build(self, inputs_shape):
        self.inner.build(inputs_shape)
        self.outer.build(tuple(inputs_shape[:-1]) + (self.inner_dim,))
        self.built = True

    def call(self, inputs, training=None):
        return self.outer(self.inner_dropout(self.inner(inputs), training=training))

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            inner_dim=self.inner_dim,
            output_dim=self.output_dim,
            dropout=self.dropout,
            activation=keras.activations.serialize(self.activation),
        )
        return config
