import os

import pytest
import tensorflow as tf

from kerasnmt.training.readable_checkpoint import newest_readable_checkpoint


def _checkpoints(directory, count):
    variable = tf.Variable(tf.zeros([50]))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), str(directory), 5)
    paths = []
    for step in range(1, count + 1):
        variable.assign(tf.fill([50], float(step)))
        paths.append(manager.save(checkpoint_number=step))
    return paths[::-1]  # newest first


def _truncate(path):
    with open(path + ".data-00000-of-00001", "r+b") as data:
        data.truncate(10)


def test_the_newest_readable_checkpoint_is_taken_and_each_damaged_one_named(tmp_path, capsys):
    paths = _checkpoints(tmp_path, 3)
    assert newest_readable_checkpoint(paths) == paths[0]
    _truncate(paths[0])
    _truncate(paths[1])
    assert newest_readable_checkpoint(paths) == paths[2]
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: checkpoint {path} is damaged (Read less bytes than requested); "
                   "trying the previous one" for path in paths[:2]]
    _truncate(paths[2])
    with pytest.raises(ValueError, match="no readable checkpoint: .*ckpt-3 .*ckpt-2 .*ckpt-1"):
        newest_readable_checkpoint(paths)
    assert newest_readable_checkpoint([]) is None


def test_a_damaged_index_is_damage_too(tmp_path):
    paths = _checkpoints(tmp_path, 2)
    with open(paths[0] + ".index", "wb") as index:
        index.write(b"not an index")
    assert newest_readable_checkpoint(paths) == paths[1]
    assert os.path.exists(paths[0] + ".index")  # reported, not deleted
