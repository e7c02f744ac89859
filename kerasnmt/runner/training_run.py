"""A training run from a YAML configuration: what `kerasnmt train` does.

`train(config)` takes a run configuration (a YAML file, or the dictionary
`kerasnmt.config.load_config` returns) and runs it: tokenizers and vocabularies ->
`TranslationPreprocessor` -> `Translator` (the `model` section) ->
`kerasnmt.data.training_dataset` (the `train` section) -> `Translator.fit`, with
checkpoints every `train.save_checkpoints_steps` (the last `train.keep_checkpoint_max`
kept), resuming from the latest checkpoint of `model_dir`, TensorBoard summaries under
`model_dir/logs`, and an evaluation of the validation set every `eval.steps` (loss, then
BLEU and chrF of its translations) that can export the best model. Each piece is built
from the configuration by the `run_*` modules of this package, which the commands that
need a model without training it share.

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

from kerasnmt.data.result_file import result_file
from kerasnmt.data.text_files import read_line_aligned
from kerasnmt.evaluation import score_translations
from kerasnmt.export import export_translator
from kerasnmt.models import Translator
from kerasnmt.runner.run_checkpoints import average_run_checkpoints
from kerasnmt.runner.run_config import run_configuration
from kerasnmt.runner.run_dataset import run_training_dataset
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.runner.run_model import (
    MODEL_KEYS,
    build_sampler,
    build_translator,
    decoding_options,
    run_precision,
)
from kerasnmt.training.run_optimizer import accumulation_steps, build_optimizer
from kerasnmt.runner.training_summaries import TrainingSummaries, write_scalar
from kerasnmt.training import CheckpointCallback, MovingAverage
from kerasnmt.training.checkpoint_callback import restore_latest, training_checkpoint
from kerasnmt.training.distribution import (
    WorkerLostError,
    distributed_input,
    is_chief,
    output_directory,
    training_strategy,
)
from kerasnmt.training.optimizer_step import optimizer_step
from kerasnmt.training.run_recipe import check_run_recipe

# What a configuration must set to train a model.
TRAINING_KEYS = ("model_dir",) + MODEL_KEYS + (("data.train_features_file", "data.train_shards"),)
EXPORT_DIRECTORY = "export"
LOG_DIRECTORY = "logs"
EVALUATIONS_FILE = "evaluations.jsonl"
PREDICTIONS_DIRECTORY = "eval"  # model_dir/eval/predictions.txt.STEP, as OpenNMT-tf


# ---------------------------------------------------------------------------------------
# Callbacks of a run.
# ---------------------------------------------------------------------------------------


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
    """Train a model from a YAML run configuration, resuming from its model_dir.

    The configuration (see docs/training.md) is checked first: every mistake (unknown
    key, wrong type, missing file, options that disagree) is reported with its key path
    and the command stops with status 2 before anything runs. Then: tokenizers and
    vocabularies (data), the Transformer (model), the training data pipeline (train),
    and training with a progress bar, until train.max_step optimizer steps (or
    --time-limit). The latest checkpoint of model_dir is restored first, so running the
    command again continues a run. Checkpoints go to model_dir every
    train.save_checkpoints_steps steps (the last train.keep_checkpoint_max kept),
    TensorBoard logs to model_dir/logs (tensorboard --logdir MODEL_DIR/logs). With
    data.eval_features_file and data.eval_labels_file, at every multiple of eval.steps
    steps (also in a resumed run) and at the end, the validation set is scored (loss,
    and BLEU and chrF of its translations, printed with the sacreBLEU signatures and
    appended to model_dir/evaluations.jsonl), eval.export_on_best exports the best
    model to model_dir/export/STEP, and eval.early_stopping ends training when the
    scores stop improving (OpenNMT-tf's condition). At the end,
    train.average_last_checkpoints checkpoints are averaged into model_dir/avg.
    SIGTERM (sent by `kill`, Slurm or Kubernetes before they kill a job) and Ctrl-C end
    training after the current step with a checkpoint, skip the final evaluation and
    averaging, and exit with status 143 (128 + 15) or 130 (128 + 2); a second Ctrl-C
    stops at once, still saving a checkpoint. A loss that becomes NaN or infinite ends
    the run with one line and status 1 (the last checkpoint is the one before it). A
    checkpoint that cannot be written (a full disk) ends it with one line and status 2,
    the previous checkpoint still the latest.
    Several GPUs are used together; with TF_CONFIG set, the command is one worker of a
    multi-worker run (a worker that dies ends the others with one line and status 1);
    train.tpu trains on a TPU (docs/training.md, Running on several devices).

    Args:
        config: the run configuration (a path, or a configuration `load_config`
            returned; every key of `TRAINING_KEYS` set)
        time_limit: also stop after this many seconds of training (a checkpoint is
            saved)
        verbose: Keras' progress display: "auto", 0 (silent), 1 (a progress bar) or 2
            (one line an epoch; an epoch is eval.steps steps)

    Returns:
        A `TrainingResult`.
    """
    config = run_configuration(config, required=TRAINING_KEYS)
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
        TrainingSummaries(
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
    except tf.errors.UnavailableError:
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
