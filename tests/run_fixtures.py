"""A tiny parallel corpus on disk and run configurations for it (training, export, CLI tests)."""

import yaml

from kerasnmt.config import load_config
from kerasnmt.runner.run_checkpoints import restore_translator
from tests.models.translator_fixtures import SOURCE_WORDS, SPECIALS, TARGET_WORDS, corpus


def write_corpus(directory, size=40, seed=0):
    """Writes train/val files and whitespace vocabularies of the reversal task of
    `tests.models.translator_fixtures` into `directory` (a `pathlib.Path`)."""
    sources, targets = corpus(size, seed=seed)
    files = {
        "train.src": sources,
        "train.tgt": targets,
        "val.src": sources[:6],
        "val.tgt": targets[:6],
        "vocab.src": SPECIALS + SOURCE_WORDS,
        "vocab.tgt": SPECIALS + TARGET_WORDS,
    }
    for name, lines in files.items():
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def tiny_run(**sections):
    """The configuration of a tiny model on `write_corpus`'s files (paths relative to the
    configuration file), with `sections` merged in, one level deep."""
    config = {
        "model_dir": "model",
        "data": {
            "source_vocabulary": "vocab.src",
            "target_vocabulary": "vocab.tgt",
            "train_features_file": "train.src",
            "train_labels_file": "train.tgt",
        },
        "model": {
            "num_layers": 1,
            "num_units": 16,
            "num_heads": 2,
            "ffn_inner_dim": 32,
            "maximum_relative_position": 4,
            "dropout": 0.0,
            "attention_dropout": 0.0,
            "ffn_dropout": 0.0,
        },
        "params": {"learning_rate": 0.01, "decay_type": None, "beam_width": 2,
                   "maximum_decoding_length": 20},
        "train": {
            "batch_size": 8,
            "batch_type": "examples",
            "effective_batch_size": None,
            "sample_buffer_size": 0,
            "seed": 1,
            # Also the exports' maximum source length: few source widths to compile.
            "maximum_features_length": 8,
            "maximum_labels_length": 8,
        },
    }
    for section, values in sections.items():
        if isinstance(values, dict):
            config.setdefault(section, {}).update(values)
        else:
            config[section] = values
    return config


def write_config(directory, config, name="run.yml"):
    path = directory / name
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def checkpoint_weights(config_path, checkpoint):
    """The trainable weights a checkpoint gives the model of a configuration."""
    translator, _ = restore_translator(load_config(config_path), checkpoint)
    return [weight.numpy() for weight in translator.trainable_weights]
