"""The `params` section of the run configuration: optimizer, learning rate schedule, loss
and decoding options, with the rules of the optimizer's arguments. The decoding options'
defaults are those of `BeamSampler`, `Translator.translate` and `LexicalShortlist`; the
loss's those of `Translator`; the optimizer's those of `kerasnmt.training.optimizers`.

Examples:
    >>> PARAMS_SECTION["beam_width"].default
    4
    >>> PARAMS_SECTION["length_normalization"].kind.describe()
    'one of gnmt, power'
"""

import difflib
import inspect

from kerasnmt.config.option_types import (
    Boolean,
    Choice,
    Integer,
    Mapping,
    Number,
    Option,
    Path,
    got,
)
from kerasnmt.data.lexical_shortlist import DEFAULT_WIDTH as DEFAULT_SHORTLIST_WIDTH
from kerasnmt.decoding.beam_sampler import FINISHED_HYPOTHESES, SAMPLER_DEFAULTS
from kerasnmt.decoding.search.scoring import LENGTH_NORMALIZATIONS
from kerasnmt.decoding.widths import DEFAULT_LENGTH_OFFSET, DEFAULT_LENGTH_RATIO
from kerasnmt.models.translator import LOSS_DEFAULTS
from kerasnmt.training.losses import GUIDED_ALIGNMENT_TYPES
from kerasnmt.training.optimizers import (
    DECAY_TYPES,
    DEFAULT_DECAY_TYPE,
    DEFAULT_LEARNING_RATE,
    DEFAULT_OPTIMIZER,
    DEFAULT_OPTIMIZER_ARGUMENTS,
    DEFAULT_WARMUP_STEPS,
    optimizer_class,
    optimizer_names,
)


class OptimizerName(Choice):
    """Any optimizer class of `keras.optimizers`, looked up when a configuration is read."""

    def __init__(self):
        self.nullable = False
        self.case_sensitive = True

    @property
    def choices(self):
        return optimizer_names()

    def _describe(self):
        return "the name of an optimizer class in keras.optimizers"


