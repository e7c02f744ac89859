"""One Transformer decoder layer: causal self-attention, attention over the encoder, feed-forward."""

import keras

from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention
from kerasnmt.layers.transformer_encoder_layer import TransformerEncoderLayer, residual


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerDecoderLayer(TransformerEncoderLayer):
    """A Transformer decoder layer with relative position self-attention and a decoding cache.

    Three residual blocks (pre-norm or post-norm, as in `TransformerEncoderLayer`): causal
    `RelativeMultiHeadAttention` self-attention, plain multi-head attention over the encoder
    outputs (whose weights are returned), and a feed-forward network.

    For incremental decoding, `initial_cache(encoder_outputs, max_length)` holds the
    self-attention keys/values (written one position per step) and the encoder keys/values
    (projected once); call the layer with `cache` and `step` on one position, `[B, D]`
    (or `[B, 1, D]`).

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
        inputs: `[B, T, D]` (or `[B, D]` or `[B, 1, D]` with `cache` and `step`).
        encoder_outputs: `[B, S, D]`; unused when `cache` is given.
        encoder_padding_mask: boolean `[B, S]`, True on real source positions.
        cache: from `initial_cache`, for incremental decoding.
        step: int, the position of `inputs` when decoding with `cache`: a scalar, or one
            per example of the cache (see `RelativeMultiHeadAttention`).
        training: enables dropout.

    Returns:
        `(outputs [B, T, D], attention [B, num_heads, T, S])` (outputs `[B, D]` for inputs
        `[B, D]`), plus the updated cache when `cache` is given.

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

    def initial_cache(self, encoder_outputs, max_length, beam_size=None):
        """The decoding state of this layer for a batch of encoder outputs `[B, S, D]`.

        With `beam_size`, the self-attention cache is a beam cache (see
        `RelativeMultiHeadAttention.initial_cache`).

        Returns:
            `{"self_attention": {"keys", "values"}, "cross_attention": {"keys", "values"}}`,
            `[B, H, max_length, D/H]` and `[B, H, S, D/H]` tensors (batch-major, so a beam
            search may tile and reorder them with `tf.gather` on axis 0).
        """
        if not self.built:
            self.build(encoder_outputs.shape)
        batch_size = keras.ops.shape(encoder_outputs)[0]
        return {
            "self_attention": self.self_attention.initial_cache(
                batch_size, max_length, beam_size
            ),
            "cross_attention": self.cross_attention.project_memory(encoder_outputs),
        }

    def call(
        self,
        inputs,
        encoder_outputs=None,
        encoder_padding_mask=None,
        cache=None,
        step=None,
        training=None,
    ):
        if cache is None:
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
        else:
            outputs, self_attention_cache = residual(
                inputs,
                lambda x: self.self_attention(
                    x, cache=cache["self_attention"], step=step, training=training
                ),
                self.self_attention_norm,
                self.output_dropout,
                self.pre_norm,
                training,
            )
            outputs, _, attention = residual(
                outputs,
                lambda x: self.cross_attention(
                    x,
                    attention_mask=encoder_padding_mask,
                    cache=cache["cross_attention"],
                    training=training,
                    return_attention_scores=True,
                ),
                self.cross_attention_norm,
                self.output_dropout,
                self.pre_norm,
                training,
            )
            cache = {
                "self_attention": self_attention_cache,
                "cross_attention": cache["cross_attention"],
            }
        outputs = residual(
            outputs,
            lambda x: self.ffn(x, training=training),
            self.ffn_norm,
            self.output_dropout,
            self.pre_norm,
            training,
        )
        if cache is None:
            return outputs, attention
        return outputs, attention, cache
