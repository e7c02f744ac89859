"""One Transformer encoder layer: self-attention then feed-forward, each in a residual block."""

import keras

from kerasnmt.layers.dropout import Dropout
from kerasnmt.layers.feed_forward_network import FeedForwardNetwork
from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention

# kerasnmt's layer normalization epsilon (OpenNMT-tf 1.x's); OpenNMT-tf 2.x's is Keras'
# default, 1e-3 (`layer_norm_epsilon`).
LAYER_NORM_EPSILON = 1e-6

# The arguments of `TransformerEncoderLayer` (Keras' own aside), which the encoder and decoder
# stacks and the `TransformerBackbone` take as well and pass on to their layers.
LAYER_ARGUMENTS = (
    "num_units", "num_heads", "ffn_inner_dim", "dropout", "attention_dropout", "ffn_dropout",
    "ffn_activation", "maximum_relative_position", "pre_norm", "layer_norm_epsilon",
)


def keep_layer_arguments(layer, arguments):
    """Keeps the `LAYER_ARGUMENTS` of `arguments` as attributes of `layer`, the activation as
    a function (`keras.activations.get`).

    Args:
        layer: a Transformer layer, a stack of them or a backbone.
        arguments: a mapping with the `LAYER_ARGUMENTS` among its keys: the `locals()` of an
            `__init__` that takes them.

    Examples:
        >>> class Options:
        ...     def __init__(self, num_units, num_heads, ffn_inner_dim, dropout=0.1,
        ...                  attention_dropout=0.1, ffn_dropout=0.1, ffn_activation="relu",
        ...                  maximum_relative_position=None, pre_norm=True,
        ...                  layer_norm_epsilon=LAYER_NORM_EPSILON):
        ...         keep_layer_arguments(self, locals())
        >>> options = Options(8, 2, 16, dropout=0.3)
        >>> options.dropout, options.ffn_activation is keras.activations.relu
        (0.3, True)
    """
    for name in LAYER_ARGUMENTS:
        setattr(layer, name, arguments[name])
    layer.ffn_activation = keras.activations.get(layer.ffn_activation)


def layer_arguments(layer):
    """The `LAYER_ARGUMENTS` that `layer` keeps (see `keep_layer_arguments`), by name.

    Examples:
        >>> arguments = layer_arguments(TransformerEncoderLayer(8, 2, 16, pre_norm=False))
        >>> arguments["ffn_inner_dim"], arguments["pre_norm"]
        (16, False)
    """
    return {name: getattr(layer, name) for name in LAYER_ARGUMENTS}


def layer_config(layer):
    """`layer_arguments` as a Keras config holds them: the activation serialized.

    Examples:
        >>> layer_config(TransformerEncoderLayer(8, 2, 16, ffn_activation="gelu"))["ffn_activation"]
        'gelu'
    """
    return dict(layer_arguments(layer),
                ffn_activation=keras.activations.serialize(layer.ffn_activation))


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
        keep_layer_arguments(self, locals())
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
        config.update(layer_config(self))
        return config
