"""The recipe a run directory was trained with, checked again when the run resumes."""

import json
import os
import shutil

from kerasnmt.data.result_file import result_file
from kerasnmt.data.vocabulary_record import file_digest

RECIPE_FILE = "recipe.json"
# What the checkpoint's weights depend on. Dropout, the schedule and the batch may change
# between two parts of a run (fine-tuning does); these may not.
ARCHITECTURE_KEYS = (
    "num_layers",
    "num_units",
    "num_heads",
    "ffn_inner_dim",
    "maximum_relative_position",
    "pre_norm",
    "share_embeddings",
    "embeddings_initializer",
)
# Architecture keys added after recipe files were first written, with their defaults: kept
# in a recipe only when set otherwise, so that the recipes of earlier runs still match.
LATER_ARCHITECTURE_DEFAULTS = {"source_eos": False, "use_output_bias": True,
                               "layer_norm_epsilon": 1e-6}
VOCABULARY_KEYS = (
    "source_vocabulary",
    "target_vocabulary",
    "source_sentencepiece",
    "target_sentencepiece",
)


def run_recipe(config):
    """The architecture (`model.*`) and the vocabulary files' contents (`data.*`, as
    SHA-256 digests) of a checked configuration, as a flat `{key path: value}` dict.

    Examples:
        >>> run_recipe({"model": {"num_layers": 4, "num_units": 128, "num_heads": 4,
        ...     "ffn_inner_dim": 256, "maximum_relative_position": None, "pre_norm": False,
        ...     "share_embeddings": "all", "embeddings_initializer": "scaled_normal"},
        ...     "data": {}})["model.num_units"]
        128
    """
    recipe = _architecture(config)
    for key in VOCABULARY_KEYS:
        path = config["data"].get(key)
        if path is not None:
            recipe[f"data.{key}"] = "sha256:" + file_digest(path)
    return recipe


def _architecture(config):
    """The `model.*` part of `run_recipe` (no file is read)."""
    model = config["model"]
    architecture = {f"model.{key}": model[key] for key in ARCHITECTURE_KEYS}
    for key, default in LATER_ARCHITECTURE_DEFAULTS.items():
        value = model.get(key, default)
        if value != default:
            architecture[f"model.{key}"] = value
    return architecture


def check_run_recipe(config, resuming):
    """Refuses to resume a run whose configuration changed its architecture or vocabulary.

    The first time a `model_dir` is trained, its recipe (`run_recipe`) is written to
    `model_dir/recipe.json`. When the run resumes, the configuration's recipe must equal
    the stored one; a run directory from before this file existed gets it written.

    Args:
        config: a checked configuration with `model_dir`.
        resuming: whether `model_dir` already holds a checkpoint.

    Raises:
        ValueError: naming `model_dir`, and each key that differs with the checkpoint's
            value and the configuration's.
    """
    path = os.path.join(config["model_dir"], RECIPE_FILE)
    recipe = run_recipe(config)
    if resuming and os.path.exists(path):
        differences = _differences(_stored_recipe(path), recipe)
        if differences:
            raise ValueError(
                f"{config['model_dir']} was trained with another recipe, so training cannot "
                f"resume from its checkpoint: {'; '.join(differences)}. Restore those "
                "settings, or train into a new model_dir"
            )
        return
    with result_file(path) as file:
        json.dump(recipe, file, indent=2)


def check_checkpoint_recipe(config, checkpoint):
    """Refuses to restore a checkpoint with a configuration of another architecture.

    The recipe of the run that wrote `checkpoint` (the `recipe.json` beside it: in its
    `model_dir`, or copied into a directory of averaged checkpoints) must have the
    configuration's `model.*` values. A difference that changes no weight shape, such
    as `model.source_eos`, would otherwise restore cleanly and translate wrongly. A
    checkpoint with no recipe beside it is not checked.

    Raises:
        ValueError: naming the checkpoint and each key that differs.
    """
    path = os.path.join(os.path.dirname(os.fspath(checkpoint)), RECIPE_FILE)
    if not os.path.exists(path):
        return
    stored = {key: value for key, value in _stored_recipe(path).items()
              if key.startswith("model.")}
    differences = _differences(stored, _architecture(config))
    if differences:
        raise ValueError(
            f"{checkpoint} was trained with another model than the configuration's: "
            f"{'; '.join(differences)}. Restore those settings in the model section"
        )


def copy_run_recipe(model_dir, directory):
    """Copies `model_dir`'s recipe (if any) into `directory`, which holds checkpoints made
    from that run's weights (averaged)."""
    path = os.path.join(model_dir, RECIPE_FILE)
    if os.path.exists(path):
        with result_file(os.path.join(directory, RECIPE_FILE), binary=True) as copy, \
                open(path, "rb") as recipe:
            shutil.copyfileobj(recipe, copy)


def _stored_recipe(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def _differences(stored, recipe):
    return [
        f"{key}: {_describe(stored.get(key))} in the checkpoint, "
        f"{_describe(recipe.get(key))} in the configuration"
        for key in sorted(set(stored) | set(recipe))
        if stored.get(key) != recipe.get(key)
    ]


def _describe(value):
    if value is None:
        return "none"
    if isinstance(value, str) and value.startswith("sha256:"):
        return f"a file with {value[:19]}..."
    return repr(value)
