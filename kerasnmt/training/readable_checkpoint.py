"""The newest checkpoint that can be read, so that a damaged latest checkpoint is not fatal.

A run killed while it wrote a checkpoint, or a disk that filled up, can leave the newest
`ckpt-STEP.data-*` file truncated: restoring it fails deep inside TensorFlow
(`IndexError: Read less bytes than requested`). Training, translation and export instead
read every tensor of the candidates, newest first, report each damaged one, and use the
newest readable one (averaging, the newest readable ones).
"""

import sys

import tensorflow as tf


def checkpoint_damage(path):
    """Why the checkpoint `path` cannot be read (every tensor is read), or None.

    Examples:
        >>> import os, tempfile
        >>> import tensorflow as tf
        >>> path = tf.train.Checkpoint(v=tf.Variable(tf.ones([100]))).write(
        ...     os.path.join(tempfile.mkdtemp(), "ckpt"))
        >>> print(checkpoint_damage(path))
        None
        >>> with open(path + ".data-00000-of-00001", "r+b") as data:
        ...     _ = data.truncate(100)
        >>> checkpoint_damage(path)
        'Read less bytes than requested'
    """
    try:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_dtype_map():
            reader.get_tensor(name)
    except (IndexError, ValueError, tf.errors.OpError) as error:
        return " ".join(str(error).split()) or type(error).__name__
    return None


def newest_readable_checkpoint(paths):
    """The first checkpoint of `paths` (newest first) that can be read.

    Each damaged one is reported on stderr, with the reason, before the next is tried.

    Args:
        paths: checkpoint paths (`model_dir/ckpt-STEP`), newest first.

    Returns:
        A path, or None when `paths` is empty.

    Raises:
        ValueError: every checkpoint is damaged (each is named with its reason).
    """
    readable = newest_readable_checkpoints(paths, 1)
    return readable[0] if readable else None


def newest_readable_checkpoints(paths, count):
    """The first `count` checkpoints of `paths` (newest first) that can be read, newest
    first: fewer when `paths` holds fewer.

    Each damaged one met on the way is reported on stderr, with the reason, and skipped.

    Raises:
        ValueError: `paths` is not empty and every checkpoint is damaged (each is named
            with its reason).
    """
    readable, damaged = [], []
    for path in paths:
        if len(readable) == count:
            break
        reason = checkpoint_damage(path)
        if reason is None:
            readable.append(path)
            continue
        damaged.append(f"{path} ({reason})")
        print(f"warning: checkpoint {path} is damaged ({reason}); trying the previous one",
              file=sys.stderr, flush=True)
    if damaged and not readable:
        raise ValueError(f"no readable checkpoint: {'; '.join(damaged)}")
    return readable
