"""The Transformer decoder: a stack of `TransformerDecoderLayer`, with a one-step decoding API."""

import keras
import tensorflow as tf

from kerasnmt.layers.transformer_decoder_layer import TransformerDecoderLayer
from kerasnmt.layers.transformer_encoder import TransformerEncoder


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerDecoder(TransformerEncoder):
    """Decodes embedded target tokens against encoder outputs, in full or one step at a time.

    As OpenNMT-tf's `SelfAttentionDecoder`: embeddings scaled by `sqrt(num_units)`, sinusoidal
    positions when `maximum_relative_position` is `None`, dropout, `num_layers`
    `TransformerDecoderLayer`s, a final layer normalization when `pre_norm`. It returns the
    attention weights of the first head of the last layer's attention over the encoder (what
    guided alignment and the coverage penalty use).

    Decoding API (what a beam search drives): `project_memory(encoder_outputs)` projects
    the encoder keys/values of every layer once per source batch, and
    `decode_step(inputs, step, caches, memories, encoder_padding_mask)` decodes one
    position: it writes that position's keys/values into the self-attention caches (one
    per layer, the decoding code's: `kerasnmt.decoding.BeamSegmentCache.for_decoder`) and
    never recomputes earlier positions.

    It takes `TransformerEncoder`'s arguments and has no constructor of its own
    (`maximum_relative_position` is that of the self-attention; the attention over the
    encoder has no position representations).

    Call arguments:
        inputs: `[B, T, D]` target input embeddings (`<s>` + tokens).
        encoder_outputs: `[B, S, D]`.
        encoder_padding_mask: boolean `[B, S]`, True on real source positions.
        training: enables dropout.

    Returns:
        `(outputs [B, T, D], attention [B, T, S])`.

    Examples:
        >>> decoder = TransformerDecoder(num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16,
        ...                              maximum_relative_position=4)
        >>> encoder_outputs = keras.ops.ones([2, 5, 8])
        >>> outputs, attention = decoder(keras.ops.ones([2, 3, 8]), encoder_outputs)
        >>> outputs.shape, attention.shape
        (TensorShape([2, 3, 8]), TensorShape([2, 3, 5]))
        >>> from kerasnmt.decoding import BeamSegmentCache
        >>> caches = BeamSegmentCache.for_decoder(decoder, batch_size=2, max_length=10)
        >>> memories = decoder.project_memory(encoder_outputs)
        >>> step_outputs, step_attention, caches = decoder.decode_step(
        ...     keras.ops.ones([2, 8]), 0, caches, memories)
        >>> step_outputs.shape, step_attention.shape
        (TensorShape([2, 8]), TensorShape([2, 5]))

    Reference:
        [OpenNMT-tf `SelfAttentionDecoder`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/decoders/self_attention_decoder.py)
    """

    layer_class = TransformerDecoderLayer

    def call(self, inputs, encoder_outputs, encoder_padding_mask=None, training=None):
        outputs = self._embed(inputs, training=training)
        for layer in self.transformer_layers:
            outputs, attention = layer(
                outputs,
                encoder_outputs,
                encoder_padding_mask=encoder_padding_mask,
                training=training,
            )
        return self._normalize_output(outputs), attention[:, 0]

    def project_memory(self, encoder_outputs):
        """The encoder keys and values of every layer for `decode_step`, projected once.

        Args:
            encoder_outputs: `[B, S, D]`.

        Returns:
            A list with one `{"keys", "values"}` per layer, each `[B, num_heads, S, D/H]`
            (batch-major: a search may reorder them with `tf.gather` on axis 0).
        """
        encoder_outputs = tf.cast(encoder_outputs, self.compute_dtype)
        if not self.built:
            self.build(encoder_outputs.shape)
        return [layer.project_memory(encoder_outputs) for layer in self.transformer_layers]

    def decode_step(self, inputs, step, caches, memories, encoder_padding_mask=None):
        """Decodes one position (inference: no dropout).

        Args:
            inputs: `[B, D]` or `[B, 1, D]` embeddings of the tokens at position `step`.
            step: int, the 0-based position being decoded (`< max_length`): a scalar, or
                `[B_c]` with one position per example of the caches (its beam hypotheses
                share it).
            caches: one self-attention cache per layer (see
                `kerasnmt.decoding.BeamSegmentCache.for_decoder`), from the previous
                `decode_step` after the first.
            memories: from `project_memory`.
            encoder_padding_mask: boolean `[B, S]`, True on real source positions.

        Returns:
            `(outputs [B, D], attention [B, S], new_caches)`.
        """
        if len(inputs.shape) == 2:
            inputs = inputs[:, tf.newaxis]
        row_steps = step
        if tf.convert_to_tensor(step).shape.rank == 1:  # per example -> per row
            row_steps = tf.repeat(step, tf.shape(inputs)[0] // tf.shape(step)[0])
        # The layers decode [B, D]: one position per row, whose `Dense` products are
        # plain matrix products (a graph traced per step holds a third fewer ops).
        outputs = tf.squeeze(self._embed(inputs, start_index=row_steps, training=False), 1)
        new_caches = []
        for layer, cache, memory in zip(self.transformer_layers, caches, memories):
            outputs, attention, cache = layer.decode_step(
                outputs, step, cache, memory, encoder_padding_mask)
            new_caches.append(cache)
        outputs = self._normalize_output(outputs)
        return outputs, attention[:, 0, 0], new_caches
