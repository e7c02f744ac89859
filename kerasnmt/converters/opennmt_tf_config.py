"""An OpenNMT-tf 2.x run configuration, read as `onmt-main` reads it and turned into the
keys of a kerasnmt run configuration.

Paths are resolved from the working directory, as `onmt-main` resolves them. The
`params`, `train`, `eval` and `infer` keys that kerasnmt has are carried over; where a key
is absent, OpenNMT-tf's own default is written where kerasnmt's differs
(`OPENNMT_TF_DEFAULTS`), so that the converted run trains and decodes as the OpenNMT-tf
one did. Keys kerasnmt does not have are left out and listed. The tokenizations are read
into SentencePiece models or whitespace splitting (`tokenizer_models`); any other is
refused.
"""

import json
import os

import yaml

from kerasnmt.config import default_config
from kerasnmt.converters.conversion_error import ConversionError

# OpenNMT-tf 2.32's defaults (`Runner`'s fallback configuration and the `params.get`
# defaults of its model and decoding code) where kerasnmt's default differs.
OPENNMT_TF_DEFAULTS = {
    "params": {"optimizer": "Adam", "decay_type": None, "label_smoothing": 0.0,
               "beam_width": 1, "maximum_decoding_length": 250},
    "train": {"batch_type": "examples", "length_bucket_width": 2,
              "sample_buffer_size": 500000, "effective_batch_size": None,
              "maximum_features_length": None, "maximum_labels_length": None,
              "average_last_checkpoints": 0, "max_step": None},
    "infer": {"batch_size": 16},
}
# OpenNMT-tf's optimizers as kerasnmt names them: LazyAdam updates only the embedding rows
# of a batch's tokens, an optimization of Adam's update kerasnmt does not have.
_OPTIMIZERS = {"LazyAdam": "Adam"}
# The data files kerasnmt reads, carried over when they exist.
_DATA_FILES = ("train_features_file", "train_labels_file", "train_alignments",
               "eval_features_file", "eval_labels_file")
_CARRIED_DATA_KEYS = _DATA_FILES + ("train_files_weights",)
# Read by the converter itself (vocabularies, tokenizations, source `</s>`).
_DATA_KEYS_READ = ("source_vocabulary", "target_vocabulary", "source_tokenization",
                   "target_tokenization", "source_sequence_controls")
_SECTIONS = ("params", "train", "eval", "infer")
# The external evaluators of OpenNMT-tf that kerasnmt's `eval.scorers` has.
_SCORERS = ("bleu", "chrf")
# OpenNMT-tf key -> kerasnmt key, within a section.
_RENAMED = {("eval", "external_evaluators"): "scorers"}


