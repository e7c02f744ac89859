"""The model that `translate` and `export` decode with: a run's checkpoint or a `.keras`
file, its sampler, and the checks of the options that choose them.

Examples:
    >>> check_model_arguments(config=None, checkpoint=None, model=None)
    Traceback (most recent call last):
    ...
    kerasnmt.runner.option_error.OptionError: give --config (a trained run) or --model (a .keras file)
    >>> decoding_sampler(None, n_best=2).get_config()["n_best"]
    2
"""

import os
import sys

import keras

from kerasnmt.decoding import BeamSampler, float32_translator
from kerasnmt.decoding.option_rules import decoding_option_problems
from kerasnmt.runner.option_error import OptionError
from kerasnmt.runner.run_checkpoints import restore_translator
from kerasnmt.runner.run_config import run_configuration
from kerasnmt.runner.run_model import MODEL_KEYS, build_sampler


def check_model_arguments(config, checkpoint, model):
    """Refuses a model chosen twice or not at all."""
    if not config and not model:
        raise OptionError("give --config (a trained run) or --model (a .keras file)")
    if checkpoint and (model or not config):
        raise OptionError("--checkpoint goes with --config, not with --model")


def load_model_for_decoding(config=None, checkpoint=None, model=None):
    """The `Translator` (and configuration, or None) that `config`/`checkpoint` or
    `model` name, in float32 whatever precision it trained in (as its export decodes:
    `kerasnmt.decoding.precision`)."""
    config = run_configuration(config, required=MODEL_KEYS) if config else None
    if model:
        if not os.path.isfile(model):
            raise OSError(f"{model}: no such file")
        translator = keras.saving.load_model(model, compile=False)
        print(f"Loaded {model}", file=sys.stderr)
    else:
        translator, checkpoint = restore_translator(config, checkpoint)
        print(f"Restored {checkpoint}", file=sys.stderr)
    return float32_translator(translator), config


def decoding_sampler(config, n_best, early_exit=False):
    """The `BeamSampler` of the configuration's decoding options (a width-4 beam without
    one), returning `n_best` hypotheses."""
    if config is None:
        return BeamSampler(n_best=n_best, early_exit=early_exit)
    sampler = build_sampler(config, n_best=n_best)
    if early_exit:
        sampler = BeamSampler.from_config(dict(sampler.get_config(), early_exit=True))
    return sampler


def check_n_best(n_best, config):
    """Refuses an `--n-best` that the configuration's beam cannot give."""
    if n_best and config:
        problems = decoding_option_problems(
            {"n_best": n_best, "beam_size": config["params"]["beam_width"]},
            {"n_best": "--n-best", "beam_size": "params.beam_width"})
        if problems:
            raise ValueError(problems["n_best"])