PARAMS_SECTION = {
    "optimizer": Option(
        DEFAULT_OPTIMIZER,
        OptimizerName(),
        "Optimizer class name in `keras.optimizers` (`Adam`, `AdamW`, `Adafactor`, ...). "
        "`Adam` runs as `kerasnmt.training.FusedAdam`: the same update, one TensorFlow "
        "operation a variable.",
    ),
    "optimizer_params": Option(
        DEFAULT_OPTIMIZER_ARGUMENTS,
        Mapping(),
        "Keyword arguments of the optimizer (for example `beta_2`, `epsilon`, `clipnorm`, "
        "`weight_decay`), merged onto those of the default that the optimizer takes.",
    ),
    "learning_rate": Option(
        DEFAULT_LEARNING_RATE,
        Number(minimum=0, closed=(False, True)),
        "The learning rate; with `decay_type: NoamDecay` it is the scale of the schedule, "
        "with `decay_type: InvSqrtDecay` its peak.",
    ),
    "decay_type": Option(
        DEFAULT_DECAY_TYPE,
        Choice(*DECAY_TYPES, None),
        "Learning rate schedule. `NoamDecay`: `learning_rate * model_dim ** -0.5 * "
        "min(step ** -0.5, step * warmup_steps ** -1.5)` with `step` counted from 1. "
        "`InvSqrtDecay`: `initial_learning_rate + (learning_rate - initial_learning_rate) "
        "* step / warmup_steps` up to `step = warmup_steps`, then "
        "`learning_rate * sqrt(warmup_steps / step)`, with `step` counted from 1. "
        "Null: a constant `learning_rate`.",
    ),
    "decay_params": {
        "model_dim": Option(
            None,
            Integer(minimum=1, nullable=True),
            "`model_dim` of `NoamDecay`; null takes `model.num_units`.",
        ),
        "warmup_steps": Option(
            DEFAULT_WARMUP_STEPS,
            Integer(minimum=1),
            "`warmup_steps` of `NoamDecay` or `InvSqrtDecay`.",
        ),
        "initial_learning_rate": Option(
            0.0,
            Number(minimum=0),
            "`initial_learning_rate` of `InvSqrtDecay`: where its linear warmup starts.",
        ),
    },
    "start_decay_steps": Option(
        0,
        Integer(minimum=0),
        "The schedule stays at its first step for this many weight updates "
        "(OpenNMT-tf's `start_decay_steps`).",
    ),
    "decay_step_duration": Option(
        1,
        Integer(minimum=1),
        "Weight updates that make one step of the schedule: the schedule's step is "
        "`max(update - start_decay_steps, 0) // decay_step_duration`.",
    ),
    "minimum_learning_rate": Option(
        0.0, Number(minimum=0), "The schedule's learning rate never goes below this."
    ),
    "moving_average_decay": Option(
        None,
        Number(0, 1, closed=(False, False), nullable=True),
        "Keep an exponential moving average of the weights with this decay (e.g. 0.9999, "
        "lowered early in training as in OpenNMT-tf): checkpoints, evaluations, exports "
        "and the trained model hold the average.",
    ),
    "label_smoothing": Option(
        LOSS_DEFAULTS["label_smoothing"],
        Number(0, 1, closed=(True, False)),
        "Label smoothing of the cross-entropy.",
    ),
    "guided_alignment_type": Option(
        LOSS_DEFAULTS["guided_alignment_type"],
        Choice(*GUIDED_ALIGNMENT_TYPES, None),
        "Guided alignment loss on the first head of the last decoder layer's "
        "cross-attention: cross-entropy (`ce`) or mean squared error (`mse`); needs "
        "`data.train_alignments`.",
    ),
    "guided_alignment_weight": Option(
        LOSS_DEFAULTS["guided_alignment_weight"],
        Number(minimum=0),
        "Weight of the guided alignment loss.",
    ),
    "beam_width": Option(
        SAMPLER_DEFAULTS["beam_size"], Integer(minimum=1), "Beam size; 1 is greedy search."
    ),
    "length_penalty": Option(
        SAMPLER_DEFAULTS["length_penalty"],
        Number(minimum=0),
        "Length penalty `alpha`: scores are divided by `((5 + length) / 6) ** alpha` (GNMT), "
        "or by `length ** alpha` with `length_normalization: power`.",
    ),
    "length_normalization": Option(
        SAMPLER_DEFAULTS["length_normalization"],
        Choice(*LENGTH_NORMALIZATIONS),
        "Divisor of the length penalty: `gnmt` (OpenNMT-tf's `((5 + length) / 6) ** "
        "alpha`) or `power` (`length ** alpha`: fairseq's `--lenpen`, Marian's "
        "`--normalize`, CTranslate2's `length_penalty`; `length` counts `</s>`).",
    ),
    "freeze_finished_scores": Option(
        SAMPLER_DEFAULTS["freeze_finished_scores"],
        Boolean(),
        "Score a finished hypothesis with its own length from the step it emits `</s>` "
        "(as fairseq and CTranslate2; `BeamSampler(freeze_finished_scores=True)`). "
        "OpenNMT-tf (`false`) ranks it with its length plus one.",
    ),
    "finished_hypotheses": Option(
        SAMPLER_DEFAULTS["finished_hypotheses"],
        Choice(*FINISHED_HYPOTHESES),
        "Where the beam search's finished hypotheses go: `in_beam` (OpenNMT-tf: they keep "
        "their slots, re-ranked each step) or `set_aside` (fairseq and CTranslate2: they "
        "leave the beam, which is refilled from `2 * beam_width` candidates, and a "
        "sentence ends at `beam_width` finished hypotheses; "
        "`BeamSampler(finished_hypotheses=\"set_aside\")`, with `early_exit: false` and "
        "`sampling_topk: 1`).",
    ),
    "coverage_penalty": Option(
        SAMPLER_DEFAULTS["coverage_penalty"],
        Number(minimum=0),
        "GNMT coverage penalty `beta`: adds `beta * sum(log(min(attention_sum, 1)))` over "
        "the source positions.",
    ),
    "sampling_topk": Option(
        SAMPLER_DEFAULTS["top_k"],
        Integer(minimum=0),
        "1 searches deterministically; k > 1 samples each token among the k most likely; "
        "0 samples from the whole distribution.",
    ),
    "sampling_temperature": Option(
        SAMPLER_DEFAULTS["temperature"],
        Number(minimum=0, closed=(False, True)),
        "Logits are divided by this before sampling; higher is more random.",
    ),
    "num_hypotheses": Option(
        SAMPLER_DEFAULTS["n_best"],
        Integer(minimum=1),
        "Hypotheses a decode returns (the n-best list); at most `beam_width`.",
    ),
    "maximum_decoding_length": Option(
        SAMPLER_DEFAULTS["max_length"],
        Integer(minimum=1),
        "Maximum length of a translation, `</s>` excluded.",
    ),
    "decoding_length_ratio": Option(
        DEFAULT_LENGTH_RATIO,
        Number(minimum=0),
        "A translation of a sentence of n source tokens has at most `floor(ratio * n) + "
        "decoding_length_offset` tokens (fairseq's `max_len_a`).",
    ),
    "decoding_length_offset": Option(
        DEFAULT_LENGTH_OFFSET,
        Integer(minimum=1),
        "The offset of that limit (fairseq's `max_len_b`).",
    ),
    "minimum_decoding_length": Option(
        SAMPLER_DEFAULTS["min_length"],
        Integer(minimum=0),
        "Minimum length of a translation, `</s>` excluded.",
    ),
    "replace_unknown_target": Option(
        False,
        Boolean(),
        "Replace each unknown target token by the source token with the highest attention.",
    ),
    "compact_batch": Option(
        SAMPLER_DEFAULTS["compact_batch"],
        Boolean(),
        "Stop each sentence as soon as its hypotheses have finished and decode the "
        "unfinished ones in smaller batches (`BeamSampler(compact_batch=True)`; `translate` "
        "from a checkpoint streams the sentences through `batch_size` decoding slots): "
        "faster, and each result is the one of the sentence decoded alone. OpenNMT-tf "
        "(`false`) decodes a finished sentence on with its batch.",
    ),
    "early_exit": Option(
        SAMPLER_DEFAULTS["early_exit"],
        Boolean(),
        "Stop a batch's beam search once the `num_hypotheses` best hypotheses of every "
        "sentence have finished (`BeamSampler(early_exit=True)`; `--early-exit` of "
        "`export` and `translate` sets it too): often about twice as fast, the same "
        "results without penalties. OpenNMT-tf (`false`) runs until every hypothesis "
        "has finished.",
    ),
    "shortlist": Option(
        None,
        Path(),
        "Lexical shortlist (`kerasnmt build-shortlist`, CTranslate2's vmap format): "
        "decode each batch over the target tokens its source tokens may translate to, "
        "the probabilities normalized over them (Marian's lexical shortlist): faster, "
        "translations may differ. `null`: the whole target vocabulary.",
    ),
    "shortlist_width": Option(
        DEFAULT_SHORTLIST_WIDTH,
        Integer(minimum=3),
        "Target ids a batch is decoded over with `shortlist` (its shortlist padded to "
        "this, one compiled decoding for all); a batch whose shortlist is longer is "
        "decoded over the whole vocabulary.",
    ),
}

