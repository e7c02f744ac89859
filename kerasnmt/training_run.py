"""A training run from a YAML configuration: what `kerasnmt train` does.

`train(config)` takes a configuration checked by `kerasnmt.config.load_config` and runs
it: tokenizers and vocabularies -> `TranslationPreprocessor` -> `Translator` (the `model`
section) -> `kerasnmt.data.training_dataset` (the `train` section) -> `Translator.fit`,
with checkpoints every `train.save_checkpoints_steps` (the last
`train.keep_checkpoint_max` kept), resuming from the latest checkpoint of `model_dir`,
TensorBoard summaries under `model_dir/logs`, and an evaluation of the validation set
every `eval.steps` (loss, then BLEU and chrF of its translations) that can export the
best model. The other functions build each piece from a configuration, for the
commands that need a model without training it (`export`, `translate`,
`average-checkpoints`).

Steps are optimizer steps (weight updates): with gradient accumulation
(`train.effective_batch_size`), one step is several batches. The model, its optimizer and
its checkpoint are built under the `tf.distribute` strategy of
`kerasnmt.training.distribution.training_strategy` (one device, several GPUs, the workers
of `TF_CONFIG`, or a TPU).
"""

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import threading
import time

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from kerasnmt.config import missing_keys
from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.data.result_file import result_file
from kerasnmt.data.shards import check_shards_preprocessor
from kerasnmt.data.training_pipeline import training_dataset
from kerasnmt.data.text_files import read_line_aligned
from kerasnmt.evaluation import score_translations
from kerasnmt.export import export_translator
from kerasnmt.decoding.beam_sampler import BeamSampler
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.layers import (
    SentencePieceTokenizer,
    TranslationPreprocessor,
    WhitespaceTokenizer,
)
from kerasnmt.models import Translator
from kerasnmt.models.transformer_backbone import ARCHITECTURE_ARGUMENTS
from kerasnmt.training import CheckpointCallback, MovingAverage, average_checkpoints
from kerasnmt.training.checkpoint_callback import restore_latest, training_checkpoint
from kerasnmt.training.distribution import (
    WorkerLostError,
    distributed_input,
    is_chief,
    output_directory,
    training_strategy,
)
from kerasnmt.training.optimizer_step import optimizer_step
from kerasnmt.training.precision import choose_precision
from kerasnmt.training.run_optimizer import accumulation_steps, build_optimizer
from kerasnmt.training.readable_checkpoint import checkpoint_damage, newest_readable_checkpoint
from kerasnmt.training.run_recipe import (
    check_checkpoint_recipe,
    check_run_recipe,
    copy_run_recipe,
)

# What a configuration must set to build a model, and to train it.
MODEL_KEYS = ("data.source_vocabulary", "data.target_vocabulary")
TRAINING_KEYS = ("model_dir",) + MODEL_KEYS + (("data.train_features_file", "data.train_shards"),)
AVERAGE_DIRECTORY = "avg"
EXPORT_DIRECTORY = "export"
LOG_DIRECTORY = "logs"
EVALUATIONS_FILE = "evaluations.jsonl"
PREDICTIONS_DIRECTORY = "eval"  # model_dir/eval/predictions.txt.STEP, as OpenNMT-tf


# ---------------------------------------------------------------------------------------
# The pieces of a run, each from the configuration.
# ---------------------------------------------------------------------------------------


def build_preprocessor(config):
    """The `TranslationPreprocessor` of `config["data"]` (see `preprocessor_of`)."""
    data = config["data"]
    return preprocessor_of(
        data["source_vocabulary"], data["target_vocabulary"],
        data["source_sentencepiece"], data["target_sentencepiece"],
        data["sentencepiece_sampling_alpha"],
    )


def preprocessor_of(source_vocabulary, target_vocabulary, source_sentencepiece=None,
                    target_sentencepiece=None, sentencepiece_sampling_alpha=None):
    """A `TranslationPreprocessor` of SentencePiece tokenizers (whitespace ones where no
    model is given; `sentencepiece_sampling_alpha` samples their segmentations in
    training) and the two vocabularies; no maximum lengths: training drops long pairs,
    serving truncates at export."""

    def tokenizer(model):
        if not model:
            return WhitespaceTokenizer()
        return SentencePieceTokenizer(model, sampling_alpha=sentencepiece_sampling_alpha)

    return TranslationPreprocessor(
        tokenizer(source_sentencepiece), tokenizer(target_sentencepiece),
        source_vocabulary, target_vocabulary,
    )