def read_opennmt_tf_config(path):
    """The YAML run configuration at `path`, as a dict.

    Raises:
        ConversionError: the file is missing, is not YAML or is not a mapping.

    Examples:
        >>> read_opennmt_tf_config("tests/fixtures/opennmt_tf/absolute/config.yml")["model_dir"]
        'checkpoint'
    """
    try:
        with open(path, encoding="utf-8") as file:
            config = yaml.safe_load(file)
    except (OSError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: cannot read the OpenNMT-tf configuration ({error})")
    except yaml.YAMLError as error:
        raise ConversionError(f"{path}: not valid YAML ({' '.join(str(error).split())})")
    if not isinstance(config, dict) or not isinstance(config.get("data", {}), dict):
        raise ConversionError(f"{path}: expected an OpenNMT-tf run configuration (a mapping "
                              "with a data section)")
    return config


def data_path(config, key, config_path, required=True):
    """The absolute path of `data.<key>`, resolved from the working directory as
    `onmt-main` resolves it; None when it is absent and not `required`.

    Raises:
        ConversionError: a required key absent, or a file that does not exist.
    """
    value = config.get("data", {}).get(key)
    if value is None:
        if required:
            raise ConversionError(f"{config_path}: data.{key} is not set")
        return None
    path = os.path.abspath(str(value))
    if not os.path.isfile(path):
        raise ConversionError(f"{config_path}: data.{key}: no such file {path} (OpenNMT-tf "
                              "paths are resolved from the working directory: run the "
                              "conversion where onmt-main ran)")
    return path


def tokenizer_models(config, config_path):
    """The SentencePiece model of each side (None: whitespace splitting) and the sampling
    alpha of both, read from `data.source_tokenization` and `data.target_tokenization`.

    kerasnmt reproduces OpenNMT-tf's `SpaceTokenizer` (and no tokenization) and its
    in-graph `SentencePieceTokenizer` (`model`; `nbest_size: -1` with `alpha` samples in
    training, as kerasnmt's `data.sentencepiece_sampling_alpha`).

    Returns:
        `({"source": path or None, "target": path or None}, alpha or None)`.

    Raises:
        ConversionError: a tokenizer kerasnmt cannot reproduce (the OpenNMT Tokenizer,
            characters, SentencePiece n-best sampling), naming the key.
    """
    models, alphas = {}, set()
    for side in ("source", "target"):
        key = f"data.{side}_tokenization"
        tokenization = _tokenization(config.get("data", {}).get(f"{side}_tokenization"),
                                     key, config_path)
        kind = tokenization.get("type", "OpenNMTTokenizer") if tokenization else None
        params = tokenization.get("params", {}) if tokenization else {}
        if kind in (None, "SpaceTokenizer"):
            models[side] = None
        elif kind == "SentencePieceTokenizer" and isinstance(params, dict) and "model" in params:
            models[side], alpha = _sentencepiece(params, key, config_path)
            alphas.add(alpha)
        else:
            raise ConversionError(
                f"{config_path}: {key}: the {kind} tokenizer is not one kerasnmt reproduces "
                "(it tokenizes with SentencePieceTokenizer {model: ...} or SpaceTokenizer); "
                "retokenize the data with one of them, or tokenize outside the model")
    alphas.discard(None)
    if len(alphas) > 1:
        raise ConversionError(f"{config_path}: data.source_tokenization and "
                              "data.target_tokenization sample with different alphas; "
                              "kerasnmt has one data.sentencepiece_sampling_alpha")
    return models, (alphas.pop() if alphas else None)


def _tokenization(value, key, config_path):
    """A tokenization configuration as a dict (a YAML file's path or a JSON string read as
    `onmt-main` reads them), or None."""
    if not value:
        return None
    if isinstance(value, str):
        if os.path.isfile(value):
            with open(value, encoding="utf-8") as file:
                value = yaml.safe_load(file)
        else:
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise ConversionError(f"{config_path}: {key}: {value} is neither a file nor "
                                      "a JSON tokenization configuration") from None
    if not isinstance(value, dict):
        raise ConversionError(f"{config_path}: {key}: expected a tokenization "
                              f"configuration (type and params), got {value!r}")
    return value


def _sentencepiece(params, key, config_path):
    unknown = sorted(set(params) - {"model", "nbest_size", "alpha"})
    nbest_size = params.get("nbest_size", 0)
    if unknown or nbest_size not in (0, 1, -1):
        reason = (f"its option {', '.join(unknown)}" if unknown
                  else f"nbest_size {nbest_size} (sampling among the n best)")
        raise ConversionError(f"{config_path}: {key}: kerasnmt cannot reproduce {reason}; "
                              "it samples over all segmentations (nbest_size: -1) or none")
    model = os.path.abspath(str(params["model"]))
    if not os.path.isfile(model):
        raise ConversionError(f"{config_path}: {key}.params.model: no such file {model}")
    return model, (params.get("alpha", 1.0) if nbest_size == -1 else None)


def source_eos(config, config_path):
    """Whether the sources end with `</s>` (`data.source_sequence_controls: {end: true}`,
    kerasnmt's `model.source_eos`).

    Raises:
        ConversionError: `start: true`, a `<s>` kerasnmt never puts before a source.
    """
    controls = config.get("data", {}).get("source_sequence_controls") or {}
    if controls.get("start"):
        raise ConversionError(f"{config_path}: data.source_sequence_controls.start: "
                              "kerasnmt does not start sources with <s>")
    return bool(controls.get("end"))


def carried_keys(config, config_path):
    """The kerasnmt `data` file keys and `params`, `train`, `eval`, `infer` sections of an
    OpenNMT-tf configuration.

    Returns:
        `(sections, left_out)`: a dict of kerasnmt sections, and one line for each key left
        out (with why).

    Examples:
        >>> sections, left_out = carried_keys({"params": {"optimizer": "LazyAdam",
        ...     "average_loss_in_time": True}, "train": {"batch_size": 64}}, "run.yml")
        >>> sections["params"]["optimizer"], sections["train"]["batch_type"]
        ('Adam', 'examples')
        >>> left_out
        ['params.average_loss_in_time (kerasnmt does not have it)']
    """
    sections = {"data": {}}
    left_out = [f"{key} (kerasnmt does not have it)" for key in config
                if key not in ("model_dir", "data") + _SECTIONS]
    for key, value in config.get("data", {}).items():
        if key in _CARRIED_DATA_KEYS:
            paths = value if isinstance(value, list) else [value]
            if key in _DATA_FILES and not all(os.path.isfile(str(path)) for path in paths):
                left_out.append(f"data.{key} (no such file from here)")
                continue
            sections["data"][key] = value if key not in _DATA_FILES else (
                [os.path.abspath(str(path)) for path in paths] if isinstance(value, list)
                else os.path.abspath(str(value)))
        elif key not in _DATA_KEYS_READ:
            left_out.append(f"data.{key} (kerasnmt does not have it)")
    kerasnmt_keys = default_config()
    for section in _SECTIONS:
        values = config.get(section) or {}
        if not isinstance(values, dict):
            raise ConversionError(f"{config_path}: {section}: expected a mapping, got {values!r}")
        carried = dict(OPENNMT_TF_DEFAULTS.get(section, {}))
        for key, value in values.items():
            kerasnmt_key = _RENAMED.get((section, key), key)
            if kerasnmt_key in kerasnmt_keys[section]:
                carried[kerasnmt_key] = value
            else:
                left_out.append(f"{section}.{key} (kerasnmt does not have it)")
        sections[section] = carried
    params = sections["params"]
    params["optimizer"] = _OPTIMIZERS.get(params["optimizer"], params["optimizer"])
    # OpenNMT-tf's only decoding length limit: a constant one.
    params["decoding_length_ratio"] = 0.0
    params["decoding_length_offset"] = params["maximum_decoding_length"]
    if "n_best" in sections["infer"]:
        params.setdefault("num_hypotheses", sections["infer"]["n_best"])
    if "scorers" in sections["eval"]:
        scorers = sections["eval"]["scorers"]
        scorers = [scorers] if isinstance(scorers, str) else list(scorers)
        known = [name.lower() for name in scorers if str(name).lower() in _SCORERS]
        left_out.extend(f"eval.external_evaluators: {name} (kerasnmt scores bleu and chrf)"
                        for name in scorers if str(name).lower() not in _SCORERS)
        sections["eval"]["scorers"] = known
    return sections, left_out
