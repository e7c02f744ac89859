"""Write a `Translator` as a keras-hub preset directory, and check one before it is loaded.

The directory has keras-hub's preset layout (`keras_hub.models.Task.save_to_preset`), so
`keras_hub.models.Seq2SeqLM.from_preset(directory)` loads it in any process that has
imported kerasnmt, as a `kerasnmt.models.TranslatorSeq2SeqLM`:

- `config.json`: the `TransformerBackbone`'s config (the architecture);
- `model.weights.h5`: the backbone's weights (all of the model's);
- `task.json`: the `TranslatorSeq2SeqLM`'s config: the backbone, the preprocessor, the
  `BeamSampler` and the other decoding options of its `generate`;
- `preprocessor.json`: the `TranslationPreprocessor`'s config, tokenizers and vocabularies
  included (kerasnmt's tokenizer configs embed their SentencePiece models, as in a `.keras`
  file, so the preset has no `assets/` folder);
- `metadata.json`: keras-hub's (Keras and keras-hub versions, parameter count, date, the
  task `Seq2SeqLM`) with `kerasnmt_version` and `kerasnmt_preset_format`.

Example:
    >>> import os, tempfile
    >>> from kerasnmt.decoding import BeamSampler
    >>> from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
    >>> from kerasnmt.models import Translator
    >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
    >>> translator = Translator(
    ...     TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(),
    ...                             vocabulary, vocabulary),
    ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16)
    >>> preset = os.path.join(tempfile.mkdtemp(), "preset")
    >>> _ = save_preset(translator, preset, BeamSampler(beam_size=2), jit_compile=False)
    >>> sorted(os.listdir(preset))
    ['config.json', 'metadata.json', 'model.weights.h5', 'preprocessor.json', 'task.json']
    >>> check_preset(preset)
    >>> os.remove(os.path.join(preset, "model.weights.h5"))
    >>> check_preset(preset)
    Traceback (most recent call last):
    ...
    ValueError: .../preset: not a complete keras-hub preset: model.weights.h5 is missing ...
"""

import json
import os

import keras
import keras_hub
from keras_hub.src.utils import preset_utils

from kerasnmt import __version__ as KERASNMT_VERSION
from kerasnmt.export.directories import check_output, write_atomically
from kerasnmt.models.translator_seq2seq_lm import TranslatorSeq2SeqLM

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


def save_preset(translator, directory, sampler=None, force=False, **translate_options):
    """Writes `translator` as a keras-hub preset `directory` (see the module docstring).

    The directory is written under a temporary name and renamed: an interrupted write
    leaves an existing one as it was.

    Args:
        translator: a `kerasnmt.models.Translator`.
        directory: the preset directory to write.
        sampler: the `kerasnmt.decoding.BeamSampler` of the preset's `generate`; default
            `BeamSampler()`.
        force: replace a `directory` that is not an empty directory.
        **translate_options: the other decoding options of `generate`, arguments of
            `Translator.translate` (`batch_size`, `replace_unknown_target`, `jit_compile`,
            `maximum_source_length`, `length_ratio`, `length_offset`).

    Returns:
        `directory`.

    Raises:
        ValueError: a `directory` in the way (nothing is written).
    """
    check_output(directory, force)
    seq2seq_lm = TranslatorSeq2SeqLM.from_translator(translator, sampler, **translate_options)

    def write(temporary):
        preset_utils.get_preset_saver(temporary).save_backbone(seq2seq_lm.backbone)
        _write_json(temporary, preset_utils.TASK_CONFIG_FILE, _preset_config(seq2seq_lm))
        _write_json(temporary, preset_utils.PREPROCESSOR_CONFIG_FILE,
                    _preset_config(seq2seq_lm.preprocessor))
        metadata = _read_json(temporary, preset_utils.METADATA_FILE)
        metadata.update(kerasnmt_version=KERASNMT_VERSION, kerasnmt_preset_format=PRESET_FORMAT)
        _write_json(temporary, preset_utils.METADATA_FILE, metadata)

    write_atomically(write, os.fspath(directory))
    return directory


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
    metadata = _read_json(directory, preset_utils.METADATA_FILE)
    written = metadata.get("kerasnmt_preset_format") if isinstance(metadata, dict) else None
    if written != PRESET_FORMAT:
        writer = (f"kerasnmt {metadata.get('kerasnmt_version')} (preset format {written})"
                  if written is not None else "not kerasnmt (no kerasnmt_preset_format)")
        raise ValueError(
            f"{os.path.join(directory, preset_utils.METADATA_FILE)}: written by {writer}; "
            f"kerasnmt {KERASNMT_VERSION} reads preset format {PRESET_FORMAT}: write it "
            "again with this kerasnmt (kerasnmt export --format keras-hub)")
    for name, expected in PRESET_CLASSES.items():
        config = _read_json(directory, name)
        found = config.get("registered_name") if isinstance(config, dict) else None
        if found != expected:
            raise ValueError(f"{os.path.join(directory, name)}: holds {found}, expected "
                             f"{expected} (a preset of kerasnmt export --format keras-hub)")


def load_preset(directory):
    """The `TranslatorSeq2SeqLM` of a preset `directory`, checked first (`check_preset`),
    then loaded by `keras_hub.models.Seq2SeqLM.from_preset`."""
    check_preset(directory)
    return keras_hub.models.Seq2SeqLM.from_preset(os.fspath(directory))


def _preset_config(layer):
    """`layer`'s Keras config as keras-hub writes it in a preset (no compile or build
    config)."""
    config = keras.saving.serialize_keras_object(layer)
    config.pop("compile_config", None)
    config.pop("build_config", None)
    return config


def _write_json(directory, name, value):
    with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        json.dump(value, file, indent=4)
        file.write("\n")


def _read_json(directory, name):
    path = os.path.join(directory, name)
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