# The keys of the `BeamSampler` arguments that `decoding_option_problems` relates.
DECODING_OPTION_KEYS = {
    "beam_size": "params.beam_width",
    "n_best": "params.num_hypotheses",
    "min_length": "params.minimum_decoding_length",
    "max_length": "params.maximum_decoding_length",
    "top_k": "params.sampling_topk",
    "early_exit": "params.early_exit",
    "finished_hypotheses": "params.finished_hypotheses",
}

# Optimizer arguments that other keys set, or that would not do what they say.
_OPTIMIZER_ARGUMENTS_REFUSED = {
    "learning_rate": "set params.learning_rate instead",
    "gradient_accumulation_steps": "set train.effective_batch_size instead",
    **{
        name: "set params.moving_average_decay instead (with the optimizer's own, the "
        "checkpoints, evaluations and exports would hold the raw weights)"
        for name in ("use_ema", "ema_momentum", "ema_overwrite_frequency")
    },
}


def check_optimizer_params(params, error, given):
    """Reports the `params.optimizer_params` of `given` that the optimizer does not take,
    and drops the defaults it does not take (`beta_1` and `beta_2` for `SGD`)."""
    signature = inspect.signature(optimizer_class(params["optimizer"]).__init__)
    accepted = [
        name
        for name, parameter in signature.parameters.items()
        if name not in ("self", "name", *_OPTIMIZER_ARGUMENTS_REFUSED)
        and parameter.kind is not parameter.VAR_KEYWORD
    ]
    for name in list(params["optimizer_params"]):
        path = f"params.optimizer_params.{name}"
        if name not in given:
            if name not in accepted:
                del params["optimizer_params"][name]
        elif name in _OPTIMIZER_ARGUMENTS_REFUSED:
            error(path, _OPTIMIZER_ARGUMENTS_REFUSED[name])
        elif name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            error(
                path,
                f"not an argument of keras.optimizers.{params['optimizer']} "
                f"({hint}it takes {', '.join(accepted)})",
            )
        else:
            value = params["optimizer_params"][name]
            expected, matches = _argument_kind(signature.parameters[name].default)
            if not matches(value):
                error(path, f"expected {expected}, {got(value)}")


def _argument_kind(default):
    """(description, check) of the values an optimizer argument takes, from its default:
    true or false for a boolean, else a number (or null when the default is null)."""
    if isinstance(default, bool):
        return "true or false", lambda value: isinstance(value, bool)
    if isinstance(default, str):
        return "a string", lambda value: isinstance(value, str)

    def is_number(value):
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if default is None:
        return "a number or null", lambda value: value is None or is_number(value)
    return "a number", is_number

