import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training import CheckpointCallback
from kerasnmt.training.checkpoint_callback import CheckpointWriteError, training_checkpoint
from kerasnmt.training.optimizer_step import optimizer_step


def test_checkpoint_callback_checks_its_arguments():
    with pytest.raises(ValueError, match="save_every_steps and keep_checkpoints must be at least 1"):
        CheckpointCallback("/tmp/unused", save_every_steps=0)


def _regression():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), loss="mse")
    return model


def test_a_checkpoint_that_cannot_be_written_leaves_the_previous_one_the_latest(
        tmp_path, monkeypatch):
    """TensorFlow's file system reports a full disk as ResourceExhaustedError: the
    checkpoint of step 3 fails with one line naming the step and the latest checkpoint, its
    partial files are removed, and step 2's checkpoint still holds step 2's weights."""
    directory = str(tmp_path)
    weights_at_step_2 = []

    class RecordStep2(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if optimizer_step(self.model) == 2:
                weights_at_step_2.extend(weight.numpy() for weight in self.model.weights)

    write = tf.train.Checkpoint._write

    def full_disk_at_step_3(checkpoint, prefix, options=None):
        if prefix.endswith("ckpt-3"):
            os.makedirs(f"{prefix}_temp")
            raise tf.errors.ResourceExhaustedError(
                None, None, f"{prefix}_temp/part-00000-of-00001.data; No space left on device")
        return write(checkpoint, prefix, options=options)

    monkeypatch.setattr(tf.train.Checkpoint, "_write", full_disk_at_step_3)
    model = _regression()
    callback = CheckpointCallback(directory, save_every_steps=1, keep_checkpoints=5)
    with pytest.raises(CheckpointWriteError) as raised:
        model.fit(np.ones((8, 2)), np.zeros((8, 1)), batch_size=2, verbose=0,
                  callbacks=[RecordStep2(), callback])
    assert isinstance(raised.value, OSError)
    prefix = os.path.join(directory, "ckpt-")
    assert str(raised.value) == (
        f"could not write the checkpoint of step 3 to {directory}: {prefix}3_temp/"
        "part-00000-of-00001.data; No space left on device; the latest checkpoint is "
        f"{prefix}2 (free the space and run the same command again to resume from it)")
    assert tf.train.latest_checkpoint(directory) == f"{prefix}2"
    assert sorted(name for name in os.listdir(directory) if name.startswith("ckpt-3")) == []

    restored = _regression()
    training_checkpoint(restored).restore(f"{prefix}2").assert_existing_objects_matched()
    assert optimizer_step(restored) == 2
    for weight, expected in zip(restored.weights, weights_at_step_2):
        np.testing.assert_array_equal(weight.numpy(), expected)