def run_precision(config):
    """The `Precision` (dtype policy and why) of `train.mixed_precision`, `auto` resolved
    for this machine (see `kerasnmt.training.precision.choose_precision`)."""
    train_section = config["train"]
    return choose_precision(train_section["mixed_precision"], tpu=train_section["tpu"] is not None)


def build_translator(config):
    """A new `Translator` shaped by `config["model"]` (and the loss options of `params`),
    in the dtype policy of `run_precision` when it is not float32."""
    model, params = config["model"], config["params"]
    options = {}
    policy = run_precision(config).policy
    if policy is not None:
        options["dtype"] = policy
    return Translator(
        build_preprocessor(config),
        **{key: model[key] for key in ARCHITECTURE_ARGUMENTS if key in model},
        label_smoothing=params["label_smoothing"],
        guided_alignment_type=params["guided_alignment_type"],
        guided_alignment_weight=params["guided_alignment_weight"],
        **options,
    )


def build_sampler(config, n_best=None):
    """The `BeamSampler` of the decoding options in `config["params"]`.

    Args:
        config: a checked configuration.
        n_best: hypotheses to return; default `params.num_hypotheses`.
    """
    params = config["params"]
    return BeamSampler(
        beam_size=params["beam_width"],
        length_penalty=params["length_penalty"],
        length_normalization=params["length_normalization"],
        freeze_finished_scores=params["freeze_finished_scores"],
        finished_hypotheses=params["finished_hypotheses"],
        coverage_penalty=params["coverage_penalty"],
        top_k=params["sampling_topk"],
        temperature=params["sampling_temperature"],
        n_best=params["num_hypotheses"] if n_best is None else n_best,
        max_length=params["maximum_decoding_length"],
        min_length=params["minimum_decoding_length"],
        seed=config["train"]["seed"],
        compact_batch=params["compact_batch"],
        early_exit=params["early_exit"],
    )


def build_shortlist(config, preprocessor, path=None):
    """The `LexicalShortlist` of `path`, else of `params.shortlist`, for `preprocessor`'s
    vocabularies (`params.shortlist_width` wide), or None. `config` may be None."""
    path = path or (config["params"]["shortlist"] if config else None)
    if path is None:
        return None
    width = {"width": config["params"]["shortlist_width"]} if config else {}
    return LexicalShortlist.load(path, preprocessor.source_vocabulary,
                                 preprocessor.target_vocabulary, **width)


def run_training_dataset(config, preprocessor, start_batch=0):
    """The training batches `kerasnmt train` reads for `config` (its `data` and `train`
    keys), from `kerasnmt.data.training_dataset`: global batches of `train.batch_size`
    per replica of the current `tf.distribute` strategy, from the text files or from the
    shards of `data.train_shards` (checked against `preprocessor`, and started at batch
    `start_batch`)."""
    data, train_section = config["data"], config["train"]
    if data["train_shards"] is not None:
        corpus = dict(
            shards=data["train_shards"],
            start_batch=start_batch,
            preprocessor_check=lambda index: check_shards_preprocessor(index, preprocessor),
        )
    else:
        corpus = dict(
            source_file=data["train_features_file"],
            target_file=data["train_labels_file"],
            preprocessor=preprocessor,
            alignment_file=data["train_alignments"],
        )
    return training_dataset(
        **corpus,
        batch_size=train_section["batch_size"],
        batch_type=train_section["batch_type"],
        batch_size_multiple=train_section["batch_size_multiple"],
        length_bucket_width=train_section["length_bucket_width"],
        maximum_features_length=train_section["maximum_features_length"],
        maximum_labels_length=train_section["maximum_labels_length"],
        pad_to_bucket_boundary=train_section["pad_to_bucket_boundary"],
        sample_buffer_size=train_section["sample_buffer_size"],
        seed=train_section["seed"],
        num_replicas=tf.distribute.get_strategy().num_replicas_in_sync,
        prefetch_buffer_size=train_section["prefetch_buffer_size"] or tf.data.AUTOTUNE,
        train_files_weights=data["train_files_weights"],
    )


