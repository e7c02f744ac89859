"""A run's configuration, given as a YAML file or as the dictionary `load_config` returns."""

import os

from kerasnmt.config import load_config, missing_keys


def run_configuration(config, required=()):
    """The checked configuration of `config`, with every key of `required` set.

    Args:
        config: the path of a YAML run configuration (checked by `load_config`), or a
            configuration it returned.
        required: key paths that must be set (a tuple of alternatives is met by any).

    Returns:
        The configuration dictionary.

    Raises:
        ConfigError: every mistake of the YAML file, a missing required key included.
        ValueError: naming the keys a dictionary leaves unset.

    Examples:
        >>> from kerasnmt.config import default_config
        >>> run_configuration(default_config())["params"]["beam_width"]
        4
        >>> run_configuration(default_config(), required=["model_dir"])
        Traceback (most recent call last):
        ...
        ValueError: the configuration does not set these keys: model_dir
    """
    if isinstance(config, (str, os.PathLike)):
        return load_config(config, required=required)
    missing = missing_keys(config, required)
    if missing:
        raise ValueError(f"the configuration does not set these keys: {', '.join(missing)}")
    return config
