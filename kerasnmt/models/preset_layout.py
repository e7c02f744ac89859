"""The files of a kerasnmt keras-hub preset directory, and the check of one before loading.

A preset has keras-hub's layout (`keras_hub.models.Task.save_to_preset`):

- `metadata.json`: keras-hub's (Keras and keras-hub versions, parameter count, date, the
  task `Seq2SeqLM`) with `kerasnmt_version` and `kerasnmt_preset_format`;
- `config.json`: the `TransformerBackbone`'s config (the architecture);
- `task.json`: the `TranslatorSeq2SeqLM`'s config: the backbone, the preprocessor, the
  `BeamSampler` and the other decoding options of its `generate`;
- `preprocessor.json`: the `TranslationPreprocessor`'s config, tokenizers and vocabularies
  included (kerasnmt's tokenizer configs embed their SentencePiece models, as in a `.keras`
  file, so the preset has no `assets/` folder);
- `model.weights.h5`: the backbone's weights (all of the model's).

`kerasnmt.export.save_preset` writes it; `TranslatorSeq2SeqLM.from_preset` checks it
(`check_preset`) before keras-hub reads it.

Examples:
    >>> import os, tempfile
    >>> check_preset(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    ValueError: ...: not a complete keras-hub preset: metadata.json is missing ...
"""

import json
import os

from keras_hub.src.utils import preset_utils

from kerasnmt import __version__ as KERASNMT_VERSION

# Bumped when a preset's files change in a way this code could not read.
PRESET_FORMAT = 1
# The files of a preset, in the order they are checked.
PRESET_FILES = (preset_utils.METADATA_FILE, preset_utils.CONFIG_FILE,
                preset_utils.TASK_CONFIG_FILE, preset_utils.PREPROCESSOR_CONFIG_FILE,
                preset_utils.MODEL_WEIGHTS_FILE)
# The class each config file holds, as Keras registers it.
PRESET_CLASSES = {
    preset_utils.CONFIG_FILE: "kerasnmt>TransformerBackbone",
    preset_utils.TASK_CONFIG_FILE: "kerasnmt>TranslatorSeq2SeqLM",
    preset_utils.PREPROCESSOR_CONFIG_FILE: "kerasnmt>TranslationPreprocessor",
}


def check_preset(directory):
    """Checks that `directory` is a complete keras-hub preset of this kerasnmt.

    Raises:
        ValueError: naming the first missing file, or the file that another version or
            another class wrote and what was expected.
    """
    if not os.path.isdir(directory):
        raise ValueError(f"{directory}: no such preset directory")
    for name in PRESET_FILES:
        if not os.path.isfile(os.path.join(directory, name)):
            raise ValueError(
                f"{directory}: not a complete keras-hub preset: {name} is missing (a preset "
                f"of kerasnmt has {', '.join(PRESET_FILES)}; write it again with kerasnmt "
                "export --format keras-hub)")
    metadata = read_json(directory, preset_utils.METADATA_FILE)
    written = metadata.get("kerasnmt_preset_format") if isinstance(metadata, dict) else None
    if written != PRESET_FORMAT:
        writer = (f"kerasnmt {metadata.get('kerasnmt_version')} (preset format {written})"
                  if written is not None else "not kerasnmt (no kerasnmt_preset_format)")
        raise ValueError(
            f"{os.path.join(directory, preset_utils.METADATA_FILE)}: written by {writer}; "
            f"kerasnmt {KERASNMT_VERSION} reads preset format {PRESET_FORMAT}: write it "
            "again with this kerasnmt (kerasnmt export --format keras-hub)")
    for name, expected in PRESET_CLASSES.items():
        config = read_json(directory, name)
        found = config.get("registered_name") if isinstance(config, dict) else None
        if found != expected:
            raise ValueError(f"{os.path.join(directory, name)}: holds {found}, expected "
                             f"{expected} (a preset of kerasnmt export --format keras-hub)")


def read_json(directory, name):
    """The JSON value of `directory/name`; a `ValueError` naming the file if it is not
    JSON."""
    path = os.path.join(directory, name)
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
