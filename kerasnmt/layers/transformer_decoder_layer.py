"""One Transformer decoder layer: causal self-attention, attention over the encoder, feed-forward."""

import keras

from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention
from kerasnmt.layers.transformer_encoder_layer import TransformerEncoderLayer, residual


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerDecoderLayer(TransformerEncoderLayer):
    """A Transformer decoder layer with relative position self-attention, in full or one step
    at a time.

    Three residual blocks (pre-norm or post-norm, as in `TransformerEncoderLayer`): causal
    `RelativeMultiHeadAttention` self-attention, plain multi-head attention over the encoder
    outputs (whose weights are returned), and a feed-forward network.

    `call` decodes full sequences; `decode_step` decodes one position per row against the
    layer's self-attention cache (the decoding code's) and its encoder keys/values,
    projected once by `project_memory`.

    Args:
        num_units: model dimension `D`.
        num_heads: attention heads; `num_units` must be a multiple of it.
        ffn_inner_dim: inner size of the feed-forward network.
        **kwargs: `TransformerEncoderLayer`'s options — `dropout` (on each sublayer
            output before the residual sum), `attention_dropout` (on the attention
            weights), `ffn_dropout` (on the feed-forward inner activations),
            `ffn_activation`, `maximum_relative_position` (relative position clipping
            distance of the self-attention, or `None`), `pre_norm` (layer normalization
            before or after each sublayer), `layer_norm_epsilon` — and those of
            `keras.layers.Layer`.

    Call arguments:
        inputs: `[B, T, D]`.
        encoder_outputs: `[B, S, D]`.
        encoder_padding_mask: boolean `[B, S]`, True on real source positions.
        training: enables dropout.

    Returns:
        `(outputs [B, T, D], attention [B, num_heads, T, S])`.

    Examples:
        >>> layer = TransformerDecoderLayer(num_units=8, num_heads=2, ffn_inner_dim=16,
        ...                                 maximum_relative_position=4)
        >>> outputs, attention = layer(keras.ops.ones([2, 3, 8]), keras.ops.ones([2, 5, 8]))
        >>> outputs.shape, attention.shape
        (TensorShape([2, 3, 8]), TensorShape([2, 2, 3, 5]))

    Reference:
        [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762); [Shaw et al.,
        2018](https://arxiv.org/abs/1803.02155); [OpenNMT-tf
        `SelfAttentionDecoderLayer`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/layers/transformer.py)
    """

    def __init__(self, num_units, num_heads, ffn_inner_dim, **kwargs):
        super().__init__(num_units, num_heads, ffn_inner_dim, **kwargs)
        self.cross_attention = RelativeMultiHeadAttention(
            num_heads,
            num_units // num_heads,
            dropout=self.attention_dropout,
            dtype=self.dtype_policy,
            name="cross_attention",
        )
        self.cross_attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy,
            name="cross_attention_norm"
        )

    def build(self, inputs_shape):
        super().build(inputs_shape)
        shape = (None, None, self.num_units)
        self.cross_attention.build(shape, shape)
        self.cross_attention_norm.build(shape)

    def project_memory(self, encoder_outputs):
        """The encoder keys and values of `decode_step`, projected once from encoder
        outputs `[B, S, D]` (see `RelativeMultiHeadAttention.project_memory`)."""
        if not self.built:
            self.build(encoder_outputs.shape)
        return self.cross_attention.project_memory(encoder_outputs)

    def call(self, inputs, encoder_outputs, encoder_padding_mask=None, training=None):
        outputs = residual(
            inputs,
            lambda x: self.self_attention(x, use_causal_mask=True, training=training),
            self.self_attention_norm,
            self.output_dropout,
            self.pre_norm,
            training,
        )
        outputs, attention = residual(
            outputs,
            lambda x: self.cross_attention(
                x,
                encoder_outputs,
                attention_mask=encoder_padding_mask,
                training=training,
                return_attention_scores=True,
            ),
            self.cross_attention_norm,
            self.output_dropout,
            self.pre_norm,
            training,
        )
        return self._feed_forward(outputs, training), attention

    def decode_step(self, inputs, step, cache, memory, encoder_padding_mask=None):
        """Decodes one position per row (inference: no dropout).

        Args:
            inputs: `[B, D]` (or `[B, 1, D]`), the rows' inputs at position `step`.
            step: int, the position of `inputs`: a scalar, or one per example of the
                cache (see `RelativeMultiHeadAttention.call_with_cache`).
            cache: this layer's self-attention cache (`kerasnmt.decoding.BeamSegmentCache`).
            memory: the encoder keys and values from `project_memory`.
            encoder_padding_mask: boolean `[B, S]`, True on real source positions.

        Returns:
            `(outputs, attention [B, num_heads, 1, S], new_cache)`, outputs shaped as
            `inputs`.
        """
        outputs, cache = residual(
            inputs,
            lambda x: self.self_attention.call_with_cache(x, cache, step),
            self.self_attention_norm,
            self.output_dropout,
            self.pre_norm,
            False,
        )
        outputs, attention = residual(
            outputs,
            lambda x: self.cross_attention.call_with_memory(
                x, memory, attention_mask=encoder_padding_mask),
            self.cross_attention_norm,
            self.output_dropout,
            self.pre_norm,
            False,
        )
        return self._feed_forward(outputs, False), attention, cache
