"""The translation model users fit, evaluate (and later translate with and export)."""

import gc

import keras
import tensorflow as tf

from kerasnmt.data.string_arrays import string_array
from kerasnmt.data.vocabulary import END_OF_SENTENCE_ID
from kerasnmt.decoding.decode import decode
from kerasnmt.decoding.search.scoring import EXCLUDED_LOGIT, with_columns
from kerasnmt.decoding.translate import forget_translate_functions, translate
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
)
from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention
from kerasnmt.layers.transformer_decoder import TransformerDecoder
from kerasnmt.layers.transformer_encoder import TransformerEncoder
from kerasnmt.training.losses import (
    GUIDED_ALIGNMENT_TYPES,
    cross_entropy_sequence_loss,
    guided_alignment_cost,
)
from kerasnmt.training import fitting
from kerasnmt.training.fused_adam import FusedAdam
from kerasnmt.training.noam_decay import NoamDecay
from kerasnmt.training.perplexity import Perplexity

# OpenNMT-tf's embeddings sharing levels (`EmbeddingsSharingLevel`), by name and number.
SHARE_EMBEDDINGS = ("none", "source_target_input", "target", "all")
# How embeddings are initialized: OpenNMT-tf's Glorot uniform, or N(0, num_units ** -0.5)
# as fairseq and Tensor2Tensor draw them (unit variance once scaled by sqrt(num_units)).
EMBEDDINGS_INITIALIZERS = ("glorot_uniform", "scaled_normal")


def _sharing_level(share_embeddings):
    if isinstance(share_embeddings, int) and 0 <= share_embeddings < len(SHARE_EMBEDDINGS):
        return SHARE_EMBEDDINGS[share_embeddings]
    if share_embeddings in SHARE_EMBEDDINGS:
        return share_embeddings
    raise ValueError(
        f"Translator: share_embeddings must be one of {SHARE_EMBEDDINGS} (or 0-3), "
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
        f"Translator: embeddings_initializer must be one of {EMBEDDINGS_INITIALIZERS}, "
        f"got {name!r}"
    )


def _multi_worker_logs(logs):
    """A step's logs as Keras can reduce them across workers: with several workers it
    averages them along axis 0 (keras-team/keras#20585), which a scalar lacks, so each
    gets one (the condition is Keras' own)."""
    strategy = tf.distribute.get_strategy()
    if not (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode()):
        return logs
    return {name: tf.reshape(value, [1]) for name, value in logs.items()}


