"""Write a `Translator` as a keras-hub preset directory.

The directory has keras-hub's preset layout (`kerasnmt.models.preset_layout`), so
`keras_hub.models.Seq2SeqLM.from_preset(directory)` loads it in any process that has
imported kerasnmt, as a `kerasnmt.models.TranslatorSeq2SeqLM` whose `generate` translates
with the decoding options given here.

Examples:
    >>> import os, tempfile
    >>> from kerasnmt.decoding import BeamSampler
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> from kerasnmt.models import Translator, TranslatorSeq2SeqLM
    >>> translator = Translator(
    ...     TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
    ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16)
    >>> preset = os.path.join(tempfile.mkdtemp(), "preset")
    >>> sampler = BeamSampler(beam_size=2, max_length=4)
    >>> _ = save_preset(translator, preset, sampler, jit_compile=False)
    >>> sorted(os.listdir(preset))
    ['config.json', 'metadata.json', 'model.weights.h5', 'preprocessor.json', 'task.json']
    >>> seq2seq_lm = TranslatorSeq2SeqLM.from_preset(preset)
    >>> seq2seq_lm.generate(["a b"]) == translator.translate(["a b"], sampler, jit_compile=False)
    True
"""

import json
import os

import keras
from keras_hub.src.utils import preset_utils

from kerasnmt.decoding.precision import float32_translator
from kerasnmt.export.directories import check_output, write_atomically
from kerasnmt.models.preset_layout import KERASNMT_VERSION, PRESET_FORMAT, read_json
from kerasnmt.models.translator_seq2seq_lm import TranslatorSeq2SeqLM


def save_preset(translator, directory, sampler=None, force=False, **translate_options):
    """Writes `translator` as a keras-hub preset `directory` (see the module docstring).

    The weights are written in float32, whatever the model's dtype policy, as the
    SavedModel export decodes. The directory is written under a temporary name and renamed:
    an interrupted write leaves an existing one as it was.

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
        ValueError: a `directory` in the way, or quantized layers (nothing is written).
    """
    check_output(directory, force)
    quantized = translator.quantized_layers()
    if quantized:
        raise ValueError(f"{translator.name}: layers {quantized[:3]} are quantized; a keras-hub "
                         "preset holds float weights: save the model before quantizing it")
    seq2seq_lm = TranslatorSeq2SeqLM.from_translator(
        float32_translator(translator), sampler, **translate_options)

    def write(temporary):
        preset_utils.get_preset_saver(temporary).save_backbone(seq2seq_lm.backbone)
        _write_json(temporary, preset_utils.TASK_CONFIG_FILE, _preset_config(seq2seq_lm))
        _write_json(temporary, preset_utils.PREPROCESSOR_CONFIG_FILE,
                    _preset_config(seq2seq_lm.preprocessor))
        metadata = read_json(temporary, preset_utils.METADATA_FILE)
        metadata.update(kerasnmt_version=KERASNMT_VERSION, kerasnmt_preset_format=PRESET_FORMAT)
        _write_json(temporary, preset_utils.METADATA_FILE, metadata)

    write_atomically(write, os.fspath(directory))
    return directory


def _preset_config(layer):
    """`layer`'s Keras config as keras-hub writes it in a preset (no compile or build
    config)."""
    return _without_keys(keras.saving.serialize_keras_object(layer),
                         ("compile_config", "build_config"))


def _without_keys(value, keys):
    """`value` (nested dicts and lists) without the dict entries of `keys`, at any depth."""
    if isinstance(value, dict):
        return {key: _without_keys(item, keys) for key, item in value.items()
                if key not in keys}
    if isinstance(value, list):
        return [_without_keys(item, keys) for item in value]
    return value


def _write_json(directory, name, value):
    with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        json.dump(value, file, indent=4)
        file.write("\n")
