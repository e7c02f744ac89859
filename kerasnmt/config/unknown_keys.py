"""What to tell about a key the schema does not have: its kerasnmt name, that it is an
OpenNMT-tf option kerasnmt lacks, or the key it most resembles.

Examples:
    >>> unknown_key_message("train_steps", "train.train_steps", {})
    'train.train_steps: unknown key (kerasnmt calls it train.max_step)'
"""

import difflib

from kerasnmt.config.schema import SCHEMA, walk


# Keys that OpenNMT-tf 1.x used, or that OpenNMT-tf spells differently from kerasnmt.
_RENAMED_KEYS = {
    "source_words_vocabulary": "data.source_vocabulary",
    "target_words_vocabulary": "data.target_vocabulary",
    "source_tokenization": "data.source_sentencepiece",
    "target_tokenization": "data.target_sentencepiece",
    "maximum_iterations": "params.maximum_decoding_length",
    "train_steps": "train.max_step",
    "bucket_width": "length_bucket_width",
    "external_evaluators": "eval.scorers",
    "scale": "params.learning_rate",
}

# OpenNMT-tf options kerasnmt reads nowhere, by path: translations are grouped by source
# width (kerasnmt.decoding.widths), not by these buckets.
_BUCKET_KEYS_UNUSED = {"eval.length_bucket_width", "infer.length_bucket_width"}

# OpenNMT-tf options that kerasnmt does not have.
_OPENNMT_TF_ONLY = {
    "average_loss_in_time", "regularization", "freeze_layers", "contrastive_learning",
    "decoding_noise", "example_weights", "export_vocabulary_assets", "source_embedding",
    "target_embedding", "sequence_controls", "single_pass", "export_format",
    "num_threads",
}


def unknown_key_message(key, path, section):
    """The error for `key`, at key path `path`, which `section` (a schema mapping) lacks."""
    if path in _BUCKET_KEYS_UNUSED:
        return (f"{path}: an OpenNMT-tf option kerasnmt does not use (translations are "
                "grouped by source width, see docs/decoding.md); remove it")
    if key in _RENAMED_KEYS:
        return f"{path}: unknown key (kerasnmt calls it {_RENAMED_KEYS[key]})"
    if key in _OPENNMT_TF_ONLY:
        return f"{path}: an OpenNMT-tf option that kerasnmt does not have"
    elsewhere = [
        option_path for option_path, _ in walk(SCHEMA) if option_path.split(".")[-1] == key
    ]
    if elsewhere:
        return f"{path}: unknown key here (did you mean {' or '.join(elsewhere)}?)"
    close = difflib.get_close_matches(str(key), [str(k) for k in section], n=1, cutoff=0.6)
    if close:
        prefix = path.rsplit(".", 1)[0] + "." if "." in path else ""
        return f"{path}: unknown key (did you mean {prefix}{close[0]}?)"
    return f"{path}: unknown key"
