"""The Transformer translation network: embeddings, encoder, decoder, output projection.

`TransformerBackbone` plays keras-hub's `Backbone` part (the architecture only, its config
the architecture) but is a plain `keras.Model`: keras-hub's `Backbone` is a functional
model, and the first keras-hub backbone built in a process makes Keras rebase the
`Backbone` class itself onto `Functional` (`inject_functional_model_class`), after which
a subclassed backbone such as this one can no longer be constructed. Decoding calls its
layers one step at a time, so it is written as a subclassed model.
"""

import inspect

import keras
import tensorflow as tf

from kerasnmt.data.vocabulary import END_OF_SENTENCE_ID
from kerasnmt.decoding.search.scoring import EXCLUDED_LOGIT, with_columns
from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention
from kerasnmt.layers.transformer_decoder import TransformerDecoder
from kerasnmt.layers.transformer_encoder import TransformerEncoder
from kerasnmt.layers.transformer_encoder_layer import (
    LAYER_NORM_EPSILON,
    keep_layer_arguments,
    layer_arguments,
)

# OpenNMT-tf's embeddings sharing levels (`EmbeddingsSharingLevel`), by name and number.
SHARE_EMBEDDINGS = ("none", "source_target_input", "target", "all")
# How embeddings are initialized: OpenNMT-tf's Glorot uniform, or N(0, num_units ** -0.5)
# as fairseq and Tensor2Tensor draw them (unit variance once scaled by sqrt(num_units)).
EMBEDDINGS_INITIALIZERS = ("glorot_uniform", "scaled_normal")


