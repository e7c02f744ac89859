"""The Transformer encoder: a stack of `TransformerEncoderLayer` over embedded tokens."""

import keras

from kerasnmt.layers.dropout import Dropout
from kerasnmt.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding
from kerasnmt.layers.transformer_encoder_layer import (
    LAYER_NORM_EPSILON,
    TransformerEncoderLayer,
    keep_layer_arguments,
    layer_arguments,
    layer_config,
)


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerEncoder(keras.layers.Layer):
    """Encodes embedded source tokens with a stack of self-attention layers, as OpenNMT-tf does.

    The embeddings are scaled by `sqrt(num_units)`, given sinusoidal position encodings when
    `maximum_relative_position` is `None` (relative position representations replace them
    otherwise), passed through dropout and `num_layers` `TransformerEncoderLayer`s, and
    layer-normalized at the end when `pre_norm`.

    Args:
        num_layers: number of layers.
        num_units: model dimension `D`.
        num_heads: attention heads.
        ffn_inner_dim: inner size of the feed-forward networks.
        dropout: dropout on the scaled embeddings and on each sublayer output.
        attention_dropout: dropout on the attention weights.
        ffn_dropout: dropout on the feed-forward inner activations.
        ffn_activation: feed-forward activation.
        maximum_relative_position: relative position clipping distance, or `None` for
            absolute sinusoidal positions.
        pre_norm: pre-norm (True) or post-norm (False) residual blocks.
        layer_norm_epsilon: the epsilon of the layer normalizations (1e-6; OpenNMT-tf
            2.x's is 1e-3).
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        inputs: `[B, S, D]` source embeddings.
        padding_mask: boolean `[B, S]`, True on real (non-padding) positions.
        training: enables dropout.

    Returns:
        `[B, S, D]` encoder outputs.

    Examples:
        >>> encoder = TransformerEncoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
        ...                              maximum_relative_position=4)
        >>> encoder(keras.ops.ones([2, 5, 8])).shape
        TensorShape([2, 5, 8])

    Reference:
        [OpenNMT-tf `SelfAttentionEncoder`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/encoders/self_attention_encoder.py)
    """

    # The class of the stacked layers, which take `LAYER_ARGUMENTS`.
    layer_class = TransformerEncoderLayer

    def __init__(
        self,
        num_layers,
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
        self.num_layers = num_layers
        keep_layer_arguments(self, locals())
        self.supports_jit = True
        policy = self.dtype_policy
        self.position_encoding = (
            SinusoidalPositionEncoding(dtype=policy) if maximum_relative_position is None else None
        )
        self.input_dropout = Dropout(dropout, dtype=policy)
        # One attribute per layer, not a list: TensorFlow checkpoints (tf.train.Checkpoint)
        # do not follow Keras' tracked lists.
        for i in range(num_layers):
            setattr(self, f"layer_{i}", self.layer_class(
                **layer_arguments(self), dtype=policy, name=f"layer_{i}"))
        self.output_norm = (
            keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=policy, name="output_norm"
            )
            if pre_norm
            else None
        )

    @property
    def transformer_layers(self):
        """The `num_layers` layers, first to last."""
        return [getattr(self, f"layer_{i}") for i in range(self.num_layers)]

    def build(self, inputs_shape):
        shape = (None, None, self.num_units)
        for layer in self.transformer_layers:
            layer.build(shape)
        if self.output_norm is not None:
            self.output_norm.build(shape)
        self.built = True

    def _embed(self, inputs, start_index=0, training=None):
        """Scales the embeddings, adds positions, applies dropout."""
        inputs = keras.ops.cast(inputs, self.compute_dtype) * (self.num_units**0.5)
        if self.position_encoding is not None:
            inputs = self.position_encoding(inputs, start_index=start_index)
        return self.input_dropout(inputs, training=training)

    def _normalize_output(self, outputs):
        return outputs if self.output_norm is None else self.output_norm(outputs)

    def call(self, inputs, padding_mask=None, training=None):
        outputs = self._embed(inputs, training=training)
        for layer in self.transformer_layers:
            outputs = layer(outputs, padding_mask=padding_mask, training=training)
        return self._normalize_output(outputs)

    def get_config(self):
        config = super().get_config()
        config.update(layer_config(self), num_layers=self.num_layers)
        return config
