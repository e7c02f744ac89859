"""Averages the weights of the last checkpoints of a training run."""

import numpy as np
import tensorflow as tf

from kerasnmt.training.readable_checkpoint import newest_readable_checkpoints


def average_checkpoints(directory, model, max_count=8):
    """Sets `model`'s trainable weights to their average over the last `max_count` readable
    checkpoints.

    As OpenNMT-tf's `average_checkpoints`: the checkpoints of `directory` (written by
    `CheckpointCallback`) are taken newest first, up to `max_count`, and every trainable
    weight becomes the mean of its values in them. Other variables keep the value of the
    newest checkpoint. The model must be built with the architecture that wrote them. A
    damaged checkpoint (see `checkpoint_damage`) is reported on stderr and skipped: the
    average is over the newest `max_count` readable ones.

    Args:
        directory: a checkpoint directory (with its `checkpoint` state file).
        model: the model to fill, e.g. a `Translator` with the same configuration.
        max_count: how many recent readable checkpoints to average.

    Returns:
        The paths of the averaged checkpoints, newest first.

    Raises:
        ValueError: if `directory` holds no checkpoint, or only damaged ones.

    Examples:
        >>> import os, tempfile, keras
        >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
        >>> manager = tf.train.CheckpointManager(
        ...     tf.train.Checkpoint(model=model), tempfile.mkdtemp(), max_to_keep=3)
        >>> for kernel in (1.0, 2.0, 6.0):
        ...     _ = model.layers[0].kernel.assign([[kernel]])
        ...     _ = manager.save()
        >>> [os.path.basename(path) for path in average_checkpoints(manager.directory, model, 2)]
        ['ckpt-3', 'ckpt-2']
        >>> float(model.layers[0].kernel[0, 0])
        4.0

    Reference:
        [OpenNMT-tf `average_checkpoints`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/utils/checkpoint.py)
    """
    state = tf.train.get_checkpoint_state(directory)
    if state is None or not state.all_model_checkpoint_paths:
        raise ValueError(f"average_checkpoints: no checkpoint in {directory!r}")
    paths = newest_readable_checkpoints(list(reversed(state.all_model_checkpoint_paths)),
                                        max_count)
    checkpoint = tf.train.Checkpoint(model=model)
    sums = None
    for path in reversed(paths):  # Oldest first, so the newest is restored last.
        checkpoint.restore(path).expect_partial()
        values = [np.asarray(weight.numpy(), dtype=np.float64) for weight in model.trainable_weights]
        sums = values if sums is None else [s + v for s, v in zip(sums, values)]
    for weight, total in zip(model.trainable_weights, sums):
        weight.assign((total / len(paths)).astype(weight.dtype))
    return paths
