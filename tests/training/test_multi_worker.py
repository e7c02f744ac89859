"""`kerasnmt train` on two worker processes of one machine (CPU, `TF_CONFIG`), for real."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training.readable_checkpoint import checkpoint_damage
from tests.run_fixtures import tiny_run, write_config, write_corpus

pytestmark = pytest.mark.heavy(35)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 300  # seconds a process may take (a few steps; most of it is starting TensorFlow)
TOLERANCE = 1e-5


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("localhost", 0))
    ports = [each.getsockname()[1] for each in sockets]
    for each in sockets:
        each.close()
    return ports


def _train(run_dir, config_path, task_index=None, ports=()):
    """Starts `kerasnmt train` as a process (a worker of a 2-worker cluster when
    `task_index` is given); its output goes to files named after the config and task."""
    environment = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    environment.pop("TF_CONFIG", None)
    name = config_path.stem
    if task_index is not None:
        environment["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": [f"localhost:{port}" for port in ports]},
            "task": {"type": "worker", "index": task_index},
        })
        name += f"-worker{task_index}"
    with open(run_dir / f"{name}.out", "w") as out, open(run_dir / f"{name}.err", "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "kerasnmt.cli", "train", "--config", str(config_path),
             "--verbose", "0"],
            cwd=run_dir, env=environment, stdout=out, stderr=err,
        )
    process.output = run_dir / name
    return process


def _finish(process, timeout=TIMEOUT):
    """Waits for `process` (killed after `timeout` s: a hang fails the test); returns its
    status, stdout and stderr."""
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        status = "hung"
    out, err = (process.output.with_suffix(suffix).read_text() for suffix in (".out", ".err"))
    return status, out, err


def _trainable(checkpoint):
    """The trainable weights of a training checkpoint, in the optimizer's order."""
    reader = tf.train.load_checkpoint(str(checkpoint))
    prefix = "optimizer/_trainable_variables/"
    names = [name for name in reader.get_variable_to_shape_map() if name.startswith(prefix)]
    names.sort(key=lambda name: int(name[len(prefix):].split("/")[0]))
    return [reader.get_tensor(name) for name in names]


def _max_difference(first, second):
    return max(float(np.abs(a - b).max()) for a, b in zip(first, second, strict=True))


def _run(run_dir, name, batch_size, max_step, model_dir=None):
    config = tiny_run(model_dir=model_dir or f"model_{name}", train={
        "batch_size": batch_size, "max_step": max_step, "save_checkpoints_steps": 2,
        "average_last_checkpoints": 0})
    # SGD: a weight's update is proportional to its gradient, so rounding differences stay
    # at rounding size (Adam's first updates are about lr * sign(gradient) and would turn a
    # rounding difference of a near-zero gradient into a difference of 2 * lr).
    config["params"].update(optimizer="SGD", learning_rate=0.5)
    return write_config(run_dir, config, f"{name}.yml")


def test_two_workers_train_as_one_process_with_their_global_batch(tmp_path):
    """Two workers of 4 examples each, and one process of 8: after 4 steps the weights
    agree within TOLERANCE.

    Each replica's loss is its own token mean, and Keras sums the replicas' gradients of
    loss / replicas: the mean of the two halves' means. On this corpus (targets reverse
    their sources) with buckets of width 1, all the examples of a batch have one source and
    target length, so both halves hold as many tokens and that mean is the mean of the
    whole batch. What remains is float32 rounding: the same sums added in another order
    (1.2e-7 measured). TOLERANCE is far below what two steps change (0.17 measured), so
    workers that read the same slice of each batch, or different batches, would fail.
    """
    run_dir = write_corpus(tmp_path)
    multi, single = _run(run_dir, "multi", 4, 4), _run(run_dir, "single", 8, 4)
    ports = _free_ports(2)
    processes = [_train(run_dir, multi, index, ports) for index in (0, 1)]
    processes.append(_train(run_dir, single))
    results = [_finish(process) for process in processes]
    for status, out, err in results:
        assert status == 0, err[-2000:]
    assert "Training on 2 replicas" in results[0][1]
    assert _max_difference(_trainable(run_dir / "model_multi" / "ckpt-4"),
                           _trainable(run_dir / "model_single" / "ckpt-4")) <= TOLERANCE
    assert _max_difference(_trainable(run_dir / "model_single" / "ckpt-2"),
                           _trainable(run_dir / "model_single" / "ckpt-4")) > 1000 * TOLERANCE
    # The second worker saved its own copy, the same weights, away from the chief's files.
    assert _max_difference(_trainable(run_dir / "model_multi" / "ckpt-4"),
                           _trainable(run_dir / "model_multi/workers/worker-1/ckpt-4")) == 0


def test_a_lost_worker_ends_the_survivor_with_an_error_and_the_run_resumes(tmp_path):
    run_dir = write_corpus(tmp_path)
    config = _run(run_dir, "lost", 4, 1000)
    model_dir = run_dir / "model_lost"
    ports = _free_ports(2)
    chief, worker = (_train(run_dir, config, index, ports) for index in (0, 1))
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (model_dir / "ckpt-4.index").exists():
            assert chief.poll() is None and worker.poll() is None, "a worker ended early"
            assert time.monotonic() < deadline, "no checkpoint at step 4"
            time.sleep(0.5)
        worker.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        status, out, err = _finish(chief, timeout=180)
        waited = time.monotonic() - killed_at
    finally:
        for process in (chief, worker):
            if process.poll() is None:
                process.kill()
                process.wait()
    # TensorFlow notices the missing heartbeats: 26 to 46 s after the kill in runs here.
    assert status == 1, (status, err[-2000:])
    assert "/job:worker/replica:0/task:1" in err  # TensorFlow's log names the lost worker.
    last_line = err.strip().splitlines()[-1]
    found = re.fullmatch(
        r"kerasnmt train: error: a worker of the cluster stopped answering \(TensorFlow "
        r"aborted the collective operations; its log names the worker\): training stopped "
        r"at step (\d+); the latest checkpoint of (\S+) is "
        r"(\S+)/ckpt-(\d+); start every worker again to resume from it", last_line)
    assert found, last_line
    stopped, saved = int(found.group(1)), int(found.group(4))
    assert found.group(2) == str(model_dir) and 4 <= saved <= stopped
    print(f"survivor ended {waited:.0f} s after the kill, at step {stopped}")
    state = tf.train.get_checkpoint_state(str(model_dir))
    assert state.model_checkpoint_path.endswith(f"ckpt-{saved}")
    for path in state.all_model_checkpoint_paths:
        assert checkpoint_damage(path) is None

    # Resumed (here by one process) from the last checkpoint, for two more steps.
    resumed = _run(run_dir, "resumed", 4, saved + 2, model_dir="model_lost")
    status, out, err = _finish(_train(run_dir, resumed))
    assert status == 0, err[-2000:]
    assert f"Restored {model_dir}/ckpt-{saved} (step {saved})" in out
    assert f"Training stopped at step {saved + 2}" in out
