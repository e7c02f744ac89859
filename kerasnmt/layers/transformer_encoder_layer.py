"""One Transformer encoder layer: self-attention then feed-forward, each in a residual block."""

import keras

from kerasnmt.layers.dropout import Dropout
from kerasnmt.layers.feed_forward_network import FeedForwardNetwork
from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention

# kerasnmt's layer normalization epsilon (OpenNMT-tf 1.x's); OpenNMT-tf 2.x's is Keras'
# default, 1e-3 (`layer_norm_epsilon`).
LAYER_NORM_EPSILON = 1e-6


def residual(inputs, sublayer, norm, dropout, pre_norm, training):
    """`inputs + dropout(sublayer(norm(inputs)))` (pre-norm) or `norm(inputs + dropout(sublayer(inputs)))`.

    `sublayer` returns the sublayer output, or a tuple whose first item is that output; the
    other items are passed through. Returns the same structure with the residual output first.
    """
    outputs = sublayer(norm(inputs) if pre_norm else inputs)
    extras = ()
    if isinstance(outputs, tuple):
        outputs, extras = outputs[0], outputs[1:]
    outputs = inputs + dropout(outputs, training=training)
    if not pre_norm:
        outputs = norm(outputs)
    return (outputs,) + extras if extras else outputs


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerEncoderLayer(keras.layers.Layer):
    """A Transformer encoder layer with optional relative position self-attention.

    Pre-norm (default, OpenNMT-tf's default): `x + dropout(sublayer(layer_norm(x)))`;
    post-norm: `layer_norm(x + dropout(sublayer(x)))`. The sublayers are
    `RelativeMultiHeadAttention` self-attention over the unpadded positions, then a
    `FeedForwardNetwork`.

    Args:
        num_units: model dimension `D` (inputs and outputs).
        num_heads: attention heads; `num_units` must be a multiple of it.
        ffn_inner_dim: inner size of the feed-forward network.
        dropout: dropout on each sublayer output before the residual sum.
        attention_dropout: dropout on the attention weights.
        ffn_dropout: dropout on the feed-forward inner activations.
        ffn_activation: feed-forward activation.
        maximum_relative_position: relative position clipping distance, or `None`.
        pre_norm: layer normalization before (True) or after (False) each sublayer.
        layer_norm_epsilon: the epsilon of the layer normalizations (1e-6; OpenNMT-tf
            2.x's is 1e-3).
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: `[B, S, D]`.
        padding_mask: boolean `[B, S]`, True on real (non-padding) positions.
        training: enables dropout.

    Returns:
        `[B, S, D]`.

    Examples:
        >>> layer = TransformerEncoderLayer(num_units=8, num_heads=2, ffn_inner_dim=16,
        ...                                 maximum_relative_position=4)
        >>> layer(keras.ops.ones([2, 5, 8]), keras.ops.array([[1] * 5, [1] * 3 + [0] * 2]) > 0).shape
        TensorShape([2, 5, 8])

    Reference:
        [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762); [Shaw et al.,
        2018](https://arxiv.org/abs/1803.02155); [OpenNMT-tf
        `SelfAttentionEncoderLayer`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/layers/transformer.py)
    """

    def __init__(
        self,
        num_units,
        num_heads,
        ffn_inner_dim,
        dropout=0.1,
        attention_dropout=0.1,
        ffn_dropout=0.1,
        ffn_activation="relu",
        maximum_relative_position=None,
        pre_norm=True,
        layer_norm_epsilon=LAYER_NORM_EPSILON,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if num_units % num_heads != 0:
            raise ValueError(
                f"{type(self).__name__}: num_units ({num_units}) must be a multiple of "
                f"num_heads ({num_heads})"
            )
        self.num_units = num_units
        self.num_heads = num_heads
        self.ffn_inner_dim = ffn_inner_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.ffn_dropout = ffn_dropout
        self.ffn_activation = keras.activations.get(ffn_activation)
        self.maximum_relative_position = maximum_relative_position
        self.pre_norm = pre_norm
        self.layer_norm_epsilon = layer_norm_epsilon
        self.supports_jit = True
        policy = self.dtype_policy
        self.self_attention = RelativeMultiHeadAttention(
            num_heads,
            num_units // num_heads,
            maximum_relative_position=maximum_relative_position,
            dropout=attention_dropout,
            dtype=policy,
            name="self_attention",
        )
        self.self_attention_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="self_attention_norm"
        )
        self.ffn = FeedForwardNetwork(
            ffn_inner_dim, num_units, ffn_dropout, self.ffn_activation, dtype=policy, name="ffn"
        )
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ffn_norm"
        )
        self.output_dropout = Dropout(dropout, dtype=policy)

    def build(self, inputs_shape):
        shape = (None, None, self.num_units)
        self.self_attention.build(shape)
        self.self_attention_norm.build(shape)
        self.ffn.build(shape)
        self.ffn_norm.build(shape)
        self.built = True

    def call(self, inputs, padding_mask=None, training=None):
        outputs = residual(
            inputs,
            lambda x: self.self_attention(x, attention_mask=padding_mask, training=training),
            self.self_attention_norm,
            self.output_dropout,
            self.pre_norm,
            training,
        )
        return self._feed_forward(outputs, training)

    def _feed_forward(self, inputs, training):
        """The feed-forward residual block, the last of every layer."""
        return residual(
            inputs,
            lambda x: self.ffn(x, training=training),
            self.ffn_norm,
            self.output_dropout,
            self.pre_norm,
            training,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            num_units=self.num_units,
            num_heads=self.num_heads,
            ffn_inner_dim=self.ffn_inner_dim,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            ffn_dropout=self.ffn_dropout,
            ffn_activation=keras.activations.serialize(self.ffn_activation),
            maximum_relative_position=self.maximum_relative_position,
            pre_norm=self.pre_norm,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config
