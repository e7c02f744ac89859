"""Checkpoint resume after SIGKILL, checkpoint averaging, and a MirroredStrategy step."""

import os
import re
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training import CheckpointCallback, average_checkpoints
from tests.models.training_run import compile_for_checkpoint_test, full_state
from tests.models.translator_fixtures import corpus, tiny_translator

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(15)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args):
    environment = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-m", "tests.models.training_run", *args],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )


def test_sigkilled_run_resumes_from_its_last_checkpoint(tmp_path):
    result = _run("killed", str(tmp_path))
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-4")
    saved = np.load(tmp_path / "state_at_step_4.npz")
    expected = [saved[f"arr_{i}"] for i in range(len(saved.files))]

    translator = tiny_translator(seed=5)  # other initial weights: all must come from disk
    compile_for_checkpoint_test(translator)
    restored = {}

    class RecordStateAtStart(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            restored["step"] = int(translator.optimizer.iterations)
            restored["state"] = full_state(translator)

    checkpoints = CheckpointCallback(str(tmp_path), save_every_steps=2, keep_checkpoints=2)
    sources, targets = corpus(8, seed=8)
    translator.fit(sources, targets, batch_size=2, length_bucket_width=None, epochs=1,
                   steps_per_epoch=2, verbose=0, callbacks=[checkpoints, RecordStateAtStart()])
    assert checkpoints.restored_step == restored["step"] == 4
    assert len(restored["state"]) == len(expected)
    for actual, wanted in zip(restored["state"], expected):
        np.testing.assert_array_equal(actual, wanted)
    assert int(translator.optimizer.iterations) == 6
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-6")
    # Only the last 2 are kept.
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".index")) == [
        "ckpt-4.index", "ckpt-6.index"
    ]

    averaged = tiny_translator(seed=6)
    paths = average_checkpoints(str(tmp_path), averaged, max_count=2)
    assert [os.path.basename(p) for p in paths] == ["ckpt-6", "ckpt-4"]
    at_4 = expected[: len(translator.weights)]
    at_6 = [w.numpy() for w in translator.weights]
    for weight, first, second, trainable in zip(
        averaged.weights, at_4, at_6, [w.trainable for w in translator.weights]
    ):
        if trainable:
            np.testing.assert_allclose(weight.numpy(), (first + second) / 2, atol=1e-6)


def test_mirrored_strategy_step_on_two_logical_devices():
    result = _run("mirrored")
    assert result.returncode == 0, result.stderr[-3000:]
    values = dict(re.findall(r"^(replicas|max weight change|max weight difference) (\S+)$",
                             result.stdout, re.M))
    assert values["replicas"] == "2"
    assert float(values["max weight change"]) > 1e-3  # the step did train
    assert float(values["max weight difference"]) < 1e-5
