"""Reading a configuration: YAML parsing, merging onto the defaults, and every check.

Examples:
    >>> check_config({"train": {"batch_size": 64}}, base_dir=".")["train"]["batch_size"]
    64
"""

import os

import yaml

from kerasnmt.config.config_error import ConfigError
from kerasnmt.config.option_agreement import check_together
from kerasnmt.config.option_types import Invalid, Mapping, got
from kerasnmt.config.schema import SCHEMA, default_config, value_at
from kerasnmt.config.unknown_keys import unknown_key_message


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key given twice in one mapping (PyYAML keeps the
    last silently)."""

    def construct_mapping(self, node, deep=False):
        first_line = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(
                    self.name,
                    [f"line {line}: key {key!r} given twice (first on line {first_line[key]})"],
                )
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def load_config(path, required=()):
    """Reads a YAML run configuration, merges it onto the defaults and checks it.

    Args:
        path: the YAML file. Relative file paths inside it are resolved from its directory.
        required: key paths that must be set (not null) for the command at hand, e.g.
            `("model_dir", "data.train_features_file")`.

    Returns:
        The complete configuration as a nested dict (see `default_config()`), with file
        paths absolute, lists of training files always lists, `eval.scorers` a list, and
        `params.decay_params.model_dim` filled in from `model.num_units` when null (but for
        `decay_type: InvSqrtDecay`, which has no `model_dim`).

    Raises:
        ConfigError: listing every mistake with its key path, before anything runs.

    Examples:
        >>> import pathlib, tempfile
        >>> run = pathlib.Path(tempfile.mkdtemp()) / "run.yml"
        >>> _ = run.write_text("train:\\n  batch_type: token\\n  batch_sizes: 64\\n")
        >>> load_config(run)
        Traceback (most recent call last):
        ...
        kerasnmt.config.config_error.ConfigError: ...run.yml: 2 errors in the configuration:
          train.batch_sizes: unknown key (did you mean train.batch_size?)
          train.batch_type: expected one of examples, tokens, got 'token' (did you mean 'tokens'?)
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as stream:
            values = yaml.load(stream, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigError(path, ["the configuration file does not exist"]) from None
    except yaml.YAMLError as error:
        raise ConfigError(path, [f"not valid YAML: {error}"]) from None
    base_dir = os.path.dirname(os.path.abspath(path))
    return check_config({} if values is None else values, base_dir, source=path, required=required)


def check_config(values, base_dir, source="<config>", required=()):
    """Merges a configuration given as a dict onto the defaults and checks it.

    `load_config` reads a YAML file and calls this; use it directly for configurations
    built in Python.

    Args:
        values: a nested dict with some of the keys of `default_config()`.
        base_dir: the directory relative file paths are resolved from.
        source: what to call `values` in error messages.
        required: key paths that must be set (not null); a tuple of key paths is met
            by any one of them.

    Returns:
        The complete, checked configuration (see `load_config`).

    Raises:
        ConfigError: listing every mistake with its key path.
    """
    errors = {}
    config = default_config()
    if not isinstance(values, dict):
        raise ConfigError(source, [f"expected a mapping of sections at the top, {got(values)}"])
    _merge(values, SCHEMA, config, "", base_dir, errors)
    params = values.get("params")
    check_together(config, errors, params.get("optimizer_params") if isinstance(params, dict)
                    else None)
    for key_path in missing_keys(config, required):
        if key_path.split(" ")[0] not in errors:
            errors[key_path] = f"{key_path}: required but not set"
    if errors:
        raise ConfigError(source, [errors[key] for key in sorted(errors)])
    params = config["params"]
    if params["decay_params"]["model_dim"] is None and params["decay_type"] != "InvSqrtDecay":
        params["decay_params"]["model_dim"] = config["model"]["num_units"]
    return config


def missing_keys(config, required):
    """The entries of `required` that `config` leaves unset (null), named as key paths;
    a tuple of alternatives is met by any one of them and named `"a (or b)"`.

    Examples:
        >>> config = default_config()
        >>> config["data"]["train_shards"] = ["train.index.json"]
        >>> missing_keys(config, ["model_dir", ("data.train_features_file", "data.train_shards")])
        ['model_dir']
        >>> missing_keys(default_config(), [("data.train_features_file", "data.train_shards")])
        ['data.train_features_file (or data.train_shards)']
    """
    missing = []
    for entry in required:
        alternatives = entry if isinstance(entry, tuple) else (entry,)
        if all(value_at(config, key_path) is None for key_path in alternatives):
            missing.append(alternatives[0] + "".join(f" (or {key})" for key in alternatives[1:]))
    return missing



def _merge(values, schema, config, prefix, base_dir, errors):
    """Checks `values` against `schema` and writes them into `config`, collecting errors."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in schema:
            errors[path] = unknown_key_message(key, path, schema)
            continue
        entry = schema[key]
        if isinstance(entry, dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                errors[path] = f"{path}: expected a mapping of options, {got(value)}"
                continue
            _merge(value, entry, config[key], f"{path}.", base_dir, errors)
            continue
        try:
            checked = entry.kind.check(value, base_dir)
        except Invalid as error:
            errors[path] = f"{path}: {error}"
            continue
        if isinstance(entry.kind, Mapping):
            config[key].update(checked)
        else:
            config[key] = checked
