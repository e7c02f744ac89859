"""`kerasnmt train` / `kerasnmt.runner.training_run.train` and `kerasnmt average-checkpoints`."""

import contextlib
import errno
import functools
import glob
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt import cli
from kerasnmt.runner import training_run
from kerasnmt.config import default_config, load_config
from kerasnmt.evaluation import score_translations
from kerasnmt.models import Translator
from kerasnmt.training import NonFiniteLossError, Perplexity
from kerasnmt.training.readable_checkpoint import checkpoint_damage
from kerasnmt.runner.run_checkpoints import restore_translator
from kerasnmt.runner.run_model import build_sampler
from kerasnmt.runner.training_run import TRAINING_KEYS, early_stop, train
from kerasnmt.runner.training_summaries import TrainingSummaries
from tests.run_fixtures import checkpoint_weights, tiny_run, write_config, write_corpus

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(97)


@pytest.fixture
def run_dir(tmp_path):
    return write_corpus(tmp_path)


@pytest.fixture(scope="module")
def four_step_run(tmp_path_factory):
    """`kerasnmt train` of 4 steps, checkpoints at steps 2 and 4 (the last 2 kept and
    averaged), summaries every 2 steps: (its directory, exit status, standard output). The
    tests that train on copy it."""
    directory = write_corpus(tmp_path_factory.mktemp("four_steps"))
    config_path = write_config(directory, tiny_run(train={
        "max_step": 4, "save_checkpoints_steps": 2, "keep_checkpoint_max": 2,
        "save_summary_steps": 2, "average_last_checkpoints": 2,
    }))
    with contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()):
        status = cli.main(["train", "--config", str(config_path), "--verbose", "0"])
    return directory, status, out.getvalue()


@pytest.fixture
def evaluation_without_xla(monkeypatch):
    """Evaluations decode without XLA: a compilation (~8 s) less a run.
    `test_evaluates_every_eval_steps_exports_the_best_and_stops_early` keeps XLA, as
    `kerasnmt train` decodes."""
    monkeypatch.setattr(Translator, "translate",
                        functools.partialmethod(Translator.translate, jit_compile=False))


def _scalars(directory):
    """{tag: {step: value}} of the TensorBoard event files of a directory."""
    values = {}
    for path in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                scalar = float(tf.make_ndarray(value.tensor))
                values.setdefault(value.tag, {})[event.step] = scalar
    return values


def _evaluations(model_dir):
    """The records of `model_dir/evaluations.jsonl`, oldest first."""
    return training_run._read_history(os.path.join(model_dir, training_run.EVALUATIONS_FILE))


def test_config_mistakes_stop_the_command_before_anything_runs(run_dir, capsys):
    config = tiny_run(train={"batch_sise": 8, "max_step": "ten"})
    config["data"]["eval_features_file"] = "missing.src"
    path = write_config(run_dir, config)
    status = cli.main(["train", "--config", str(path)])
    err = capsys.readouterr().err
    assert status == 2
    assert "3 errors in the configuration" in err
    for line in [
        "data.eval_features_file: file not found",
        "train.batch_sise: unknown key (did you mean train.batch_size?)",
        "train.max_step: expected an integer >= 1, or null, got 'ten'",
    ]:
        assert line in err
    assert "Traceback" not in err
    assert not (run_dir / "model").exists()


def test_keys_training_needs_are_required(run_dir, capsys):
    config = tiny_run()
    del config["data"]["train_features_file"], config["data"]["train_labels_file"]
    status = cli.main(["train", "--config", str(write_config(run_dir, config))])
    err = capsys.readouterr().err
    assert status == 2
    assert "data.train_features_file (or data.train_shards): required but not set" in err