def latest_checkpoint(config, checkpoint=None):
    """The checkpoint a model is restored from for export or translation.

    Args:
        config: a checked configuration.
        checkpoint: a checkpoint path (`model_dir/ckpt-1000`) or a directory of
            checkpoints (its newest readable one is taken); default: `model_dir/avg`'s
            latest when it averages up to the latest training step, else `model_dir`'s
            latest. A damaged default is reported and the next newest readable one of
            `model_dir` taken instead (see `newest_readable_checkpoint`).

    Raises:
        ValueError: when there is no checkpoint there, when the checkpoint given is
            damaged, or when every candidate is.
    """
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
        if os.path.isdir(checkpoint):
            path = newest_readable_checkpoint(_checkpoints_newest_first(checkpoint))
            if path is None:
                raise ValueError(f"no checkpoint in {checkpoint}")
            return path
        if not tf.io.gfile.exists(checkpoint + ".index"):
            raise ValueError(f"{checkpoint}: no such checkpoint (no {checkpoint}.index)")
        damage = checkpoint_damage(checkpoint)
        if damage is not None:
            raise ValueError(f"checkpoint {checkpoint} is damaged: {damage}")
        return checkpoint
    model_dir = config["model_dir"]
    if model_dir is None:
        raise ValueError("no checkpoint given and model_dir is not set in the configuration")
    candidates = _checkpoints_newest_first(model_dir)
    averaged = tf.train.latest_checkpoint(os.path.join(model_dir, AVERAGE_DIRECTORY))
    if averaged is not None and (not candidates or _step_of(averaged) >= _step_of(candidates[0])):
        candidates.insert(0, averaged)
    path = newest_readable_checkpoint(candidates)
    if path is None:
        raise ValueError(f"no checkpoint in {model_dir}: train first (kerasnmt train)")
    return path


def _checkpoints_newest_first(directory):
    """The checkpoints a directory's `checkpoint` state file lists, newest first."""
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = [os.path.join(directory, os.path.basename(path))
             for path in state.all_model_checkpoint_paths]
    return [path for path in reversed(paths) if tf.io.gfile.exists(path + ".index")]


def _step_of(checkpoint_path):
    """The step of a `ckpt-STEP` checkpoint (`CheckpointCallback` numbers them by step)."""
    return int(checkpoint_path.rsplit("-", 1)[-1])


def restore_translator(config, checkpoint=None):
    """A `Translator` built from `config` with the weights of a checkpoint.

    Args:
        config: a checked configuration (its `model` and `data` vocabularies must be those
            the checkpoint was trained with).
        checkpoint: see `latest_checkpoint`.

    Returns:
        `(translator, checkpoint_path)`.
    """
    path = latest_checkpoint(config, checkpoint)
    check_checkpoint_recipe(config, path)
    translator = build_translator(config)
    try:
        status = tf.train.Checkpoint(model=translator).restore(path)
        status.expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError) as error:
        detail = str(error).split(" Showing")[0].splitlines()[0]
        raise ValueError(
            f"{path} does not match the model of the configuration (the model section or "
            f"the vocabularies differ from those it was trained with): {detail}"
        ) from None
    return translator, path


# ---------------------------------------------------------------------------------------
# Callbacks of a run.
# ---------------------------------------------------------------------------------------


# TensorBoard's scalar summaries, written with core TensorFlow (`tf.summary.scalar` needs the
# tensorboard package, which TensorFlow no longer installs).
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


def write_scalar(name, value, step):
    """Writes a TensorBoard scalar to the default summary writer."""
    tf.summary.write(name, tf.constant(float(value), tf.float32), step=step,
                     metadata=_SCALAR_METADATA)