@keras.saving.register_keras_serializable(package="kerasnmt")
class TransformerBackbone(keras.Model):
    """A Transformer encoder-decoder (OpenNMT-tf's `Transformer` network), ids in, logits out.

    The architecture only, as a keras-hub backbone holds it: source and target embeddings
    (shared per `share_embeddings`), a `TransformerEncoder`, a `TransformerDecoder` and a
    projection to target vocabulary logits (the transposed target embeddings when shared).
    With `maximum_relative_position` the self-attention uses relative position
    representations (Shaw et al., 2018); with `None`, sinusoidal absolute positions. Its
    config is the architecture; the loss, the vocabularies and decoding belong to the
    `Translator` task that holds it.

    Call arguments (`call`): `{"source_ids": [B, S], "source_length": [B],
    "target_ids": [B, T]}`. Returns `{"logits": [B, T, V], "attention": [B, T, S']}`,
    the attention of the last decoder layer's first head (`S' = S + 1` with
    `source_eos`, see `encode`).

    Args:
        source_vocabulary_size: source embedding rows (`len(vocabulary) + 1`: the
            vocabulary and the out-of-vocabulary id).
        target_vocabulary_size: target embedding rows and logits.
        num_layers: layers of the encoder and the decoder, or an `(encoder, decoder)` pair.
        num_units: model dimension.
        num_heads: attention heads.
        ffn_inner_dim: inner size of the feed-forward networks.
        dropout: dropout on embeddings and sublayer outputs.
        attention_dropout: dropout on attention weights.
        ffn_dropout: dropout on feed-forward activations.
        ffn_activation: feed-forward activation.
        maximum_relative_position: relative position clipping distance (20, the
            configuration's default), or `None` for sinusoidal absolute positions.
        pre_norm: pre-norm (True) or post-norm Transformer layers.
        share_embeddings: `"none"`, `"source_target_input"` (source and target input
            embeddings), `"target"` (target input embeddings and output projection) or
            `"all"`; OpenNMT-tf's levels 0-3 are accepted. Sharing the source embeddings
            needs vocabularies of one size (the task checks they are the same tokens).
        embeddings_initializer: `"glorot_uniform"` (OpenNMT-tf's) or `"scaled_normal"`,
            `N(0, num_units ** -0.5)` as fairseq and Tensor2Tensor draw embeddings: once
            scaled by `sqrt(num_units)`, their entries have unit variance, like the
            sinusoidal position encodings added to them, where Glorot's are about
            `sqrt(2 * num_units / (V + num_units))` (0.18 for 128 units and 8k ids).
        source_eos: the encoder reads `</s>` after each source's tokens, as fairseq's
            sources end (CTranslate2's `add_source_eos`). It is added inside the network,
            so the preprocessing and the source lengths are the same either way; `call`
            and the decoding attend over the `S + 1` positions.
        use_output_bias: whether the output projection has a bias (fairseq's has none).
        layer_norm_epsilon: the epsilon of every layer normalization: 1e-6, or 1e-3 as
            OpenNMT-tf 2.x's (Keras' default), which a converted OpenNMT-tf model keeps.
        query_key_value_init_gain: the gain of the Glorot-uniform draw of the attention
            query, key and value kernels; fairseq's `1 / sqrt(2)` (0.7071) gives separate
            projections the scale of one fused `[D, 3D]` kernel.
        **kwargs: passed to `keras.Model` (`name`, `dtype`).

    Examples:
        >>> backbone = TransformerBackbone(6, 6, num_layers=1, num_units=8, num_heads=2,
        ...                                ffn_inner_dim=16, maximum_relative_position=4)
        >>> outputs = backbone({"source_ids": tf.constant([[3, 4], [4, 0]]),
        ...                     "source_length": tf.constant([2, 1]),
        ...                     "target_ids": tf.constant([[1, 5, 3], [1, 4, 0]])})
        >>> outputs["logits"].shape, outputs["attention"].shape  # [B, T, V], [B, T, S]
        (TensorShape([2, 3, 6]), TensorShape([2, 3, 2]))

    Reference:
        [OpenNMT-tf `Transformer`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/models/transformer.py);
        the papers of its layers are cited by `TransformerEncoderLayer`.
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        num_layers=6,
        num_units=512,
        num_heads=8,
        ffn_inner_dim=2048,
        dropout=0.1,
        attention_dropout=0.1,
        ffn_dropout=0.1,
        ffn_activation="relu",
        maximum_relative_position=20,
        pre_norm=True,
        share_embeddings="none",
        embeddings_initializer="glorot_uniform",
        source_eos=False,
        use_output_bias=True,
        query_key_value_init_gain=1.0,
        layer_norm_epsilon=LAYER_NORM_EPSILON,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(num_layers, int):
            num_encoder_layers = num_decoder_layers = num_layers
        else:
            num_encoder_layers, num_decoder_layers = num_layers
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.num_layers = num_layers if isinstance(num_layers, int) else list(num_layers)
        keep_layer_arguments(self, locals())
        self.share_embeddings = _sharing_level(share_embeddings)
        self.embeddings_initializer = embeddings_initializer
        _embeddings_initializer(embeddings_initializer, num_units)  # checks the name first
        self.source_eos = bool(source_eos)
        self.use_output_bias = bool(use_output_bias)
        self.query_key_value_init_gain = float(query_key_value_init_gain)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        if (self.share_embeddings in ("source_target_input", "all")
                and source_vocabulary_size != target_vocabulary_size):
            raise ValueError(
                f"TransformerBackbone: share_embeddings={self.share_embeddings!r} needs "
                f"vocabularies of one size, got {source_vocabulary_size} source and "
                f"{target_vocabulary_size} target ids"
            )

        policy = self.dtype_policy
        stack_arguments = dict(layer_arguments(self), dtype=policy)

        def embedding(size, name):
            return keras.layers.Embedding(
                size, num_units, dtype=policy, name=name,
                embeddings_initializer=_embeddings_initializer(embeddings_initializer, num_units))

        self.source_embedding = embedding(source_vocabulary_size, "source_embedding")
        if self.share_embeddings in ("source_target_input", "all"):
            self.target_embedding = self.source_embedding
        else:
            self.target_embedding = embedding(target_vocabulary_size, "target_embedding")
        self.encoder = TransformerEncoder(num_encoder_layers, name="encoder", **stack_arguments)
        self.decoder = TransformerDecoder(num_decoder_layers, name="decoder", **stack_arguments)
        self.output_layer = None
        if self.share_embeddings not in ("target", "all"):
            self.output_layer = keras.layers.Dense(
                target_vocabulary_size, use_bias=self.use_output_bias, dtype=policy,
                name="output_layer",
            )
        self.output_bias = None
        # Built here: a task on string inputs (the Translator) cannot be built from data.
        self.build(None)
        if self.query_key_value_init_gain != 1.0:
            self._draw_query_key_value_kernels()

    def build(self, input_shape):
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        self.encoder.build((None, None, self.num_units))
        self.decoder.build((None, None, self.num_units))
        if self.output_layer is None:
            self.output_bias = self.add_weight(
                name="output_bias", shape=(self.target_vocabulary_size,), initializer="zeros"
            ) if self.use_output_bias else None
        else:
            self.output_layer.build((None, None, self.num_units))
        self.built = True

    def _draw_query_key_value_kernels(self):
        """Draws every attention's query, key and value kernels again from Glorot's uniform
        distribution scaled by `query_key_value_init_gain` (fairseq's `1 / sqrt(2)`)."""
        initializer = keras.initializers.VarianceScaling(
            self.query_key_value_init_gain**2, mode="fan_avg", distribution="uniform")
        for layer in self._flatten_layers():
            if isinstance(layer, RelativeMultiHeadAttention):
                for dense in (layer.query_dense, layer.key_dense, layer.value_dense):
                    dense.kernel.assign(initializer(dense.kernel.shape, dense.kernel.dtype))

    def encode(self, source_ids, source_length, training=None):
        """Encodes source ids `[B, S]` of lengths `[B]`.

        Returns:
            `(encoder_outputs [B, S', D], source_padding_mask [B, S'])`: `S' = S + 1` with
            `source_eos` (`</s>` after each source's tokens), else `S`.
        """
        source_ids = tf.cast(source_ids, tf.int32)
        if self.source_eos:
            source_ids, source_length = _end_marked(source_ids, source_length)
        padding_mask = tf.sequence_mask(source_length, tf.shape(source_ids)[1])
        outputs = self.encoder(
            self.source_embedding(source_ids), padding_mask=padding_mask, training=training
        )
        return outputs, padding_mask

    def output_projection(self, vocabulary_multiple=1):
        """The output layer as `(kernel [D, V'], bias [V'] or None)`, `V` rounded up to a
        multiple of `vocabulary_multiple` (added columns: zero kernel, -1e9 bias);
        `projected_logits` computes the logits."""
        if self.output_layer is not None:
            kernel, bias = _float_kernel(self.output_layer), self.output_layer.bias
        else:
            kernel, bias = tf.transpose(self.target_embedding.embeddings), self.output_bias
        padding = -self.target_vocabulary_size % vocabulary_multiple
        if padding:
            kernel = tf.pad(kernel, [[0, 0], [0, padding]])
            if bias is not None:
                bias = tf.pad(bias, [[0, padding]], constant_values=EXCLUDED_LOGIT)
        return kernel, bias

    def projected_logits(self, outputs, kernel, bias):
        """The float32 logits `[rows, V']` of decoder outputs `[rows, D]` through
        `output_projection`'s `(kernel, bias)`. Without a bias, the added columns (exactly
        0) get -1e9 by an update of those columns only (in place under XLA), not by a bias
        added to every logit."""
        logits = tf.matmul(outputs, tf.cast(kernel, outputs.dtype))
        if bias is not None:
            return tf.cast(logits + tf.cast(bias, outputs.dtype), tf.float32)
        logits = tf.cast(logits, tf.float32)
        vocabulary_size, width = self.target_vocabulary_size, logits.shape[-1]
        if width == vocabulary_size:
            return logits
        added = tf.range(vocabulary_size, width)
        return with_columns(logits, added,
                            tf.fill([tf.shape(logits)[0], width - vocabulary_size],
                                    EXCLUDED_LOGIT))

    def logits(self, decoder_outputs):
        """The logits `[B, T, V]` of decoder outputs `[B, T, D]`."""
        if self.output_layer is not None:
            return self.output_layer(decoder_outputs)
        embeddings = tf.cast(self.target_embedding.embeddings, decoder_outputs.dtype)
        # One [B*T, D] x [D, V] product: a batched matmul of [B, T, D] by the shared [V, D]
        # broadcasts the matrix, and its gradient builds a [B, V, D] tensor to sum over B
        # (twice the step time of an unshared output layer).
        shape = tf.shape(decoder_outputs)
        logits = tf.matmul(
            tf.reshape(decoder_outputs, [-1, self.num_units]), embeddings, transpose_b=True
        )
        if self.output_bias is not None:
            logits += tf.cast(self.output_bias, logits.dtype)
        return tf.reshape(logits, [shape[0], shape[1], self.target_vocabulary_size])

    def call(self, inputs, training=None):
        encoder_outputs, padding_mask = self.encode(
            inputs["source_ids"], inputs["source_length"], training=training
        )
        target_ids = tf.cast(inputs["target_ids"], tf.int32)
        decoder_outputs, attention = self.decoder(
            self.target_embedding(target_ids),
            encoder_outputs,
            encoder_padding_mask=padding_mask,
            training=training,
        )
        return {"logits": self.logits(decoder_outputs), "attention": attention}

    def get_config(self):
        config = super().get_config()
        config.update(
            source_vocabulary_size=self.source_vocabulary_size,
            target_vocabulary_size=self.target_vocabulary_size,
            **architecture_config(self),
        )
        return config


# The arguments of `TransformerBackbone` that make its architecture, with their defaults
# (the configuration's `model` section takes them as its own): all but the vocabulary
# sizes (a `Translator` takes them from its preprocessor) and Keras' own.
ARCHITECTURE_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(TransformerBackbone).parameters.items()
    if name not in ("source_vocabulary_size", "target_vocabulary_size", "kwargs")
}
ARCHITECTURE_ARGUMENTS = tuple(ARCHITECTURE_DEFAULTS)


