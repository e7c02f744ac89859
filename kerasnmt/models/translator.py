"""The translation model users fit, evaluate (and later translate with and export)."""

import gc
import inspect

import keras
import tensorflow as tf

from kerasnmt.data.string_arrays import string_array
from kerasnmt.decoding.decode import decode
from kerasnmt.decoding.translate import (
    TRANSLATION_BATCH_SIZE,
    forget_translate_functions,
    translate,
)
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
)
from kerasnmt.models.transformer_backbone import ARCHITECTURE_ARGUMENTS, TransformerBackbone
from kerasnmt.training.losses import (
    GUIDED_ALIGNMENT_TYPES,
    cross_entropy_sequence_loss,
    guided_alignment_cost,
)
from kerasnmt.training import fitting
from kerasnmt.training.optimizers import default_optimizer
from kerasnmt.training.perplexity import Perplexity


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

    Network: a `TransformerBackbone` (`backbone`), built from the architecture arguments
    below and the preprocessor's vocabulary sizes, or given. Its layers are also this
    model's attributes (`source_embedding`, `target_embedding`, `encoder`, `decoder`,
    `output_layer`, `output_bias`), under which checkpoints and `.keras` files have stored
    them since kerasnmt 0.1.0: the backbone itself is kept out of Keras' and TensorFlow's
    tracking so that those files keep their layout, old and new alike.

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
        backbone: a `TransformerBackbone` of those sizes; default: one built from the
            architecture arguments among `**kwargs`.
        label_smoothing: label smoothing of the training loss.
        guided_alignment_type: `None`, `"ce"` or `"mse"`.
        guided_alignment_weight: the weight of the guided alignment cost.
        **kwargs: without `backbone`, the architecture arguments of `TransformerBackbone`
            (`num_layers`, `num_units`, `num_heads`, `ffn_inner_dim`, `dropout`,
            `maximum_relative_position`, `share_embeddings`, `source_eos`, ...); and
            `keras.Model`'s (e.g. `name`, `dtype="mixed_bfloat16"`). Sharing the source
            embeddings needs identical source and target vocabularies. With `source_eos`
            the guided alignment cost attends over the `S + 1` positions, and `decode`
            returns alignments over the `S` tokens.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> from kerasnmt.training.fitting import model_data
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
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

    Reference: see `TransformerBackbone`.
    """

    def __init__(
        self,
        preprocessor,
        backbone=None,
        label_smoothing=0.1,
        guided_alignment_type=None,
        guided_alignment_weight=1.0,
        **kwargs,
    ):
        architecture = {key: kwargs.pop(key) for key in ARCHITECTURE_ARGUMENTS if key in kwargs}
        super().__init__(**kwargs)
        if guided_alignment_type is not None and guided_alignment_type not in GUIDED_ALIGNMENT_TYPES:
            raise ValueError(
                f"Translator: guided_alignment_type must be None or one of "
                f"{GUIDED_ALIGNMENT_TYPES}, got {guided_alignment_type!r}"
            )
        # Not tracked as a sublayer: it runs in tf.data, never in the model's step, and its
        # string layers would make Keras refuse `jit_compile=True` for the whole model.
        object.__setattr__(self, "_preprocessor", preprocessor)
        self.label_smoothing = label_smoothing
        self.guided_alignment_type = guided_alignment_type
        self.guided_alignment_weight = guided_alignment_weight
        sizes = (preprocessor.source_lookup.vocabulary_size,
                 preprocessor.target_lookup.vocabulary_size)
        if backbone is None:
            backbone = TransformerBackbone(*sizes, dtype=self.dtype_policy, **architecture)
        elif architecture:
            raise ValueError(f"Translator: give a backbone or its architecture arguments, "
                             f"not both (got {', '.join(architecture)})")
        elif (backbone.source_vocabulary_size, backbone.target_vocabulary_size) != sizes:
            raise ValueError(
                f"Translator: the backbone's vocabulary sizes "
                f"{(backbone.source_vocabulary_size, backbone.target_vocabulary_size)} are "
                f"not the preprocessor's {sizes}"
            )
        if backbone.share_embeddings in ("source_target_input", "all") and list(
            preprocessor.source_vocabulary
        ) != list(preprocessor.target_vocabulary):
            raise ValueError(
                f"Translator: share_embeddings={backbone.share_embeddings!r} needs identical "
                f"source and target vocabularies, got {sizes[0] - 1} source and "
                f"{sizes[1] - 1} target tokens that differ"
            )
        # Untracked, its layers tracked here under the names files have used since 0.1.0
        # (see the class docstring); the order is theirs too (optimizer slots follow it).
        object.__setattr__(self, "_backbone", backbone)
        if backbone.output_bias is not None:
            self.output_bias = backbone.output_bias
        self.source_embedding = backbone.source_embedding
        self.target_embedding = backbone.target_embedding
        self.encoder = backbone.encoder
        self.decoder = backbone.decoder
        self.output_layer = backbone.output_layer
        self.accuracy_metric = keras.metrics.Mean(name="accuracy")
        self.perplexity_metric = Perplexity(name="perplexity")
        self.built = True

    @property
    def backbone(self):
        """The `TransformerBackbone`: the network, ids in, logits out."""
        return self._backbone

    def __dir__(self):
        # Keras' `.keras` saving walks `dir()`: without the backbone, it finds the backbone's
        # layers and output bias under this model's own names, the layout since 0.1.0.
        return [name for name in super().__dir__() if name not in ("backbone", "_backbone")]

    @property
    def preprocessor(self):
        """The `TranslationPreprocessor` (text to ids, ids to text) of this model."""
        return self._preprocessor

    def call(self, inputs, training=None):
        return self.backbone(inputs, training=training)

    def decode(self, source_ids, source_length, sampler, **options):
        """Translates source ids into target ids with a `BeamSampler`: see
        `kerasnmt.decoding.decode.decode` (this is `decode(self.backbone, source_ids,
        source_length, sampler, **options)`)."""
        return decode(self.backbone, source_ids, source_length, sampler, **options)

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
        batch_size=TRANSLATION_BATCH_SIZE,
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
        `decoding_threads` streams at once (`kerasnmt.decoding.translate`).

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
        """Writes a SavedModel that translates raw text, for TF Serving or any TensorFlow:
        `kerasnmt.export.export_translator(self, filepath, sampler, **options)`, whose
        signatures are `serving_default` (`source` strings -> `translation`, `score`) and
        `n_best`. Returns `filepath`.
        """
        from kerasnmt.export import export_translator  # noqa: PLC0415 (kerasnmt.export imports this module)

        return export_translator(self, filepath, sampler=sampler, **options)

    def save_to_preset(self, preset_dir, sampler=None, force=False, **translate_options):
        """A keras-hub preset of this model: `kerasnmt.export.save_preset(self, ...)`."""
        from kerasnmt.export import save_preset  # noqa: PLC0415 (kerasnmt.export imports this module)
        return save_preset(self, preset_dir, sampler, force, **translate_options)

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
        `NoamDecay(2.0, num_units, 8000)` (`kerasnmt.training.optimizers.default_optimizer`,
        the defaults of the configuration's `params` too). No loss is given: the model
        computes its own. Pass `jit_compile=True` for XLA.
        """
        if optimizer is None:
            optimizer = default_optimizer(self.backbone.num_units)
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
            maximum_labels_length: drop longer targets (tokens and the end mark `</s>`, as
                OpenNMT-tf counts them).
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
            backbone=keras.saving.serialize_keras_object(self.backbone),
            label_smoothing=self.label_smoothing,
            guided_alignment_type=self.guided_alignment_type,
            guided_alignment_weight=self.guided_alignment_weight,
        )
        return config

    @classmethod
    def from_config(cls, config):
        """The model of `get_config`, or of a config of kerasnmt 0.1.0 (the architecture
        arguments in place of `backbone`)."""
        config = dict(config)
        config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        if "backbone" in config:
            config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


# The arguments of `Translator` that make its training loss, with their defaults (the
# configuration's `params` section takes them as its own).
LOSS_DEFAULTS = {
    name: inspect.signature(Translator).parameters[name].default
    for name in ("label_smoothing", "guided_alignment_type", "guided_alignment_weight")
}


def _fit_alignment(alignment, attention_shape):
    """Cuts or zero-pads a batch of `[T_a, S_a]` alignments to `[T - 1, S]` (no `</s>` step)."""
    rows, columns = attention_shape[1] - 1, attention_shape[2]
    alignment = alignment[:, :rows, :columns]
    padding = [[0, 0], [0, rows - tf.shape(alignment)[1]], [0, columns - tf.shape(alignment)[2]]]
    return tf.pad(alignment, padding)