class _StopAtStep(keras.callbacks.Callback):
    """Stops at `max_step` optimizer steps, after `time_limit` seconds of training, or at
    the end of the step during which `request_stop(signal_number)` was called; a second
    SIGINT (Ctrl-C twice) interrupts at once."""

    def __init__(self, max_step, time_limit):
        super().__init__()
        self.max_step = max_step
        self.time_limit = time_limit
        self.reason = None
        self.signal_number = None
        self.train_seconds = 0.0

    def stop(self, reason):
        """Ends training after the current step; the first reason given is the one kept."""
        if self.reason is None:
            self.reason = reason

    def request_stop(self, signal_number):
        if self.signal_number is not None and signal_number == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal_number = signal_number
        self.stop(f"received {signal.Signals(signal_number).name}")

    def on_train_begin(self, logs=None):
        self._start = time.monotonic()

    def on_train_end(self, logs=None):
        self.train_seconds = time.monotonic() - self._start

    def on_train_batch_end(self, batch, logs=None):
        if self.max_step is not None and optimizer_step(self.model) >= self.max_step:
            self.stop(f"reached train.max_step ({self.max_step})")
        elif self.time_limit is not None and time.monotonic() - self._start >= self.time_limit:
            self.stop(f"reached the time limit ({self.time_limit:g} s)")
        if self.reason is not None:
            self.model.stop_training = True


