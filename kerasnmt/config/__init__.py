"""The YAML run configuration, with OpenNMT-tf's key names where they exist.

A run configuration is a YAML file with the sections `data`, `model`, `params`, `train`,
`eval` and `infer`, plus the top-level `model_dir`:

```yaml
model_dir: run/ende
data:
  source_vocabulary: vocab.en
  target_vocabulary: vocab.de
  train_features_file: train.en
  train_labels_file: train.de
train:
  batch_size: 4096
```

`load_config` reads it, merges it onto the defaults (`default_config()`), and checks
everything before any work starts: unknown keys (with a "did you mean" suggestion), wrong
types, values out of range or not among the choices, files that do not exist, and options
that contradict each other. Every mistake is reported with its key path, all of them at
once, in one `ConfigError`. File paths are resolved relative to the directory of the
configuration file.

`config_reference()` renders the schema as the Markdown tables of `docs/training.md`;
`python -m kerasnmt.config` prints them.

The schema is one module a section (`data_section.py`, `model_section.py`,
`params_section.py`, `train_section.py`, `eval_section.py`, `infer_section.py`), each
taking its choices and defaults from the component that owns them, assembled in
`schema.py`; `option_types.py` holds the kinds of values, `loading.py` the reading and
merging, `option_agreement.py` the rules between options, `unknown_keys.py` the messages
for keys the schema lacks, and `reference.py` the reference page.
"""

from kerasnmt.config.config_error import ConfigError
from kerasnmt.config.loading import check_config, load_config, missing_keys
from kerasnmt.config.reference import config_reference
from kerasnmt.config.schema import default_config

__all__ = [
    "ConfigError",
    "check_config",
    "config_reference",
    "default_config",
    "load_config",
    "missing_keys",
]