@keras.saving.register_keras_serializable(package="kerasnmt")
class Translator(keras.Model):
    """A Transformer translation model (OpenNMT-tf's `Transformer`), trained on raw text.

    The model owns its `TranslationPreprocessor`, so `fit` and `evaluate` take raw strings:
    NumPy arrays or tensors of sentences (`fit(x=sources, y=targets)`), or a `tf.data`
    dataset of `(source, target)` (or `(source, target, alignment)`) strings. The strings
    are preprocessed, length-bucketed and batched inside `tf.data`
    (`kerasnmt.data.make_training_batches`), so only integer tensors reach the compiled
    train step (`compile(jit_compile=True)` works, so do TPUs). Datasets of batched
    `(features, labels)` from the kerasnmt data pipeline (text files or TFRecord shards)
    are accepted too.

    Architecture: source and target embeddings (shared per `share_embeddings`), a
    `TransformerEncoder`, a `TransformerDecoder` and a projection to target vocabulary logits
    (the transposed target embeddings when shared). With `maximum_relative_position` the
    self-attention uses relative position representations; with `None`, sinusoidal
    absolute positions.

    Loss: OpenNMT-tf's. The label-smoothed cross-entropy is summed over the target tokens
    (padding masked); when the labels carry an alignment and `guided_alignment_type` is
    set, the guided alignment cost (first head of the last decoder layer's attention, every
    step but the one predicting `</s>`) is added to that sum; the total is divided by the
    number of target tokens. Evaluation uses the plain cross-entropy. Metrics: token
    `accuracy` and `perplexity`.

    Model inputs (what `call` takes, after preprocessing): `{"source_ids": [B, S],
    "source_length": [B], "target_ids": [B, T]}`; outputs `{"logits": [B, T, V],
    "attention": [B, T, S']}` (`S' = S + 1` with `source_eos`, see `encode`).

    Args:
        preprocessor: a `kerasnmt.layers.TranslationPreprocessor`; its vocabularies set the
            embedding sizes (`len(vocabulary) + 1` ids).
        num_layers: layers of the encoder and the decoder, or an `(encoder, decoder)` pair.
        num_units: model dimension.
        num_heads: attention heads.
        ffn_inner_dim: inner size of the feed-forward networks.
        dropout: dropout on embeddings and sublayer outputs.
        attention_dropout: dropout on attention weights.
        ffn_dropout: dropout on feed-forward activations.
        ffn_activation: feed-forward activation.
        maximum_relative_position: relative position clipping distance, or `None` for
            sinusoidal absolute positions.
        pre_norm: pre-norm (True) or post-norm Transformer layers.
        embeddings_initializer: `"glorot_uniform"` (OpenNMT-tf's) or `"scaled_normal"`,
            `N(0, num_units ** -0.5)` as fairseq and Tensor2Tensor draw embeddings: once
            scaled by `sqrt(num_units)`, their entries have unit variance, like the
            sinusoidal position encodings added to them, where Glorot's are about
            `sqrt(2 * num_units / (V + num_units))` (0.18 for 128 units and 8k ids).
        share_embeddings: `"none"`, `"source_target_input"` (source and target input
            embeddings), `"target"` (target input embeddings and output projection) or
            `"all"`; OpenNMT-tf's levels 0-3 are accepted. Sharing the source embeddings
            needs identical source and target vocabularies.
        label_smoothing: label smoothing of the training loss.
        guided_alignment_type: `None`, `"ce"` or `"mse"`.
        guided_alignment_weight: the weight of the guided alignment cost.
        source_eos: the encoder reads `</s>` after each source's tokens, as fairseq's
            sources end (CTranslate2's `add_source_eos`). It is added inside the model, so
            the preprocessing and the source lengths are the same either way; `call`
            (and so the guided alignment cost) and the step function attend over the
            `S + 1` positions, and `decode` returns alignments over the `S` tokens.
        use_output_bias: whether the output projection has a bias (fairseq's has none).
        query_key_value_init_gain: the gain of the Glorot-uniform draw of the attention
            query, key and value kernels; fairseq's `1 / sqrt(2)` (0.7071) gives separate
            projections the scale of one fused `[D, 3D]` kernel.
        **kwargs: passed to `keras.Model` (e.g. `name`, `dtype="mixed_bfloat16"`).

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
        >>> from kerasnmt.training.fitting import model_data
        >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
        >>> preprocessor = TranslationPreprocessor(
        ...     WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary)
        >>> translator = Translator(preprocessor, num_layers=1, num_units=8, num_heads=2,
        ...                         ffn_inner_dim=16, maximum_relative_position=4)
        >>> x, y = model_data(*preprocessor(tf.constant(["a b", "b"]), tf.constant(["b a", "a"])))
        >>> outputs = translator(x)
        >>> outputs["logits"].shape, outputs["attention"].shape  # [B, T, V], [B, T, S]
        (TensorShape([2, 3, 6]), TensorShape([2, 3, 2]))

        Training on raw sentences (NumPy arrays, lists or string tensors):

            translator.compile()  # Adam with NoamDecay(2.0, num_units, 8000)
            translator.fit(x=source_sentences, y=target_sentences, batch_size=4096,
                           batch_type="tokens", effective_batch_size=25000, epochs=10,
                           callbacks=[kerasnmt.training.CheckpointCallback("run", 5000)])

    Reference:
        [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762); [Shaw et al.,
        2018](https://arxiv.org/abs/1803.02155); [OpenNMT-tf
        `Transformer`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/models/transformer.py)
    """

    def __init__(
        self,
        preprocessor,
        num_layers=6,
        num_units=512,
        num_heads=8,
        ffn_inner_dim=2048,
        dropout=0.1,
        attention_dropout=0.1,
        ffn_dropout=0.1,
        ffn_activation="relu",
        maximum_relative_position=None,
        pre_norm=True,
        share_embeddings="none",
        embeddings_initializer="glorot_uniform",
        label_smoothing=0.1,
        guided_alignment_type=None,
        guided_alignment_weight=1.0,
        source_eos=False,
        use_output_bias=True,
        query_key_value_init_gain=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(num_layers, int):
            num_encoder_layers = num_decoder_layers = num_layers
        else:
            num_encoder_layers, num_decoder_layers = num_layers
        if guided_alignment_type is not None and guided_alignment_type not in GUIDED_ALIGNMENT_TYPES:
            raise ValueError(
                f"Translator: guided_alignment_type must be None or one of "
                f"{GUIDED_ALIGNMENT_TYPES}, got {guided_alignment_type!r}"
            )
        # Not tracked as a sublayer: it runs in tf.data, never in the model's step, and its
        # string layers would make Keras refuse `jit_compile=True` for the whole model.
        object.__setattr__(self, "_preprocessor", preprocessor)
        self.num_layers = num_layers if isinstance(num_layers, int) else list(num_layers)
        self.num_units = num_units
        self.num_heads = num_heads
        self.ffn_inner_dim = ffn_inner_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.ffn_dropout = ffn_dropout
        self.ffn_activation = keras.activations.get(ffn_activation)
        self.maximum_relative_position = maximum_relative_position
        self.pre_norm = pre_norm
        self.share_embeddings = _sharing_level(share_embeddings)
        self.embeddings_initializer = embeddings_initializer
        _embeddings_initializer(embeddings_initializer, num_units)  # checks the name first
        self.label_smoothing = label_smoothing
        self.guided_alignment_type = guided_alignment_type
        self.guided_alignment_weight = guided_alignment_weight
        self.source_eos = bool(source_eos)
        self.use_output_bias = bool(use_output_bias)
        self.query_key_value_init_gain = float(query_key_value_init_gain)

        self.source_vocabulary_size = preprocessor.source_lookup.vocabulary_size
        self.target_vocabulary_size = preprocessor.target_lookup.vocabulary_size
        if self.share_embeddings in ("source_target_input", "all") and list(
            preprocessor.source_vocabulary
        ) != list(preprocessor.target_vocabulary):
            raise ValueError(
                f"Translator: share_embeddings={self.share_embeddings!r} needs identical source "
                f"and target vocabularies, got {self.source_vocabulary_size - 1} source and "
                f"{self.target_vocabulary_size - 1} target tokens that differ"
            )

        policy = self.dtype_policy
        stack_arguments = dict(
            num_units=num_units,
            num_heads=num_heads,
            ffn_inner_dim=ffn_inner_dim,
            dropout=dropout,
            attention_dropout=attention_dropout,
            ffn_dropout=ffn_dropout,
            ffn_activation=self.ffn_activation,
            maximum_relative_position=maximum_relative_position,
            pre_norm=pre_norm,
            dtype=policy,
        )
        self.source_embedding = keras.layers.Embedding(
            self.source_vocabulary_size,
            num_units,
            embeddings_initializer=_embeddings_initializer(embeddings_initializer, num_units),
            dtype=policy,
            name="source_embedding",
        )
        if self.share_embeddings in ("source_target_input", "all"):
            self.target_embedding = self.source_embedding
        else:
            self.target_embedding = keras.layers.Embedding(
                self.target_vocabulary_size,
                num_units,
                embeddings_initializer=_embeddings_initializer(embeddings_initializer, num_units),
                dtype=policy,
                name="target_embedding",
            )
        self.encoder = TransformerEncoder(num_encoder_layers, name="encoder", **stack_arguments)
        self.decoder = TransformerDecoder(num_decoder_layers, name="decoder", **stack_arguments)
        self.output_layer = None
        if self.share_embeddings not in ("target", "all"):
            self.output_layer = keras.layers.Dense(
                self.target_vocabulary_size, use_bias=self.use_output_bias, dtype=policy,
                name="output_layer",
            )
        self.accuracy_metric = keras.metrics.Mean(name="accuracy")
        self.perplexity_metric = Perplexity(name="perplexity")
        # Built here, so that a reloaded model has its weights before any call (its inputs
        # in fit are strings, which Keras cannot build a model from).
        self.build(None)
        if self.query_key_value_init_gain != 1.0:
            self._draw_query_key_value_kernels()

    @property
    def preprocessor(self):
        """The `TranslationPreprocessor` (text to ids, ids to text) of this model."""
        return self._preprocessor

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

    # Forward pass.

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

    def _logits(self, decoder_outputs):
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
        return {"logits": self._logits(decoder_outputs), "attention": attention}

    def decode(self, source_ids, source_length, sampler, **options):
        """Translates source ids into target ids with a `BeamSampler`: see
        `kerasnmt.decoding.decode.decode` (this is `decode(self, source_ids, source_length,
        sampler, **options)`)."""
        return decode(self, source_ids, source_length, sampler, **options)

    def quantized_layers(self):
        """The paths of the layers that `quantize` (`keras.Model.quantize`) quantized."""
        return [layer.path for layer in self._flatten_layers()
                if getattr(layer, "quantization_mode", None)]

    def quantize(self, mode, **kwargs):
        """`keras.Model.quantize` (Keras quantizes the `Dense` and `Embedding` layers), then
        forgets the functions `translate` traced for the float weights.

        Keras runs a full `gc.collect()` for each float kernel it deletes; the objects that
        exist before quantizing are frozen meanwhile (`gc.freeze`), so each collection
        looks at the new objects only (a tiny model in a test process: 17 s -> under 1 s).
        """
        gc.freeze()
        try:
            super().quantize(mode, **kwargs)
        finally:
            gc.unfreeze()
        forget_translate_functions(self)

    def translate(
        self,
        sentences,
        sampler=None,
        batch_size=32,
        return_details=False,
        replace_unknown_target=False,
        jit_compile=True,
        shortlist=None,
        decoding_threads=2,
        maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
        length_ratio=DEFAULT_LENGTH_RATIO,
        length_offset=DEFAULT_LENGTH_OFFSET,
    ):
        """Translates sentences (raw text in, detokenized text out, in input order).

        The same pieces as the exported SavedModel (`kerasnmt.decoding`): invalid UTF-8
        becomes U+FFFD, each source is cut to its first `maximum_source_length` tokens, a
        sentence of no token (empty or blank) translates to `""` with score 0, and each
        sentence is padded to the smallest source width of `source_width_buckets` that
        holds it. Batch search runs the SavedModel's own graph (`TranslateFunction`) with
        batches of `batch_size` rows: the same request gives the same translations through
        `translate` and an export with the same options. Each compiled decoding is kept
        for every later call.

        With `BeamSampler(compact_batch=True)` (each result the one of its sentence decoded
        alone), the sentences of each source width instead stream through decoding slots,
        longest first (`decode` with `num_slots`; up to 16 times the slots a call, padded
        to the slots times a power of two): a slot takes the next sentence as soon as its
        own is done, so no step waits for the longest translation of a batch, and a
        stream's last sentences finish in a quarter of the slots. The streams go through
        `decoding_threads` concurrent calls of `batch_size / decoding_threads` slots each
        (`batch_size` sentences decoded at once in all): one decoding step uses little
        more than one core, two steps at once keep two busy.

        Args:
            sentences: source sentences (list, NumPy array or 1-D string tensor).
            sampler: a `kerasnmt.decoding.BeamSampler`; default `BeamSampler()`, beam search
                of width 4 without penalties (the configuration's defaults).
            batch_size: sentences decoded together.
            return_details: return the n-best hypotheses with their scores and alignments
                instead of the best translation only.
            replace_unknown_target: replace each unknown target token (the out-of-vocabulary
                id) by the source token it attends to most (first head of the last
                decoder layer).
            jit_compile: XLA-compile the decoding (one compilation per batch shape; faster
                decoding steps).
            shortlist: a `kerasnmt.data.LexicalShortlist`: decode each batch over the target
                tokens its sources' shortlists allow (faster; see `decode`), padded to
                `shortlist.width` ids; a batch that needs more is decoded over the whole
                vocabulary. Streams (`compact_batch`) are cut to fit the width.
            decoding_threads: with `compact_batch`, the streams decoded at once (above).
            maximum_source_length: sources are cut to their first this many tokens.
            length_ratio: `a` of the decoding length limit `floor(a * n) + b` (see
                `decode`).
            length_offset: `b` of that limit.

        Returns:
            A list of strings, one per sentence; with `return_details`, one list per
            sentence of `sampler.n_best` dicts, best first: `"text"` (the detokenized
            translation), `"tokens"` (its target tokens), `"score"` (penalized),
            `"log_prob"` (cumulative log-probability) and `"alignment"` (NumPy
            `[len(tokens), source tokens]` attention weights).
        """
        return translate(
            self, string_array(sentences, "sentences"), sampler, batch_size, return_details,
            replace_unknown_target, jit_compile, shortlist, decoding_threads,
            maximum_source_length, length_ratio, length_offset,
        )

    def export(self, filepath, sampler=None, **options):
        """Writes a SavedModel that translates raw text, for TF Serving or any TensorFlow.

        See `kerasnmt.export.export_translator` (this is `export_translator(self,
        filepath, sampler, **options)`): signatures `serving_default` (`source` strings ->
        `translation`, `score`) and `n_best`, decoding compiled with XLA for a few source
        widths, written atomically.

        Args:
            filepath: the SavedModel directory.
            sampler: the `BeamSampler` whose options the SavedModel keeps (default
                `BeamSampler()`).
            **options: `maximum_source_length`, `with_alignments`,
                `replace_unknown_target`, ... of `export_translator`.

        Returns:
            `filepath`.
        """
        from kerasnmt.export import export_translator  # noqa: PLC0415 (kerasnmt.export imports this module)

        return export_translator(self, filepath, sampler=sampler, **options)

    # Loss and metrics.

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits = tf.cast(y_pred["logits"], tf.float32)
        loss_sum, num_tokens, token_nll = cross_entropy_sequence_loss(
            logits,
            y["ids_out"],
            y["length"],
            self.label_smoothing,
            training=training,
            return_token_nll=True,
        )
        if training and self.guided_alignment_type is not None and "alignment" in y:
            loss_sum += guided_alignment_cost(
                y_pred["attention"][:, :-1],
                _fit_alignment(y["alignment"], tf.shape(y_pred["attention"])),
                y["length"] - 1,
                self.guided_alignment_type,
                self.guided_alignment_weight,
            )
        self._update_metrics(logits, tf.stop_gradient(token_nll), y)
        # Gradients are summed over replicas, so each replica's share is divided by their
        # number (as Keras' own losses and OpenNMT-tf do).
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return loss_sum / num_tokens / replicas

    def _update_metrics(self, logits, token_nll, y):
        # Flat [B * T] values and weights: Keras' Mean would average each sequence first.
        weights = tf.reshape(
            tf.sequence_mask(y["length"], tf.shape(y["ids_out"])[1], dtype=tf.float32), [-1]
        )
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), y["ids_out"])
        self.accuracy_metric.update_state(
            tf.reshape(tf.cast(correct, tf.float32), [-1]), sample_weight=weights
        )
        self.perplexity_metric.update_state(tf.reshape(token_nll, [-1]), sample_weight=weights)

    def compile(self, optimizer=None, **kwargs):
        """`keras.Model.compile`; the default optimizer is OpenNMT-tf's Transformer one.

        That is Adam (`beta_2=0.998`, applied by `kerasnmt.training.FusedAdam`) with
        `NoamDecay(2.0, num_units, 8000)`. No loss is given: the model computes its own. Pass
        `jit_compile=True` for XLA.
        """
        if optimizer is None:
            optimizer = FusedAdam(
                NoamDecay(2.0, self.num_units, 8000), beta_1=0.9, beta_2=0.998
            )
        super().compile(optimizer=optimizer, **kwargs)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Built in __init__: no batch is needed to build it. Keras would take one from the
        # iterator (a batch fewer to train on) and reduce it across replicas, which fails
        # on dict inputs under MultiWorkerMirroredStrategy (keras-team/keras#20329).
        super()._maybe_symbolic_build(iterator=None, data_batch=data_batch)

    def train_step(self, data):
        return _multi_worker_logs(super().train_step(data))

    def test_step(self, data):
        return _multi_worker_logs(super().test_step(data))

    def compile_from_config(self, config):
        # Keras skips this for models that override `compile`; ours only adds a default.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        batch_type="examples",
        effective_batch_size=None,
        length_bucket_width=1,
        pad_to_bucket_boundary=False,
        maximum_features_length=None,
        maximum_labels_length=None,
        shuffle=True,
        validation_data=None,
        callbacks=None,
        **kwargs,
    ):
        """Trains on raw sentences or on preprocessed batches.

        Args:
            x: source sentences (NumPy array, list or string tensor), or a `tf.data.Dataset`
                of `(source, target[, alignment])` strings (unbatched: bucketed and batched
                here; batched: preprocessed as they are) or of batched `(features, labels)`.
            y: target sentences when `x` holds source sentences.
            batch_size: examples or tokens per batch (per replica), default 32 examples.
            batch_type: `"examples"` or `"tokens"`.
            effective_batch_size: accumulate gradients over enough batches to reach it (in
                the unit of `batch_type`), as OpenNMT-tf does; the Noam schedule then
                advances once per weight update.
            length_bucket_width: bucket width (tokens) of the length bucketing.
            pad_to_bucket_boundary: pad batches to their bucket's length (fewer shapes for
                `jit_compile=True`).
            maximum_features_length: drop longer sources (tokens).
            maximum_labels_length: drop longer targets (tokens).
            shuffle: shuffle sentences given as arrays, at each pass.
            validation_data: `(sources, targets)` or a dataset, as `x`.
            callbacks: Keras callbacks; a `StopOnNonFiniteLoss` is always put first.
            **kwargs: passed to `keras.Model.fit` (`epochs`, `steps_per_epoch`, ...). A
                finite dataset is repeated; without `steps_per_epoch`, one pass over it is
                counted first (it is preprocessed once for that) and an epoch is that many
                batches.

        Returns:
            The Keras `History`.
        """
        return fitting.fit(
            self, x, y, batch_size=batch_size, batch_type=batch_type,
            effective_batch_size=effective_batch_size, length_bucket_width=length_bucket_width,
            pad_to_bucket_boundary=pad_to_bucket_boundary,
            maximum_features_length=maximum_features_length,
            maximum_labels_length=maximum_labels_length, shuffle=shuffle,
            validation_data=validation_data, callbacks=callbacks, **kwargs,
        )

    def evaluate(self, x=None, y=None, batch_size=None, batch_type="examples", **kwargs):
        """Evaluates on raw sentences or preprocessed batches (accepted as in `fit`).

        Returns the plain (not label-smoothed) token cross-entropy as `loss`, with
        `accuracy` and `perplexity`, as Keras' `evaluate` does.
        """
        return fitting.evaluate(self, x, y, batch_size=batch_size, batch_type=batch_type,
                                **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            preprocessor=keras.saving.serialize_keras_object(self.preprocessor),
            num_layers=self.num_layers,
            num_units=self.num_units,
            num_heads=self.num_heads,
            ffn_inner_dim=self.ffn_inner_dim,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            ffn_dropout=self.ffn_dropout,
            ffn_activation=keras.activations.serialize(self.ffn_activation),
            maximum_relative_position=self.maximum_relative_position,
            pre_norm=self.pre_norm,
            share_embeddings=self.share_embeddings,
            embeddings_initializer=self.embeddings_initializer,
            label_smoothing=self.label_smoothing,
            guided_alignment_type=self.guided_alignment_type,
            guided_alignment_weight=self.guided_alignment_weight,
            source_eos=self.source_eos,
            use_output_bias=self.use_output_bias,
            query_key_value_init_gain=self.query_key_value_init_gain,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(**config)


def _float_kernel(dense):
    """The kernel of a `Dense` layer in float, Keras' int8 quantization undone (int8 values
    divided by the scale of their output column, as the layer's own call does)."""
    if dense.quantization_mode is None:
        return dense.kernel
    if dense.quantization_mode != "int8":
        raise ValueError(f"Translator: the output layer is quantized to "
                         f"{dense.quantization_mode}; decoding reads int8 or float kernels")
    return tf.cast(dense._kernel, tf.float32) / dense.kernel_scale


def _end_marked(source_ids, source_length):
    """`[B, S]` source ids -> `[B, S + 1]` with `</s>` after each sentence's tokens, and the
    lengths counting it."""
    source_length = tf.cast(source_length, tf.int32)
    ids = tf.pad(source_ids, [[0, 0], [0, 1]])
    end = tf.equal(tf.range(tf.shape(ids)[1])[tf.newaxis], source_length[:, tf.newaxis])
    return tf.where(end, END_OF_SENTENCE_ID, ids), source_length + 1


def _fit_alignment(alignment, attention_shape):
    """Cuts or zero-pads a batch of `[T_a, S_a]` alignments to `[T - 1, S]` (no `</s>` step)."""
    rows, columns = attention_shape[1] - 1, attention_shape[2]
    alignment = alignment[:, :rows, :columns]
    padding = [[0, 0], [0, rows - tf.shape(alignment)[1]], [0, columns - tf.shape(alignment)[2]]]
    return tf.pad(alignment, padding)