@contextlib.contextmanager
def _stopping_on(signal_numbers, stopper):
    """Within the block, each of `signal_numbers` asks `stopper` to stop training after the
    current step instead of killing the process (in the main thread only, where Python
    handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        number: signal.signal(number, lambda number, frame: stopper.request_stop(number))
        for number in signal_numbers
        # A signal the process was started ignoring (SIGINT of a background job) stays so.
        if signal.getsignal(number) != signal.SIG_IGN
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            # None: the previous handler was not set from Python; the default is the closest.
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


class _TrainingSummaries(keras.callbacks.Callback):
    """Writes the loss and metrics of the steps since the last summary, and the learning
    rate, to TensorBoard every `every` steps, at the optimizer step (so a resumed run
    continues the curves).

    Keras' batch logs are means since the epoch began (an epoch is `eval.steps` steps):
    a summary is instead the mean over its own window, taken from the metrics' running
    totals (each `keras.metrics.Mean` keeps `total` and `count`), as OpenNMT-tf logs the
    current loss. The batches of a window that an epoch boundary (a metrics reset) cuts
    are carried over.
    """

    def __init__(self, directory, every):
        super().__init__()
        self.writer = tf.summary.create_file_writer(directory)
        self.every = every
        self._last_step = None
        # name -> (total, count) to subtract from a metric's totals to get the window's:
        # its totals at the last summary, less what an epoch's end left unwritten.
        self._offsets = {}
        self._scratch = {}  # name -> a copy of the metric, to compute a window's result

    def on_epoch_end(self, epoch, logs=None):
        # Keras resets the totals to zero as the next epoch begins.
        for metric in self._mean_metrics():
            total, count = _totals(metric)
            offset = self._offsets.get(metric.name, (0.0, 0.0))
            self._offsets[metric.name] = (offset[0] - total, offset[1] - count)

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
        if step == 0 or step % self.every or step == self._last_step:
            return  # (0: the first batches of an accumulated update)
        self._last_step = step
        values = dict(logs or {})
        for metric in self._mean_metrics():
            total, count = _totals(metric)
            offset = self._offsets.get(metric.name, (0.0, 0.0))
            self._offsets[metric.name] = (total, count)
            if count - offset[1] > 0:
                values[metric.name] = self._result_of(metric, total - offset[0],
                                                      count - offset[1])
        with self.writer.as_default():
            for name, value in values.items():
                write_scalar(name, value, step)
            learning_rate = self.model.optimizer.learning_rate
            write_scalar("learning_rate", keras.ops.convert_to_numpy(learning_rate), step)
        self.writer.flush()

    def on_train_end(self, logs=None):
        self.writer.flush()

    def _mean_metrics(self):
        return [metric for metric in self.model.metrics
                if isinstance(metric, keras.metrics.Mean)]

    def _result_of(self, metric, total, count):
        """What `metric` would report with these totals (its own `result`, e.g. `exp` for
        perplexity)."""
        if metric.name not in self._scratch:
            self._scratch[metric.name] = metric.__class__.from_config(metric.get_config())
        scratch = self._scratch[metric.name]
        scratch.total.assign(total)
        scratch.count.assign(count)
        return float(keras.ops.convert_to_numpy(scratch.result()))


def _totals(metric):
    return (float(keras.ops.convert_to_numpy(metric.total)),
            float(keras.ops.convert_to_numpy(metric.count)))


class _Evaluation(keras.callbacks.Callback):
    """At each multiple of `eval.steps` optimizer steps (also in a run resumed between two,
    as OpenNMT-tf) and when training ends on another step: validation loss, BLEU (also
    Moses-tokenized and lowercased, as published: `bleu_tokenized_lc`) and chrF of the
    translations, TensorBoard summaries, the history file, and the export of the best
    model. The values join the logs of the epoch they fall in as `val_loss`, `val_bleu`,
    `val_bleu_tokenized_lc`, `val_chrf` (in Keras' `History`). With
    `eval.early_stopping.steps`, an evaluation that meets `early_stop` ends training after
    its step. `evaluated_weights` returns the context manager the model is evaluated and
    exported in (`MovingAverage.swapped_in`: the moving average of the weights)."""

    def __init__(self, config, sampler, export_fn, stopper, evaluated_weights=None):
        super().__init__()
        self.evaluated_weights = evaluated_weights or contextlib.nullcontext
        evaluation, data = config["eval"], config["data"]
        self.config = config
        self.sampler = sampler
        self.export_fn = export_fn
        self.stopper = stopper
        self.sources, self.references = read_line_aligned(data["eval_features_file"],
                                                          data["eval_labels_file"])
        if not self.sources:
            raise ValueError(f"{data['eval_features_file']}: the validation set is empty")
        model_dir = config["model_dir"]
        self.writer = tf.summary.create_file_writer(os.path.join(model_dir, LOG_DIRECTORY, "eval"))
        self.history_path = os.path.join(model_dir, EVALUATIONS_FILE)
        self.metric = evaluation["export_on_best"]
        self.early_stopping = evaluation["early_stopping"]
        self.every = evaluation["steps"]
        self.history = _read_history(self.history_path)
        self.last_step = self.history[-1]["step"] if self.history else None
        self._epoch_values = {}

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)  # 0 after the first batches of an update
        if step > 0 and step % self.every == 0:
            self._evaluate(step)

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training:  # the end of training
            self._evaluate(optimizer_step(self.model))
        if logs is not None:
            logs.update(self._epoch_values)
        self._epoch_values = {}

    def _evaluate(self, step):
        if step == self.last_step or self.stopper.signal_number is not None:
            return  # Already evaluated, or asked to stop: leave at once.
        self.last_step = step
        with self.evaluated_weights():
            self._evaluate_and_export(step)
        self._stop_early()

    def _evaluate_and_export(self, step):
        # `evaluate` resets the metrics, whose totals the epoch's logs are still made of.
        metric_values = [keras.ops.convert_to_numpy(variable)
                         for variable in self.model.metrics_variables]
        predictions_path = None
        if self.config["eval"]["save_eval_predictions"]:
            predictions_path = os.path.join(self.config["model_dir"], PREDICTIONS_DIRECTORY,
                                            f"predictions.txt.{step}")
        results = evaluate_run(self.model, self.config, self.sampler,
                               self.sources, self.references, predictions_path)
        for variable, value in zip(self.model.metrics_variables, metric_values):
            variable.assign(value)
        record = {"step": step, **{key: value for key, value in results.items()
                                   if not key.endswith("_signature")}}
        text = ", ".join(f"{key} {value:.4g}" if key == "loss" else f"{key} {value:.2f}"
                         for key, value in record.items() if key != "step")
        print(f"\nEvaluation at step {step}: {text}", flush=True)
        for key, value in results.items():
            if key.endswith("_signature"):
                print(f"  {key.replace('_', ' ')}: {value}", flush=True)
        with self.writer.as_default():
            for key, value in record.items():
                if key != "step":
                    write_scalar(key, value, step)
        self.writer.flush()
        self._epoch_values = {f"val_{key}": value for key, value in record.items()
                              if key != "step"}
        if self.metric is not None and self._is_best(record):
            path = self.export_fn(self.model, step)
            record["exported"] = path
            print(f"  new best {self.metric}: exported to {path}", flush=True)
        self.history.append(record)
        with open(self.history_path, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")

    def _values_of(self, metric):
        """The metric's values over the evaluations so far, oldest first."""
        return [entry[metric] for entry in self.history if metric in entry]

    def _stop_early(self):
        steps, metric, min_improvement = (
            self.early_stopping[key] for key in ("steps", "metric", "min_improvement")
        )
        if steps is not None and early_stop(self._values_of(metric), steps, min_improvement,
                                            higher_is_better=_higher_is_better(metric)):
            reason = (f"early stopping: {metric} did not improve by more than "
                      f"{min_improvement:g} in the last {steps} evaluations")
            print(f"  {reason}", flush=True)
            self.stopper.stop(reason)

    def _is_best(self, record):
        previous = self._values_of(self.metric)
        if not previous:
            return True
        if _higher_is_better(self.metric):
            return record[self.metric] > max(previous)
        return record[self.metric] < min(previous)


def _higher_is_better(metric):
    """BLEU and chrF are better higher, the loss lower."""
    return metric != "loss"


def early_stop(values, steps, min_improvement=0.0, higher_is_better=False):
    """OpenNMT-tf's early stopping condition: none of the last `steps` values improves by
    more than `min_improvement` on the value before them (False with fewer than
    `steps + 1` values).

    Examples:
        >>> early_stop([3.0, 2.5, 2.45, 2.48], steps=2, min_improvement=0.1)  # none < 2.4
        True
        >>> early_stop([3.0, 2.5, 2.45, 2.48], steps=2)  # 2.45 < 2.5
        False
        >>> early_stop([20.1, 21.0, 20.9], steps=1, higher_is_better=True)  # BLEU
        True
    """
    if len(values) < steps + 1:
        return False
    reference = values[-steps - 1]
    if higher_is_better:
        return all(value <= reference + min_improvement for value in values[-steps:])
    return all(value >= reference - min_improvement for value in values[-steps:])


def _read_history(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def evaluate_run(translator, config, sampler, sources, references, predictions_path=None):
    """Validation loss and the `eval.scorers` of the translations of `sources`.

    The loss is computed on batches of `eval.batch_size` (`eval.batch_type`); the
    translations on batches of `eval.batch_size` sentences (32 when it counts tokens),
    written one a line to `predictions_path` when given.

    Returns:
        `{"loss": float, "bleu": float, "bleu_signature": str, "chrf": ..., ...}` for the
        scorers of `config["eval"]["scorers"]`. With `bleu`, also `bleu_tokenized_lc` and
        its signature: BLEU as papers on Multi30k publish it, on lowercased text tokenized
        by the Moses tokenizer for `eval.target_language` (see
        `kerasnmt.evaluation.score_translations`).
    """
    evaluation = config["eval"]
    loss = translator.evaluate(
        x=np.array(sources, dtype=object),
        y=np.array(references, dtype=object),
        batch_size=evaluation["batch_size"],
        batch_type=evaluation["batch_type"],
        verbose=0,
        return_dict=True,
    )["loss"]
    translations = translator.translate(
        sources,
        sampler=sampler,
        batch_size=(
            evaluation["batch_size"] if evaluation["batch_type"] == "examples"
            else TRANSLATION_BATCH_SIZE
        ),
        replace_unknown_target=config["params"]["replace_unknown_target"],
        **decoding_options(config),
    )
    if predictions_path is not None:
        os.makedirs(os.path.dirname(predictions_path), exist_ok=True)
        with result_file(predictions_path) as stream:
            stream.writelines(f"{translation}\n" for translation in translations)
    results = {"loss": float(loss)}
    scores = score_translations(translations, references, language=evaluation["target_language"])
    reported = list(evaluation["scorers"])
    if "bleu" in reported:
        reported.insert(reported.index("bleu") + 1, "bleu_tokenized_lc")
    for scorer in reported:
        results[scorer] = getattr(scores, scorer)
        results[f"{scorer}_signature"] = getattr(scores, f"{scorer}_signature")
    return results


def _export_best(config, sampler):
    """`export_fn(translator, step)`: exports to `model_dir/export/STEP`, keeping the last
    `eval.max_exports_to_keep` exports."""
    directory = os.path.join(config["model_dir"], EXPORT_DIRECTORY)

    def export_fn(translator, step):
        path = os.path.join(directory, str(step))
        export_translator(translator, path, sampler=sampler, **decoding_options(config))
        steps = sorted(int(name) for name in os.listdir(directory) if name.isdigit())
        for old in steps[: -config["eval"]["max_exports_to_keep"]]:
            shutil.rmtree(os.path.join(directory, str(old)), ignore_errors=True)
        return path

    return export_fn


def decoding_options(config):
    """The options of `Translator.translate` and `export_translator` that come from the
    configuration: the decoding length limit and the source cut (the longest sources the
    model was trained on, `train.maximum_features_length`, when it is set)."""
    options = {
        "length_ratio": config["params"]["decoding_length_ratio"],
        "length_offset": config["params"]["decoding_length_offset"],
    }
    maximum = config["train"]["maximum_features_length"]
    if maximum is not None:
        options["maximum_source_length"] = maximum
    return options


# ---------------------------------------------------------------------------------------
# The run.
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class TrainingResult:
    """What a training run ended with.

    Attributes:
        translator: the trained `Translator` (with averaged weights when the run averaged
            checkpoints).
        step: the last optimizer step.
        checkpoint: the last checkpoint written.
        averaged_checkpoint: the averaged checkpoint, or None.
        stop_reason: why training stopped.
        history: the Keras `History` of `fit` (None when there was nothing to train).
        signal_number: the signal that stopped the run (`signal.SIGTERM`), or None. A run
            stopped by a signal skips the final evaluation and checkpoint averaging.
        train_seconds: the wall-clock time of this call's training (`fit`, evaluations
            included; building the model and averaging checkpoints excluded).
    """

    translator: Translator
    step: int
    checkpoint: str
    averaged_checkpoint: str | None
    stop_reason: str
    history: keras.callbacks.History | None
    signal_number: int | None = None
    train_seconds: float = 0.0


def train(config, time_limit=None, verbose="auto"):
    """Trains the model a configuration describes, resuming from its `model_dir`.

    Args:
        config: a configuration from `kerasnmt.config.load_config` with every key of
            `TRAINING_KEYS` set.
        time_limit: stop after this many seconds of training (checked after each batch),
            besides `train.max_step`.
        verbose: Keras' progress display: `"auto"`, 0 (silent), 1 (progress bar) or 2
            (one line an epoch).

    Returns:
        A `TrainingResult`.
    """
    missing = missing_keys(config, TRAINING_KEYS)
    if missing:
        raise ValueError(f"training needs these configuration keys: {', '.join(missing)}")
    train_section, data = config["train"], config["data"]
    strategy = training_strategy(config)  # First: a multi-worker one sets up collectives.
    model_dir = config["model_dir"]
    os.makedirs(model_dir, exist_ok=True)
    check_run_recipe(config, resuming=tf.train.latest_checkpoint(model_dir) is not None)
    if train_section["seed"] is not None:
        keras.utils.set_random_seed(train_section["seed"])

    if train_section["mixed_precision"] == "auto":
        print(f"train.mixed_precision auto: {run_precision(config).reason}", flush=True)
    with strategy.scope():
        translator = build_translator(config)
        translator.compile(optimizer=build_optimizer(config))
        checkpoint = training_checkpoint(translator)
        manager = tf.train.CheckpointManager(
            checkpoint, model_dir, max_to_keep=train_section["keep_checkpoint_max"]
        )
        restored = restore_latest(checkpoint, manager, translator)
        start_step = optimizer_step(translator)
        max_step = train_section["max_step"]
        if max_step is not None and start_step >= max_step:
            print(f"Nothing to train: step {start_step} already reaches train.max_step "
                  f"({max_step})")
            return TrainingResult(translator, start_step, restored, None,
                                  "already at train.max_step", None)
        accumulation = accumulation_steps(config)
        dataset = distributed_input(run_training_dataset(
            config, translator.preprocessor, start_batch=start_step * accumulation
        ))
    if strategy.num_replicas_in_sync > 1:
        print(f"Training on {strategy.num_replicas_in_sync} replicas "
              f"({type(strategy).__name__}): each step takes {train_section['batch_size']} "
              f"{train_section['batch_type']} a replica", flush=True)
    # Every worker saves (it holds the variables too); only the chief's files are the run's.
    output_config = dict(config, model_dir=output_directory(model_dir, strategy))
    period = config["eval"]["steps"]
    stopper = _StopAtStep(max_step, time_limit)
    decay = config["params"]["moving_average_decay"]
    moving_average = MovingAverage(decay) if decay is not None else None
    averaged_weights = moving_average.swapped_in if moving_average is not None else None
    checkpoints = CheckpointCallback(
        output_config["model_dir"],
        save_every_steps=train_section["save_checkpoints_steps"],
        keep_checkpoints=train_section["keep_checkpoint_max"],
        restore=False,
        saved_weights=averaged_weights,
    )
    # The moving average first: checkpoints and evaluations of a step see its update.
    callbacks = [moving_average] if moving_average is not None else []
    callbacks += [
        checkpoints,
        _TrainingSummaries(
            os.path.join(output_config["model_dir"], LOG_DIRECTORY, "train"),
            train_section["save_summary_steps"],
        ),
    ]
    if data["eval_features_file"] is not None:
        sampler = build_sampler(config, n_best=1)
        callbacks.append(_Evaluation(output_config, sampler, _export_best(output_config, sampler),
                                     stopper, evaluated_weights=averaged_weights))
    callbacks.append(stopper)  # last: the epoch ends after the others saw the batch
    epochs = math.ceil(max_step / period) if max_step is not None else 10**9
    try:
        # SIGTERM (what Slurm, Kubernetes or `kill` send before killing a job) and Ctrl-C
        # end the run after the current step, with a checkpoint, as the time limit does.
        with _stopping_on((signal.SIGTERM, signal.SIGINT), stopper):
            history = translator.fit(
                dataset,
                batch_size=train_section["batch_size"],
                effective_batch_size=train_section["effective_batch_size"],
                steps_per_epoch=period * accumulation,
                initial_epoch=start_step // period,
                epochs=max(epochs, start_step // period + 1),
                callbacks=callbacks,
                verbose=verbose,
            )
    except tf.errors.UnavailableError as error:
        if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
            raise
        raise WorkerLostError(
            "a worker of the cluster stopped answering (TensorFlow aborted the collective "
            f"operations; its log names the worker): training stopped at step "
            f"{optimizer_step(translator)}; the latest checkpoint of {model_dir} is "
            f"{tf.train.latest_checkpoint(model_dir)}; start every worker again to resume "
            "from it"
        ) from None
    except KeyboardInterrupt:
        if checkpoints.manager is not None:
            path = checkpoints.save(optimizer_step(translator))
            print(f"\nInterrupted: saved {path}", flush=True)
        raise
    step = optimizer_step(translator)
    last_checkpoint = checkpoints.manager.latest_checkpoint
    averaged = None
    count = train_section["average_last_checkpoints"]
    if count > 0 and stopper.signal_number is None and is_chief(strategy):
        averaged = average_run_checkpoints(config, translator, count)
    return TrainingResult(
        translator, step, last_checkpoint, averaged, stopper.reason or "end of training",
        history, stopper.signal_number, stopper.train_seconds,
    )


def average_run_checkpoints(config, translator=None, max_count=None, output_dir=None):
    """Averages the last checkpoints of `model_dir` into a checkpoint of `output_dir`.

    Args:
        config: a checked configuration with `model_dir`.
        translator: the model to fill (built from `config` when None).
        max_count: checkpoints to average; default `train.average_last_checkpoints`.
        output_dir: default `model_dir/avg`. It keeps one checkpoint, numbered with the
            step of the newest averaged checkpoint.

    Returns:
        The path of the averaged checkpoint.
    """
    model_dir = config["model_dir"]
    if model_dir is None:
        raise ValueError("model_dir is not set in the configuration")
    max_count = max_count or config["train"]["average_last_checkpoints"] or 1
    output_dir = output_dir or os.path.join(model_dir, AVERAGE_DIRECTORY)
    if os.path.abspath(output_dir) == os.path.abspath(model_dir):
        raise ValueError("the averaged checkpoint must go to another directory than model_dir")
    if translator is None:
        translator = build_translator(config)
    paths = average_checkpoints(model_dir, translator, max_count=max_count)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=translator), output_dir, max_to_keep=1
    )
    path = manager.save(checkpoint_number=_step_of(paths[0]))
    copy_run_recipe(model_dir, output_dir)
    print(f"Averaged {len(paths)} checkpoints ({', '.join(os.path.basename(p) for p in paths)}) "
          f"into {path}", flush=True)
    return path