def architecture_config(backbone):
    """The `ARCHITECTURE_ARGUMENTS` of a backbone, as its config holds them.

    Examples:
        >>> architecture_config(TransformerBackbone(5, 5, num_layers=1, num_units=4,
        ...     num_heads=1, ffn_inner_dim=4))["num_units"]
        4
    """
    config = {name: getattr(backbone, name) for name in ARCHITECTURE_ARGUMENTS}
    config["ffn_activation"] = keras.activations.serialize(backbone.ffn_activation)
    return config


def _sharing_level(share_embeddings):
    if isinstance(share_embeddings, int) and 0 <= share_embeddings < len(SHARE_EMBEDDINGS):
        return SHARE_EMBEDDINGS[share_embeddings]
    if share_embeddings in SHARE_EMBEDDINGS:
        return share_embeddings
    raise ValueError(
        f"TransformerBackbone: share_embeddings must be one of {SHARE_EMBEDDINGS} (or 0-3), "
        f"got {share_embeddings!r}"
    )


def _embeddings_initializer(name, num_units):
    """A new initializer for one embedding table (a Keras initializer object draws its seed
    when it is made: one object for two tables would give them the same values)."""
    if name == "glorot_uniform":
        return name
    if name == "scaled_normal":
        return keras.initializers.RandomNormal(stddev=num_units**-0.5)
    raise ValueError(
        f"TransformerBackbone: embeddings_initializer must be one of "
        f"{EMBEDDINGS_INITIALIZERS}, got {name!r}"
    )


def _float_kernel(dense):
    """The kernel of a `Dense` layer in float, Keras' int8 quantization undone (int8 values
    divided by the scale of their output column, as the layer's own call does)."""
    if dense.quantization_mode is None:
        return dense.kernel
    if dense.quantization_mode != "int8":
        raise ValueError(f"TransformerBackbone: the output layer is quantized to "
                         f"{dense.quantization_mode}; decoding reads int8 or float kernels")
    return tf.cast(dense._kernel, tf.float32) / dense.kernel_scale


def _end_marked(source_ids, source_length):
    """`[B, S]` source ids -> `[B, S + 1]` with `</s>` after each sentence's tokens, and the
    lengths counting it."""
    source_length = tf.cast(source_length, tf.int32)
    ids = tf.pad(source_ids, [[0, 0], [0, 1]])
    end = tf.equal(tf.range(tf.shape(ids)[1])[tf.newaxis], source_length[:, tf.newaxis])
    return tf.where(end, END_OF_SENTENCE_ID, ids), source_length + 1
