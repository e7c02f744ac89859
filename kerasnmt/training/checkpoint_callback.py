"""Saves the model and optimizer every N steps, keeps the last K, resumes from the latest."""

import contextlib
import glob
import os
import shutil

import keras
import tensorflow as tf

from kerasnmt.training.non_finite_loss import check_finite_loss
from kerasnmt.training.optimizer_step import optimizer_step
from kerasnmt.training.readable_checkpoint import newest_readable_checkpoint


def training_checkpoint(model):
    """The `tf.train.Checkpoint` of a compiled model: its weights and its optimizer state."""
    optimizer = model.optimizer
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    return tf.train.Checkpoint(model=model, optimizer=optimizer)


def restore_latest(checkpoint, manager, model):
    """Restores the newest readable checkpoint of `manager` into `checkpoint` (a damaged
    newer one is reported and skipped, see `newest_readable_checkpoint`).

    Returns:
        The restored path, or None when the directory has no checkpoint.
    """
    path = newest_readable_checkpoint(manager.checkpoints[::-1])
    if path is not None:
        checkpoint.restore(path).assert_existing_objects_matched()
        print(f"Restored {path} (step {optimizer_step(model)})", flush=True)
    return path


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written (a full disk, a lost mount): what was written
    of it is removed, and the checkpoint before it is still the latest."""


def remove_partial_checkpoint(prefix):
    """Removes what a failed write of the checkpoint `prefix` (`DIR/ckpt-STEP`) left: its
    `.index` and `.data-*` files and TensorFlow's `_temp` directory of shards.

    Examples:
        >>> import tempfile
        >>> directory = tempfile.mkdtemp()
        >>> for name in ("ckpt-2.index", "ckpt-4.data-00000-of-00001", "ckpt-40.index"):
        ...     open(os.path.join(directory, name), "w").close()
        >>> os.makedirs(os.path.join(directory, "ckpt-4_temp"))
        >>> remove_partial_checkpoint(os.path.join(directory, "ckpt-4"))
        >>> sorted(os.listdir(directory))
        ['ckpt-2.index', 'ckpt-40.index']
    """
    pattern = glob.escape(prefix)
    for path in glob.glob(pattern + ".*") + glob.glob(pattern + "_temp*"):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.remove(path)


class CheckpointCallback(keras.callbacks.Callback):
    """Checkpoints training every `save_every_steps` optimizer steps and resumes from the latest.

    At the start of `fit`, the latest checkpoint of `directory` (if any; the newest
    readable one if it is damaged) is restored: the weights and the optimizer state,
    including its step counter, so a run killed at any point continues from the step of
    its last checkpoint (the learning rate schedule with it). A checkpoint is written when the optimizer step is a multiple of
    `save_every_steps` and at the end of training; only the last `keep_checkpoints` are
    kept. A batch whose loss is NaN or infinite raises `NonFiniteLossError` without saving,
    so the last checkpoint on disk is always a good one. A checkpoint that cannot be
    written (a full disk) raises `CheckpointWriteError`, one line naming the step, the
    reason and the checkpoint that is still the latest; what was written of it is removed.

    Files are `tf.train.CheckpointManager` checkpoints (`ckpt-STEP.index`, `.data-*`, and a
    `checkpoint` state file); `average_checkpoints` reads them.

    Args:
        directory: where checkpoints go (created if missing).
        save_every_steps: the interval, in optimizer steps (weight updates).
        keep_checkpoints: how many recent checkpoints to keep.
        restore: restore the latest checkpoint at the start of training.
        saved_weights: a function that returns the context manager inside which checkpoints
            are written: `MovingAverage(...).swapped_in` saves the moving average of the
            weights. None saves the weights as they are.

    Examples:
        >>> callback = CheckpointCallback("/tmp/run", save_every_steps=500, keep_checkpoints=4)
        >>> callback.save_every_steps, callback.keep_checkpoints
        (500, 4)

    Reference:
        [`tf.train.CheckpointManager`](https://www.tensorflow.org/api_docs/python/tf/train/CheckpointManager);
        OpenNMT-tf's `save_checkpoints_steps` and `keep_checkpoint_max`.
    """

    def __init__(self, directory, save_every_steps=5000, keep_checkpoints=8, restore=True,
                 saved_weights=None):
        super().__init__()
        if save_every_steps < 1 or keep_checkpoints < 1:
            raise ValueError(
                "CheckpointCallback: save_every_steps and keep_checkpoints must be at least 1, "
                f"got {save_every_steps} and {keep_checkpoints}"
            )
        self.directory = os.fspath(directory)
        self.save_every_steps = save_every_steps
        self.keep_checkpoints = keep_checkpoints
        self.restore = restore
        self.saved_weights = saved_weights or contextlib.nullcontext
        self.manager = None
        self.restored_step = None
        self._last_saved_step = None

    def on_train_begin(self, logs=None):
        checkpoint = training_checkpoint(self.model)
        self.manager = tf.train.CheckpointManager(
            checkpoint, self.directory, max_to_keep=self.keep_checkpoints
        )
        if self.restore and restore_latest(checkpoint, self.manager, self.model):
            self.restored_step = optimizer_step(self.model)
            self._last_saved_step = self.restored_step

    def save(self, step):
        """Writes the checkpoint of `step` (of the weights `saved_weights` gives).

        Raises:
            CheckpointWriteError: when the files cannot be written; the checkpoint state
                file still names the previous checkpoint as the latest.
        """
        try:
            with self.saved_weights():
                return self.manager.save(checkpoint_number=step)
        # TensorFlow's file system reports a full disk (ENOSPC) as ResourceExhaustedError.
        except (OSError, tf.errors.ResourceExhaustedError) as error:
            prefix = os.path.join(self.directory, f"ckpt-{step}")
            # Kept only if the state file already names it (the write failed after it).
            if tf.train.latest_checkpoint(self.directory) != prefix:
                remove_partial_checkpoint(prefix)
            latest = tf.train.latest_checkpoint(self.directory)
            reason = " ".join((getattr(error, "strerror", None) or getattr(
                error, "message", None) or str(error)).split())
            raise CheckpointWriteError(
                f"could not write the checkpoint of step {step} to {self.directory}: "
                f"{reason}; the latest checkpoint is {latest or 'none'} (free the "
                "space and run the same command again to resume from it)"
            ) from error

    def _save(self, step):
        if step != self._last_saved_step:
            self.save(step)
            self._last_saved_step = step

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
        check_finite_loss(logs, step)
        if step > 0 and step % self.save_every_steps == 0:
            self._save(step)

    def on_train_end(self, logs=None):
        self._save(optimizer_step(self.model))