def test_validation_files_of_different_lengths_stop_the_run_before_training(run_dir, capsys):
    (run_dir / "val.tgt").write_text("A\nB\n", encoding="utf-8")  # val.src has 6 lines
    config = tiny_run(eval={"steps": 2})
    config["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
    status = cli.main(["train", "--config", str(write_config(run_dir, config))])
    err = capsys.readouterr().err
    assert status == 2
    assert "val.src has 6 lines but" in err
    assert "val.tgt has 2: the files must be line-aligned" in err
    assert not glob.glob(str(run_dir / "model" / "ckpt-*"))


def _with_bad_alignment_line(run_dir, config, line):
    """Guided alignment on an alignment file whose 6th line is `line` (the others: 0-0)."""
    count = len((run_dir / "train.src").read_text(encoding="utf-8").splitlines())
    lines = ["0-0"] * count
    lines[5] = line
    (run_dir / "train.align").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config["data"]["train_alignments"] = "train.align"
    config["params"]["guided_alignment_type"] = "ce"


@pytest.mark.parametrize("case, expected", [
    ("empty corpus", "no training batch from {run}/train.src and {run}/train.tgt: every "
     "example needs 0 < source length <= maximum_features_length=8"),
    ("emptied by the length filter", "no training batch from {run}/train.src and "
     "{run}/train.tgt: every example needs 0 < source length <= maximum_features_length=1 "
     "and 0 < target length <= maximum_labels_length=8 (in tokens, targets counted with their "
     "end mark </s>)"),
    ("malformed alignment", "{run}/train.align, line 6: malformed Pharaoh alignment: "
     "expected space-separated source-target index pairs such as 0-0 1-2; got line: 0-x"),
    ("negative alignment index", "{run}/train.align, line 6: malformed Pharaoh alignment: "
     "expected space-separated source-target index pairs such as 0-0 1-2; got line: -1-0"),
    ("alignment index out of range", "{run}/train.align, line 6: alignment index out of "
     "range: source indices must be below the"),
])
def test_bad_training_data_found_while_training_exits_2_with_one_line(run_dir, capsys, case,
                                                                      expected):
    config = tiny_run(train={"max_step": 2})
    if case == "empty corpus":
        (run_dir / "train.src").write_text("", encoding="utf-8")
        (run_dir / "train.tgt").write_text("", encoding="utf-8")
    elif case == "emptied by the length filter":
        config["train"]["maximum_features_length"] = 1
    else:
        line = {"malformed alignment": "0-x", "negative alignment index": "-1-0",
                "alignment index out of range": "0-99"}[case]
        _with_bad_alignment_line(run_dir, config, line)
    status = cli.main(["train", "--config", str(write_config(run_dir, config)), "--verbose", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("kerasnmt train: error: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("kerasnmt train: error: " + expected.format(run=run_dir)), lines


def test_trains_checkpoints_resumes_logs_and_averages(four_step_run, tmp_path, capsys):
    """`four_step_run`, resumed to step 6 in a copy."""
    directory, status, out = four_step_run
    assert status == 0, out
    run_dir = shutil.copytree(directory, tmp_path / "run")
    config_path = run_dir / "run.yml"
    model_dir = run_dir / "model"
    assert tf.train.get_checkpoint_state(str(model_dir)).all_model_checkpoint_paths[-2:] == [
        str(model_dir / "ckpt-2"), str(model_dir / "ckpt-4")]
    assert "Training stopped at step 4: reached train.max_step (4)" in out

    # Resuming: continue from step 4 to 6; only the last two checkpoints stay.
    config = tiny_run(train={
        "max_step": 6, "save_checkpoints_steps": 2, "keep_checkpoint_max": 2,
        "save_summary_steps": 2, "average_last_checkpoints": 2,
    })
    write_config(run_dir, config)
    begin = time.monotonic()
    result = train(load_config(config_path, required=TRAINING_KEYS), verbose=0)
    call_seconds = time.monotonic() - begin
    out = capsys.readouterr().out
    assert f"Restored {model_dir / 'ckpt-4'} (step 4)" in out
    assert result.step == 6
    # This call's training only: building the model and the averaging are left out.
    assert 0 < result.train_seconds < call_seconds
    assert sorted(os.path.basename(p) for p in glob.glob(str(model_dir / "ckpt-*.index"))) == [
        "ckpt-4.index", "ckpt-6.index"]

    # TensorBoard: the loss and learning rate every 2 steps, at the optimizer step, across
    # the two runs.
    scalars = _scalars(model_dir / "logs" / "train")
    assert sorted(scalars["loss"]) == [2, 4, 6]
    assert scalars["learning_rate"][6] == pytest.approx(0.01)

    # The averaged checkpoint holds the mean of ckpt-4 and ckpt-6.
    assert result.averaged_checkpoint == str(model_dir / "avg" / "ckpt-6")
    first = checkpoint_weights(config_path, str(model_dir / "ckpt-4"))
    second = checkpoint_weights(config_path, str(model_dir / "ckpt-6"))
    averaged = checkpoint_weights(config_path, result.averaged_checkpoint)
    for value, a, b in zip(averaged, first, second):
        np.testing.assert_allclose(value, (a + b) / 2, rtol=1e-6, atol=1e-7)
    # Training changed the weights between the two checkpoints.
    assert sum(not np.allclose(a, b) for a, b in zip(first, second)) > 0
    # By default, export and translate take the averaged checkpoint, the newest.
    assert restore_translator(load_config(config_path))[1] == result.averaged_checkpoint

    # Running again has nothing to do.
    assert train(load_config(config_path, required=TRAINING_KEYS), verbose=0).step == 6
    assert "Nothing to train: step 6 already reaches train.max_step (6)" in capsys.readouterr().out

    # average-checkpoints from the command line: the last one only = ckpt-6 itself.
    output = run_dir / "last"
    status = cli.main(["average-checkpoints", "--config", str(config_path), "--max-count", "1",
                       "--output", str(output)])
    assert status == 0
    for value, expected in zip(checkpoint_weights(config_path, str(output)), second):
        np.testing.assert_array_equal(value, expected)


class LinearRegression(keras.Model):
    """A linear regression whose metrics are attributes, as the Translator's are."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)
        self.error_metric = keras.metrics.Mean(name="error")
        self.perplexity_metric = Perplexity(name="perplexity")

    def call(self, x):
        return self.dense(x)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        squared = keras.ops.square(y_pred - y)
        self.error_metric.update_state(keras.ops.abs(y_pred - y))
        self.perplexity_metric.update_state(squared)
        return keras.ops.mean(squared)


class _BatchLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []  # per epoch, Keras' logs after each batch

    def on_epoch_begin(self, epoch, logs=None):
        self.logs.append([])

    def on_train_batch_end(self, batch, logs=None):
        self.logs[-1].append({name: float(value) for name, value in logs.items()})


def test_training_summaries_average_the_steps_since_the_last_one(tmp_path):
    # Keras' batch logs are means since the epoch began. Equal batches weigh the same, so
    # batch b's own value is b * mean_b - (b - 1) * mean_(b-1); each summary must be the
    # mean of its window's batches, across an epoch boundary too (steps 5 and 6 here).
    keras.utils.set_random_seed(3)
    x = np.random.normal(size=(40, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32") + 3.0
    model = LinearRegression(name="regression")
    model.compile(optimizer=keras.optimizers.SGD(0.05))
    batch_logs = _BatchLogs()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
    model.fit(dataset, steps_per_epoch=5, epochs=2, verbose=0,
              callbacks=[batch_logs, TrainingSummaries(str(tmp_path), every=2)])

    def running_mean(logs, name):  # perplexity is exp(mean)
        return np.log(logs[name]) if name == "perplexity" else logs[name]

    per_batch = {name: [] for name in ("loss", "error", "perplexity")}
    for epoch in batch_logs.logs:
        for index, logs in enumerate(epoch):
            for name, values in per_batch.items():
                previous = running_mean(epoch[index - 1], name) if index else 0.0
                values.append((index + 1) * running_mean(logs, name) - index * previous)
    scalars = _scalars(tmp_path)
    for name in per_batch:
        assert sorted(scalars[name]) == [2, 4, 6, 8, 10]
    for step in (2, 4, 6, 8, 10):
        window = slice(step - 2, step)
        assert scalars["loss"][step] == pytest.approx(np.mean(per_batch["loss"][window]),
                                                      rel=1e-4)
        assert scalars["error"][step] == pytest.approx(np.mean(per_batch["error"][window]),
                                                       rel=1e-4)
        assert scalars["perplexity"][step] == pytest.approx(
            np.exp(np.mean(per_batch["perplexity"][window])), rel=1e-4)
    # Not the epoch's running mean (what Keras logs): the loss falls within an epoch.
    assert scalars["loss"][4] < batch_logs.logs[0][3]["loss"]


def test_gradient_accumulation_counts_steps_as_weight_updates(run_dir,
                                                             evaluation_without_xla):
    config = tiny_run(
        train={"batch_size": 4, "effective_batch_size": 8, "max_step": 3,
               "average_last_checkpoints": 0, "save_checkpoints_steps": 3,
               "save_summary_steps": 1},
        eval={"steps": 1},
    )
    config["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
    result = train(load_config(write_config(run_dir, config), required=TRAINING_KEYS),
                   verbose=0)
    optimizer = result.translator.optimizer
    assert int(optimizer.iterations) == 3
    assert int(optimizer._iterations) == 6  # two batches per update
    assert result.checkpoint.endswith("ckpt-3")
    # Evaluated and summarized after each update, not after the first batch (still step 0).
    assert [record["step"] for record in _evaluations(run_dir / "model")] == [1, 2, 3]
    assert sorted(_scalars(run_dir / "model" / "logs" / "train")["loss"]) == [1, 2, 3]


def _truncate(checkpoint):
    data = checkpoint + ".data-00000-of-00001"
    with open(data, "r+b") as file:
        file.truncate(os.path.getsize(data) // 2)


def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_readable_one(four_step_run,
                                                                          tmp_path, capsys):
    """In a copy of `four_step_run` without its averaged checkpoint, configured not to
    average."""
    directory, status, _ = four_step_run
    assert status == 0
    run_dir = shutil.copytree(directory, tmp_path / "run", ignore=shutil.ignore_patterns("avg"))
    config_path = write_config(run_dir, tiny_run(train={
        "max_step": 4, "save_checkpoints_steps": 2, "average_last_checkpoints": 0}))
    model_dir = run_dir / "model"
    _truncate(str(model_dir / "ckpt-4"))
    config = load_config(config_path)

    # Translation and export restore through restore_translator.
    translator, path = restore_translator(config)
    assert path == str(model_dir / "ckpt-2")
    assert [w.numpy().tolist() for w in translator.trainable_weights] == [
        w.tolist() for w in checkpoint_weights(config_path, str(model_dir / "ckpt-2"))]
    err = capsys.readouterr().err
    assert f"warning: checkpoint {model_dir / 'ckpt-4'} is damaged (Read less bytes than " \
        "requested); trying the previous one" in err
    # A damaged checkpoint named on purpose is an error, not a silent substitute.
    with pytest.raises(ValueError, match=r"checkpoint .*ckpt-4 is damaged: Read less bytes"):
        restore_translator(config, str(model_dir / "ckpt-4"))

    # Training resumes from the newest readable checkpoint.
    config_path = write_config(run_dir, tiny_run(train={
        "max_step": 6, "save_checkpoints_steps": 2, "average_last_checkpoints": 0}))
    assert cli.main(["train", "--config", str(config_path), "--verbose", "0"]) == 0
    captured = capsys.readouterr()
    assert f"checkpoint {model_dir / 'ckpt-4'} is damaged" in captured.err
    assert f"Restored {model_dir / 'ckpt-2'} (step 2)" in captured.out
    assert "Training stopped at step 6" in captured.out
    assert restore_translator(config)[1] == str(model_dir / "ckpt-6")
    assert checkpoint_damage(str(model_dir / "ckpt-4")) is None  # written again at step 4

    # average-checkpoints skips a damaged checkpoint: the newest two readable ones.
    _truncate(str(model_dir / "ckpt-6"))
    output = run_dir / "averaged"
    assert cli.main(["average-checkpoints", "--config", str(config_path), "--max-count", "2",
                     "--output", str(output)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"warning: checkpoint {model_dir / 'ckpt-6'} is damaged (Read less bytes than "
        "requested); trying the previous one"]
    assert f"Averaged 2 checkpoints (ckpt-4, ckpt-2) into {output / 'ckpt-4'}" in captured.out
    at_2, at_4 = (checkpoint_weights(config_path, str(model_dir / f"ckpt-{step}"))
                  for step in (2, 4))
    for value, a, b in zip(checkpoint_weights(config_path, str(output)), at_2, at_4):
        np.testing.assert_allclose(value, (a + b) / 2, rtol=1e-6, atol=1e-7)

    # Every checkpoint damaged: one clear line, exit 2.
    for step in (2, 4, 6):
        _truncate(str(model_dir / f"ckpt-{step}"))
    assert cli.main(["train", "--config", str(config_path), "--verbose", "0"]) == 2
    assert "no readable checkpoint:" in capsys.readouterr().err
    assert cli.main(["average-checkpoints", "--config", str(config_path), "--output",
                     str(output)]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == "kerasnmt average-checkpoints: error: no readable checkpoint: " + "; ".join(
        f"{model_dir / f'ckpt-{step}'} (Read less bytes than requested)" for step in (6, 4, 2))


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_end_the_run_after_a_step_with_a_checkpoint(run_dir, signal_number):
    config = tiny_run(
        train={"max_step": 100000, "save_checkpoints_steps": 2, "average_last_checkpoints": 2},
        eval={"steps": 1000},
    )
    config["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
    config_path = write_config(run_dir, config)
    process = subprocess.Popen(
        [sys.executable, "-m", "kerasnmt.cli", "train", "--config", str(config_path),
         "--verbose", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # As in a terminal: a test run in the background would leave SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    model_dir = run_dir / "model"
    deadline = time.monotonic() + 300
    try:
        while not (model_dir / "ckpt-2.index").exists():
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.2)
        process.send_signal(signal_number)
        out, err = process.communicate(timeout=300)
    finally:
        process.kill()  # if it is still running, the test failed: leave nothing behind
    assert process.returncode == 128 + signal_number, err[-3000:]
    assert "Traceback" not in err
    name = signal.Signals(signal_number).name
    step = int(re.search(rf"Training stopped at step (\d+): received {name}", out).group(1))
    assert step >= 2
    # The step it stopped at is checkpointed and is the one a resumed run starts from.
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / f"ckpt-{step}")
    # No final evaluation nor averaging: a job leaves within its grace period.
    assert "Evaluation at step" not in out
    assert not (model_dir / "evaluations.jsonl").exists()
    assert not (model_dir / "avg").exists()


def test_a_second_ctrl_c_interrupts_at_once():
    stopper = training_run._StopAtStep(max_step=None, time_limit=None)
    stopper.request_stop(signal.SIGINT)
    assert stopper.reason == "received SIGINT"
    with pytest.raises(KeyboardInterrupt):
        stopper.request_stop(signal.SIGINT)


def test_an_interruption_inside_a_step_still_saves_a_checkpoint(run_dir, monkeypatch):
    def interrupt_at_step_3(self, batch, logs=None):
        if training_run.optimizer_step(self.model) == 3:
            raise KeyboardInterrupt  # what a second Ctrl-C raises

    monkeypatch.setattr(training_run._StopAtStep, "on_train_batch_end", interrupt_at_step_3)
    config = load_config(write_config(run_dir, tiny_run(train={
        "max_step": 100, "save_checkpoints_steps": 50})))
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0)
    model_dir = run_dir / "model"
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / "ckpt-3")


def test_a_full_disk_while_a_checkpoint_is_written_keeps_the_previous_one_the_latest(
        run_dir, capsys, monkeypatch):
    """The disk fills up (ENOSPC) while the checkpoint of step 4 is written: one line, exit
    2, nothing of step 4 left, and the checkpoint of step 2 intact and still the latest,
    which the same command resumes from once there is space again."""
    config_path = write_config(run_dir, tiny_run(train={"max_step": 4,
                                                       "save_checkpoints_steps": 2}))
    model_dir = run_dir / "model"
    write = tf.train.Checkpoint._write

    def full_disk_at_step_4(checkpoint, prefix, options=None):
        if prefix.endswith("ckpt-4"):
            with open(f"{prefix}.data-00000-of-00001", "wb") as partial:
                partial.write(b"\0" * 64)
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(checkpoint, prefix, options=options)

    monkeypatch.setattr(tf.train.Checkpoint, "_write", full_disk_at_step_4)
    status = cli.main(["train", "--config", str(config_path), "--verbose", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines()[-1] == (
        f"kerasnmt train: error: could not write the checkpoint of step 4 to {model_dir}: No "
        f"space left on device; the latest checkpoint is {model_dir / 'ckpt-2'} (free the "
        "space and run the same command again to resume from it)")
    assert "Traceback" not in err
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / "ckpt-2")
    assert not glob.glob(str(model_dir / "ckpt-4*"))
    assert checkpoint_damage(str(model_dir / "ckpt-2")) is None

    monkeypatch.setattr(tf.train.Checkpoint, "_write", write)
    status = cli.main(["train", "--config", str(config_path), "--verbose", "0"])
    out = capsys.readouterr().out
    assert status == 0
    assert f"Restored {model_dir / 'ckpt-2'} (step 2)" in out
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / "ckpt-4")


def test_a_diverged_run_ends_with_one_line_and_status_1(monkeypatch, capsys):
    def diverged(config, **options):
        raise NonFiniteLossError("training diverged at step 7: the loss is nan.")

    monkeypatch.setattr(training_run, "train", diverged)
    assert cli.main(["train", "--config", "run.yml"]) == 1
    assert capsys.readouterr().err == (
        "kerasnmt train: error: training diverged at step 7: the loss is nan.\n")


def test_an_interrupted_command_exits_130_with_one_line(monkeypatch, capsys):
    def interrupted(config, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(training_run, "train", interrupted)
    assert cli.main(["train", "--config", "run.yml"]) == 130
    assert capsys.readouterr().err == "kerasnmt train: interrupted\n"


def test_evaluates_every_eval_steps_exports_the_best_and_stops_early(run_dir, capsys):
    # No loss improves by 1,000: the second evaluation (step 4) meets the early stopping
    # condition, and the run ends there instead of at step 10.
    config = tiny_run(
        train={"max_step": 10, "average_last_checkpoints": 0, "save_checkpoints_steps": 10},
        eval={"steps": 2, "export_on_best": "loss", "max_exports_to_keep": 1,
              "save_eval_predictions": True, "target_language": "de",
              "early_stopping": {"metric": "loss", "min_improvement": 1000, "steps": 1}},
    )
    config["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
    config_path = write_config(run_dir, config)
    result = train(load_config(config_path, required=TRAINING_KEYS), verbose=0)
    out = capsys.readouterr().out
    model_dir = run_dir / "model"
    records = _evaluations(model_dir)
    assert [record["step"] for record in records] == [2, 4]
    assert result.step == 4
    assert result.stop_reason == (
        "early stopping: loss did not improve by more than 1000 in the last 1 evaluations")
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / "ckpt-4")
    assert set(records[0]) >= {"step", "loss", "bleu", "bleu_tokenized_lc", "chrf"}
    assert "BLEU signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in out.replace(
        "bleu signature", "BLEU signature")
    # eval.target_language: de reaches the Moses tokenizer of the published score.
    assert ("  bleu tokenized lc signature: moses:lc+norm+tok|lang:de|nrefs:1|case:lc|eff:no|"
            "tok:none|") in out

    # The last evaluation's scores are those of the final model's translations.
    sources = (run_dir / "val.src").read_text(encoding="utf-8").splitlines()
    references = (run_dir / "val.tgt").read_text(encoding="utf-8").splitlines()
    translator, _ = restore_translator(load_config(config_path), str(model_dir / "ckpt-4"))
    # Without XLA (the evaluation decodes with it): a compilation less.
    translations = translator.translate(
        sources, sampler=build_sampler(load_config(config_path), n_best=1), jit_compile=False
    )
    predictions = model_dir / "eval" / "predictions.txt.4"
    assert predictions.read_text(encoding="utf-8").splitlines() == translations
    assert len((model_dir / "eval" / "predictions.txt.2").read_text(
        encoding="utf-8").splitlines()) == len(sources)
    scores = score_translations(translations, references, language="de")
    assert records[-1]["bleu"] == pytest.approx(scores.bleu)
    assert records[-1]["bleu_tokenized_lc"] == pytest.approx(scores.bleu_tokenized_lc)
    assert records[-1]["chrf"] == pytest.approx(scores.chrf)
    assert result.history.history["val_bleu_tokenized_lc"] == pytest.approx(
        [r["bleu_tokenized_lc"] for r in records])
    assert result.history.history["val_loss"] == pytest.approx([r["loss"] for r in records])

    # Loss on the training pairs falls, so each evaluation is a new best; one export kept.
    assert records[1]["loss"] < records[0]["loss"]
    assert records[1]["exported"] == str(model_dir / "export" / "4")
    assert sorted(os.listdir(model_dir / "export")) == ["4"]
    assert os.path.exists(model_dir / "export" / "4" / "saved_model.pb")
    scalars = _scalars(model_dir / "logs" / "eval")
    assert sorted(scalars["bleu"]) == [2, 4]
    assert scalars["bleu_tokenized_lc"][4] == pytest.approx(records[-1]["bleu_tokenized_lc"])


class _FixedTranslations:
    """Stands for a `Translator` in `evaluate_run`: a fixed loss and fixed translations."""

    def __init__(self, translations):
        self.translations = translations

    def evaluate(self, **kwargs):
        return {"loss": 1.5}

    def translate(self, sources, **kwargs):
        assert len(sources) == len(self.translations)
        return list(self.translations)


@pytest.mark.parametrize("language, bleu_tokenized_lc", [
    # The sentence-final German ordinal "10." (tests/test_evaluation.py,
    # test_the_language_picks_the_nonbreaking_prefixes): (1/3) ** (1/4) in German, all
    # n-grams matched with the brevity penalty exp(1 - 7/6) in English.
    ("de", 100 * (1 / 3) ** 0.25),
    ("en", 100 * np.exp(1 - 7 / 6)),
])
def test_evaluate_run_reports_the_published_bleu_in_eval_target_language(
    language, bleu_tokenized_lc
):
    config = default_config()
    config["eval"].update(scorers=["chrf", "bleu"], target_language=language)
    results = training_run.evaluate_run(
        _FixedTranslations(["Der Spieler trägt die Nummer 10"]), config, sampler=None,
        sources=["The player wears the number 10."],
        references=["Der Spieler trägt die Nummer 10."],
    )
    assert list(results) == [
        "loss", "chrf", "chrf_signature", "bleu", "bleu_signature", "bleu_tokenized_lc",
        "bleu_tokenized_lc_signature"]
    assert results["bleu_tokenized_lc"] == pytest.approx(bleu_tokenized_lc, abs=1e-9)
    assert results["bleu_tokenized_lc_signature"].startswith(
        f"moses:lc+norm+tok|lang:{language}|nrefs:1|case:lc|eff:no|tok:none|")

    # Without bleu among the scorers, no BLEU of either kind.
    config["eval"]["scorers"] = ["chrf"]
    results = training_run.evaluate_run(
        _FixedTranslations(["Der Spieler trägt die Nummer 10"]), config, sampler=None,
        sources=["The player wears the number 10."],
        references=["Der Spieler trägt die Nummer 10."],
    )
    assert list(results) == ["loss", "chrf", "chrf_signature"]


def test_evaluation_predictions_are_written_whole_or_not_at_all(tmp_path):
    config = default_config()
    config["eval"]["scorers"] = ["chrf"]
    path = tmp_path / "eval" / "predictions.txt.2"
    arguments = dict(config=config, sampler=None, sources=["a", "b"], references=["x", "y"],
                     predictions_path=str(path))
    training_run.evaluate_run(_FixedTranslations(["Ein Hund", "Zwei"]), **arguments)
    assert path.read_text(encoding="utf-8") == "Ein Hund\nZwei\n"
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: the second line fails
        training_run.evaluate_run(_FixedTranslations(["Drei", "\ud800"]), **arguments)
    assert path.read_text(encoding="utf-8") == "Ein Hund\nZwei\n"
    assert [p.name for p in path.parent.iterdir()] == ["predictions.txt.2"]


def test_a_run_stopped_by_its_time_limit_resumes_evaluating_at_multiples_of_eval_steps(
    run_dir, evaluation_without_xla
):
    """A time limit of 0 s stops a run after its first step, with a checkpoint. Resumed at
    step 1 with `eval.steps: 3`, a run evaluates at step 3 (inside its first Keras epoch,
    steps 2 to 4) and when it ends (5), as OpenNMT-tf, not at 1 + 3; the evaluation in the
    middle of the epoch leaves the epoch's training loss and the TensorBoard summaries as
    they are in the same run without evaluation."""
    train_section = {"save_checkpoints_steps": 10, "average_last_checkpoints": 0,
                     "save_summary_steps": 1}
    config_path = write_config(run_dir, tiny_run(train=dict(train_section, max_step=1000)))
    result = train(load_config(config_path, required=TRAINING_KEYS), time_limit=0, verbose=0)
    assert result.step == 1
    assert result.stop_reason == "reached the time limit (0 s)"
    assert result.checkpoint.endswith("ckpt-1")
    shutil.copytree(run_dir / "model", run_dir / "model_without_evaluation")

    histories = {}
    for model_dir in ("model", "model_without_evaluation"):
        config = tiny_run(model_dir=model_dir, train=dict(train_section, max_step=5),
                          eval={"steps": 3, "export_on_best": None})
        if model_dir == "model":
            config["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
        result = train(load_config(write_config(run_dir, config), required=TRAINING_KEYS),
                       verbose=0)
        assert result.step == 5
        histories[model_dir] = result.history.history

    records = _evaluations(run_dir / "model")
    assert [record["step"] for record in records] == [3, 5]
    assert histories["model"]["val_loss"] == pytest.approx([r["loss"] for r in records])
    assert histories["model"]["loss"] == pytest.approx(
        histories["model_without_evaluation"]["loss"], rel=1e-6)
    with_evaluation = _scalars(run_dir / "model" / "logs" / "train")
    without_evaluation = _scalars(run_dir / "model_without_evaluation" / "logs" / "train")
    for tag in ("loss", "accuracy", "perplexity"):
        assert sorted(with_evaluation[tag]) == [1, 2, 3, 4, 5]
        assert with_evaluation[tag] == pytest.approx(without_evaluation[tag], rel=1e-6)


@pytest.mark.parametrize("values, steps, min_improvement, higher_is_better, expected", [
    ([2.0, 1.9], 1, 0.0, False, False),        # 1.9 < 2.0
    ([2.0, 2.0], 1, 0.0, False, True),         # no change is no improvement
    ([2.0, 1.9], 1, 0.1, False, True),         # 1.9 is not < 2.0 - 0.1
    ([2.0, 1.89], 1, 0.1, False, False),
    ([2.0, 2.1, 1.95, 2.2], 3, 0.0, False, False),  # 1.95 < 2.0, two evaluations before the last
    ([2.0, 1.5, 2.1, 2.2], 2, 0.0, False, True),    # the reference is 1.5, the last 2 are worse
    ([2.0, 1.5, 2.1], 3, 0.0, False, False),   # fewer than steps + 1 evaluations
    ([20.0, 20.5, 20.4], 2, 0.5, True, True),  # BLEU: 20.5 is not > 20.0 + 0.5
    ([20.0, 20.6, 20.4], 2, 0.5, True, False),
])
def test_early_stop_is_opennmt_tfs_condition(values, steps, min_improvement, higher_is_better,
                                               expected):
    assert early_stop(values, steps, min_improvement, higher_is_better) is expected


def test_the_sampler_takes_the_decoding_options_of_params(run_dir):
    params = {"beam_width": 3, "length_penalty": 0.6, "coverage_penalty": 0.2,
              "num_hypotheses": 2, "maximum_decoding_length": 30,
              "minimum_decoding_length": 1, "compact_batch": True, "early_exit": True}
    sampler = build_sampler(load_config(write_config(run_dir, tiny_run(params=params))))
    config = sampler.get_config()
    assert {key: config[key] for key in ("beam_size", "length_penalty", "coverage_penalty",
                                         "n_best", "max_length", "min_length",
                                         "compact_batch", "early_exit", "seed")} == {
        "beam_size": 3, "length_penalty": 0.6, "coverage_penalty": 0.2, "n_best": 2,
        "max_length": 30, "min_length": 1, "compact_batch": True, "early_exit": True,
        "seed": 1}
    assert config["finished_hypotheses"] == "in_beam"
    params.update(early_exit=False, finished_hypotheses="set_aside")
    sampler = build_sampler(load_config(write_config(run_dir, tiny_run(params=params))))
    assert sampler.get_config()["finished_hypotheses"] == "set_aside"
