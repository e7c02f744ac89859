"""The whole configuration schema: its sections, in the order of the reference page, and
the defaults they make.

Examples:
    >>> [path for path, _ in walk(SCHEMA)][:2]
    ['model_dir', 'data.source_vocabulary']
    >>> value_at(default_config(), "params.beam_width")
    4
"""

import copy

from kerasnmt.config.data_section import DATA_SECTION
from kerasnmt.config.eval_section import EVAL_SECTION
from kerasnmt.config.infer_section import INFER_SECTION
from kerasnmt.config.model_section import MODEL_SECTION
from kerasnmt.config.option_types import Option, Path
from kerasnmt.config.params_section import PARAMS_SECTION
from kerasnmt.config.train_section import TRAIN_SECTION


SCHEMA = {
    "model_dir": Option(
        None,
        Path(directory=True),
        "Directory for checkpoints, TensorBoard logs and exports; created if it does not exist.",
    ),
    "data": DATA_SECTION,
    "model": MODEL_SECTION,
    "params": PARAMS_SECTION,
    "train": TRAIN_SECTION,
    "eval": EVAL_SECTION,
    "infer": INFER_SECTION,
}


def walk(schema, prefix=""):
    """Yields (key path, option) for every option of the schema, in order."""
    for key, entry in schema.items():
        path = f"{prefix}{key}"
        if isinstance(entry, dict):
            yield from walk(entry, prefix=f"{path}.")
        else:
            yield path, entry


def default_config():
    """The configuration used for every key a file leaves out.

    Returns:
        A nested dict: `{"model_dir": None, "data": {...}, "model": {...}, ...}`.

    Examples:
        >>> default_config()["train"]["batch_type"]
        'tokens'
    """

    def defaults(schema):
        return {
            key: defaults(entry) if isinstance(entry, dict) else copy.deepcopy(entry.default)
            for key, entry in schema.items()
        }

    return defaults(SCHEMA)

def value_at(config, key_path):
    """The value of `config` at a dotted key path such as `"params.beam_width"`."""
    value = config
    for key in key_path.split("."):
        value = value[key]
    return value

