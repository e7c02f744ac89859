"""The checkpoints of a run: the one a model is restored from for export or translation,
and their average.

Examples:
    >>> import tempfile
    >>> latest_checkpoint({"model_dir": tempfile.mkdtemp()})
    Traceback (most recent call last):
    ...
    ValueError: no checkpoint in ...: train first (kerasnmt train)
"""

import os

import tensorflow as tf

from kerasnmt.runner.run_model import build_translator
from kerasnmt.training import average_checkpoints
from kerasnmt.training.readable_checkpoint import checkpoint_damage, newest_readable_checkpoint
from kerasnmt.training.run_recipe import check_checkpoint_recipe, copy_run_recipe

AVERAGE_DIRECTORY = "avg"


def latest_checkpoint(config, checkpoint=None):
    """The checkpoint a model is restored from for export or translation.

    Args:
        config: a checked configuration.
        checkpoint: a checkpoint path (`model_dir/ckpt-1000`) or a directory of
            checkpoints (its newest readable one is taken); default: `model_dir/avg`'s
            latest when it averages up to the latest training step, else `model_dir`'s
            latest. A damaged default is reported and the next newest readable one of
            `model_dir` taken instead (see `newest_readable_checkpoint`).

    Raises:
        ValueError: when there is no checkpoint there, when the checkpoint given is
            damaged, or when every candidate is.
    """
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
        if os.path.isdir(checkpoint):
            path = newest_readable_checkpoint(_checkpoints_newest_first(checkpoint))
            if path is None:
                raise ValueError(f"no checkpoint in {checkpoint}")
            return path
        if not tf.io.gfile.exists(checkpoint + ".index"):
            raise ValueError(f"{checkpoint}: no such checkpoint (no {checkpoint}.index)")
        damage = checkpoint_damage(checkpoint)
        if damage is not None:
            raise ValueError(f"checkpoint {checkpoint} is damaged: {damage}")
        return checkpoint
    model_dir = config["model_dir"]
    if model_dir is None:
        raise ValueError("no checkpoint given and model_dir is not set in the configuration")
    candidates = _checkpoints_newest_first(model_dir)
    averaged = tf.train.latest_checkpoint(os.path.join(model_dir, AVERAGE_DIRECTORY))
    if averaged is not None and (not candidates or _step_of(averaged) >= _step_of(candidates[0])):
        candidates.insert(0, averaged)
    path = newest_readable_checkpoint(candidates)
    if path is None:
        raise ValueError(f"no checkpoint in {model_dir}: train first (kerasnmt train)")
    return path


def _checkpoints_newest_first(directory):
    """The checkpoints a directory's `checkpoint` state file lists, newest first."""
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = [os.path.join(directory, os.path.basename(path))
             for path in state.all_model_checkpoint_paths]
    return [path for path in reversed(paths) if tf.io.gfile.exists(path + ".index")]


def _step_of(checkpoint_path):
    """The step of a `ckpt-STEP` checkpoint (`CheckpointCallback` numbers them by step)."""
    return int(checkpoint_path.rsplit("-", 1)[-1])


def restore_translator(config, checkpoint=None):
    """A `Translator` built from `config` with the weights of a checkpoint.

    Args:
        config: a checked configuration (its `model` and `data` vocabularies must be those
            the checkpoint was trained with).
        checkpoint: see `latest_checkpoint`.

    Returns:
        `(translator, checkpoint_path)`.
    """
    path = latest_checkpoint(config, checkpoint)
    check_checkpoint_recipe(config, path)
    translator = build_translator(config)
    try:
        status = tf.train.Checkpoint(model=translator).restore(path)
        status.expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError) as error:
        detail = str(error).split(" Showing")[0].splitlines()[0]
        raise ValueError(
            f"{path} does not match the model of the configuration (the model section or "
            f"the vocabularies differ from those it was trained with): {detail}"
        ) from None
    return translator, path


def average_run_checkpoints(config, translator=None, max_count=None, output_dir=None):
    """Averages the last checkpoints of `model_dir` into a checkpoint of `output_dir`.

    Args:
        config: a checked configuration with `model_dir`.
        translator: the model to fill (built from `config` when None).
        max_count: checkpoints to average; default `train.average_last_checkpoints`.
        output_dir: default `model_dir/avg`. It keeps one checkpoint, numbered with the
            step of the newest averaged checkpoint.

    Returns:
        The path of the averaged checkpoint.
    """
    model_dir = config["model_dir"]
    if model_dir is None:
        raise ValueError("model_dir is not set in the configuration")
    max_count = max_count or config["train"]["average_last_checkpoints"] or 1
    output_dir = output_dir or os.path.join(model_dir, AVERAGE_DIRECTORY)
    if os.path.abspath(output_dir) == os.path.abspath(model_dir):
        raise ValueError("the averaged checkpoint must go to another directory than model_dir")
    if translator is None:
        translator = build_translator(config)
    paths = average_checkpoints(model_dir, translator, max_count=max_count)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=translator), output_dir, max_to_keep=1
    )
    path = manager.save(checkpoint_number=_step_of(paths[0]))
    copy_run_recipe(model_dir, output_dir)
    print(f"Averaged {len(paths)} checkpoints ({', '.join(os.path.basename(p) for p in paths)}) "
          f"into {path}", flush=True)
    return path
