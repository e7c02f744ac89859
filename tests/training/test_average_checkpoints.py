import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training import average_checkpoints


def _model():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(25)])


def _checkpoints(directory, count):
    """`count` checkpoints of `_model()`, step k holding random weights; returns their paths
    and weights, oldest first."""
    model = _model()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(directory), 10)
    rng = np.random.default_rng(0)
    paths, weights = [], []
    for step in range(1, count + 1):
        values = [rng.normal(size=w.shape).astype(np.float32) for w in model.trainable_weights]
        for weight, value in zip(model.trainable_weights, values):
            weight.assign(value)
        paths.append(manager.save(checkpoint_number=step))
        weights.append(values)
    return paths, weights


def _truncate(path):
    with open(path + ".data-00000-of-00001", "r+b") as data:
        data.truncate(10)


def test_a_damaged_checkpoint_is_named_and_the_newest_readable_ones_are_averaged(tmp_path,
                                                                                 capsys):
    paths, weights = _checkpoints(tmp_path, 4)
    _truncate(paths[3])
    model = _model()
    assert average_checkpoints(str(tmp_path), model, max_count=2) == [paths[2], paths[1]]
    for weight, at_3, at_2 in zip(model.trainable_weights, weights[2], weights[1]):
        np.testing.assert_allclose(weight.numpy(), (at_3 + at_2) / 2, rtol=1e-6)
    assert capsys.readouterr().err.splitlines() == [
        f"warning: checkpoint {paths[3]} is damaged (Read less bytes than requested); "
        "trying the previous one"]


def test_every_checkpoint_damaged_is_an_error_naming_each(tmp_path):
    paths, _ = _checkpoints(tmp_path, 2)
    for path in paths:
        _truncate(path)
    model = _model()
    before = [weight.numpy() for weight in model.trainable_weights]
    with pytest.raises(ValueError, match="^" + re.escape(
            f"no readable checkpoint: {paths[1]} (Read less bytes than requested); "
            f"{paths[0]} (Read less bytes than requested)") + "$"):
        average_checkpoints(str(tmp_path), model, max_count=8)
    for weight, value in zip(model.trainable_weights, before):
        np.testing.assert_array_equal(weight.numpy(), value)
