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

`config_reference()` renders the schema below as the Markdown tables of
`docs/training.md`; `python -m kerasnmt.config` prints them.
"""

import copy
import dataclasses
import difflib
import inspect
import os
import re
from typing import Any

import keras
import yaml

from kerasnmt.data.batching import BATCH_TYPES
from kerasnmt.decoding.beam_sampler import FINISHED_HYPOTHESES
from kerasnmt.decoding.option_rules import decoding_option_problems
from kerasnmt.decoding.search.scoring import LENGTH_NORMALIZATIONS
from kerasnmt.models.transformer_backbone import (
    ARCHITECTURE_DEFAULTS,
    EMBEDDINGS_INITIALIZERS,
    SHARE_EMBEDDINGS,
)
from kerasnmt.training.losses import GUIDED_ALIGNMENT_TYPES


class ConfigError(ValueError):
    """Mistakes in a run configuration.

    Args:
        source: the configuration file (or a description of where the values came from).
        errors: one message a mistake, each starting with its key path.

    Examples:
        >>> error = ConfigError("run.yml", ["train.batch_size: expected an integer >= 1, got 0"])
        >>> print(error)
        run.yml: 1 error in the configuration:
          train.batch_size: expected an integer >= 1, got 0
    """

    def __init__(self, source, errors):
        self.source = source
        self.errors = list(errors)
        count = len(self.errors)
        lines = "\n".join(f"  {error}" for error in self.errors)
        super().__init__(
            f"{source}: {count} error{'s' if count != 1 else ''} in the configuration:\n{lines}"
        )


class _Invalid(Exception):
    """A value that does not fit its option; the message says what was expected."""


def _got(value):
    return f"got {value!r}" if not isinstance(value, bool) else f"got {str(value).lower()}"


# ---------------------------------------------------------------------------------------
# Kinds of values. Each has `describe()` (for the docs and the error messages) and
# `check(value, base_dir)`, which returns the value to keep or raises _Invalid.
# ---------------------------------------------------------------------------------------

# PyYAML follows YAML 1.1, where `1e-4` (no decimal point) is a string, not a float.
_SCIENTIFIC_NOTATION = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


class _Kind:
    nullable = False

    def describe(self):
        text = self._describe()
        return f"{text}, or null" if self.nullable else text

    def check(self, value, base_dir):
        if value is None:
            if self.nullable:
                return None
            raise _Invalid(f"expected {self.describe()}, got null")
        return self._check(value, base_dir)


class _Integer(_Kind):
    def __init__(self, minimum=None, nullable=False):
        self.minimum = minimum
        self.nullable = nullable

    def _describe(self):
        return "an integer" if self.minimum is None else f"an integer >= {self.minimum}"

    def _check(self, value, base_dir):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        if self.minimum is not None and value < self.minimum:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        return value


class _Number(_Kind):
    """A float in a range; `closed` says which ends belong to it."""

    def __init__(self, minimum=None, maximum=None, closed=(True, True), nullable=False):
        self.minimum = minimum
        self.maximum = maximum
        self.closed = closed
        self.nullable = nullable

    def _describe(self):
        if self.minimum is not None and self.maximum is not None:
            left = "[" if self.closed[0] else "("
            right = "]" if self.closed[1] else ")"
            return f"a number in {left}{self.minimum}, {self.maximum}{right}"
        if self.minimum is not None:
            return f"a number {'>=' if self.closed[0] else '>'} {self.minimum}"
        return "a number"

    def _check(self, value, base_dir):
        if isinstance(value, str) and _SCIENTIFIC_NOTATION.match(value.strip()):
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        too_small = self.minimum is not None and (
            value < self.minimum or (value == self.minimum and not self.closed[0])
        )
        too_large = self.maximum is not None and (
            value > self.maximum or (value == self.maximum and not self.closed[1])
        )
        if too_small or too_large:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        return float(value)


class _Boolean(_Kind):
    def _describe(self):
        return "true or false"

    def _check(self, value, base_dir):
        if not isinstance(value, bool):
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        return value


class _Choice(_Kind):
    """One of a few strings; `None` among the choices makes the option nullable."""

    def __init__(self, *choices, case_sensitive=True):
        self.choices = [choice for choice in choices if choice is not None]
        self.nullable = None in choices
        self.case_sensitive = case_sensitive

    def _describe(self):
        return "one of " + ", ".join(self.choices)

    def _check(self, value, base_dir):
        if isinstance(value, str):
            for choice in self.choices:
                if value == choice or (not self.case_sensitive and value.lower() == choice):
                    return choice
        message = f"expected {self.describe()}, {_got(value)}"
        if isinstance(value, str):
            by_lowercase = {choice.lower(): choice for choice in self.choices}
            close = difflib.get_close_matches(value.lower(), by_lowercase, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {by_lowercase[close[0]]!r}?)"
        raise _Invalid(message)


class _Text(_Kind):
    """A non-empty string, or null."""

    nullable = True

    def _describe(self):
        return "a string"

    def _check(self, value, base_dir):
        if not isinstance(value, str) or not value:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        return value


class _LanguageCode(_Kind):
    """A language code as the Moses scripts take it (`-l de`): 2 or 3 lowercase letters
    (`kerasnmt.evaluation.check_moses_language`)."""

    def _describe(self):
        return "a language code of 2 or 3 lowercase letters (en, de, fr, cs, ...)"

    def _check(self, value, base_dir):
        from kerasnmt.evaluation import check_moses_language  # Imported when checked.

        if isinstance(value, bool):  # YAML 1.1 reads an unquoted `no` (Norwegian) as false.
            raise _Invalid(f"expected {self.describe()}, {_got(value)} (quote the code: \"no\")")
        try:
            return check_moses_language(value)
        except ValueError:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}") from None


class _ChoiceList(_Choice):
    """One of the choices or a list of them; kept as a list."""

    def _describe(self):
        return "one or a list of " + ", ".join(self.choices)

    def _check(self, value, base_dir):
        checked = []
        for item in value if isinstance(value, list) else [value]:
            checked.append(super()._check(item, base_dir))
        return checked


def _resolve(path, base_dir):
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(path)))


class _Path(_Kind):
    """A file (or, with `directory=True`, a directory that may not exist yet)."""

    nullable = True

    def __init__(self, directory=False):
        self.directory = directory

    def _describe(self):
        return "a directory path" if self.directory else "a path to an existing file"

    def _check(self, value, base_dir):
        if not isinstance(value, str) or not value:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        path = _resolve(value, base_dir)
        if self.directory:
            if os.path.exists(path) and not os.path.isdir(path):
                raise _Invalid(f"{path} exists and is not a directory")
        elif not os.path.isfile(path):
            where = "" if os.path.isabs(os.path.expanduser(value)) else f" (relative to {base_dir})"
            raise _Invalid(f"file not found: {path}{where}")
        return path


class _PathList(_Path):
    """One existing file or a list of them (several training corpora); kept as a list."""

    def _describe(self):
        return "a path to an existing file, or a list of them"

    def _check(self, value, base_dir):
        values = value if isinstance(value, list) else [value]
        if not values:
            raise _Invalid(f"expected {self.describe()}, got an empty list")
        paths, problems = [], []
        for index, item in enumerate(values):
            try:
                paths.append(super()._check(item, base_dir))
            except _Invalid as error:
                problems.append(f"[{index}] {error}" if isinstance(value, list) else str(error))
        if problems:
            raise _Invalid("; ".join(problems))
        return paths


class _NumberList(_Kind):
    nullable = True

    def _describe(self):
        return "a list of numbers > 0"

    def _check(self, value, base_dir):
        positive = _Number(minimum=0, closed=(False, True))
        if not isinstance(value, list) or not value:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        try:
            return [positive.check(item, base_dir) for item in value]
        except _Invalid:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}") from None


class _Layers(_Kind):
    def _describe(self):
        return "an integer >= 1, or a list [encoder_layers, decoder_layers]"

    def _check(self, value, base_dir):
        one = _Integer(minimum=1)
        try:
            if isinstance(value, list) and len(value) == 2:
                return [one.check(item, base_dir) for item in value]
            return one.check(value, base_dir)
        except _Invalid:
            raise _Invalid(f"expected {self.describe()}, {_got(value)}") from None


class _Mapping(_Kind):
    """Free-form keyword arguments with scalar values (checked against their use later)."""

    def _describe(self):
        return "a mapping of names to values"

    def _check(self, value, base_dir):
        if not isinstance(value, dict):
            raise _Invalid(f"expected {self.describe()}, {_got(value)}")
        for name, item in value.items():
            if not isinstance(name, str) or isinstance(item, (dict, list)):
                raise _Invalid(f"expected {self.describe()}, got {name!r}: {item!r}")
        return dict(value)


def _keras_optimizer_names():
    """The optimizer classes that `keras.optimizers` offers, by name."""
    wrappers = ("LossScaleOptimizer", "MultiOptimizer", "Optimizer")
    return sorted(
        name
        for name, value in vars(keras.optimizers).items()
        if inspect.isclass(value)
        and issubclass(value, keras.optimizers.Optimizer)
        and name not in wrappers
    )


class _OptimizerName(_Choice):
    """Any optimizer class of `keras.optimizers`, looked up when a configuration is read."""

    def __init__(self):
        self.nullable = False
        self.case_sensitive = True

    @property
    def choices(self):
        return _keras_optimizer_names()

    def _describe(self):
        return "the name of an optimizer class in keras.optimizers"


# ---------------------------------------------------------------------------------------
# The schema.
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Option:
    default: Any
    kind: _Kind
    doc: str


_SCHEMA = {
    "model_dir": _Option(
        None,
        _Path(directory=True),
        "Directory for checkpoints, TensorBoard logs and exports; created if it does not exist.",
    ),
    "data": {
        "source_vocabulary": _Option(
            None,
            _Path(),
            "Source vocabulary: one token a line, starting with `<blank>`, `<s>`, `</s>` "
            "(OpenNMT-tf format). Tokens not in it map to one unknown id.",
        ),
        "target_vocabulary": _Option(
            None, _Path(), "Target vocabulary, in the same format as `source_vocabulary`."
        ),
        "source_sentencepiece": _Option(
            None,
            _Path(),
            "SentencePiece model (`.model`) that splits the source text into pieces. "
            "When null, the source is split on whitespace.",
        ),
        "target_sentencepiece": _Option(
            None,
            _Path(),
            "SentencePiece model for the target text (it also detokenizes the translations). "
            "When null, the target is split on whitespace and joined with spaces.",
        ),
        "sentencepiece_sampling_alpha": _Option(
            None,
            _Number(0, 1, closed=(False, False), nullable=True),
            "In training only, sample a SentencePiece segmentation of each training "
            "sentence at each pass instead of the best one: BPE-dropout with this drop "
            "probability for BPE models, subword regularization with this smoothing for "
            "unigram models (as SentencePiece's `enable_sampling`, `nbest_size: -1`); "
            "e.g. 0.1. Validation, translation and exports segment deterministically. "
            "Needs a SentencePiece model; not with shards or alignments, which hold one "
            "segmentation.",
        ),
        "train_features_file": _Option(
            None,
            _PathList(),
            "Training source text, one sentence a line; a list of files for several corpora.",
        ),
        "train_labels_file": _Option(
            None,
            _PathList(),
            "Training target text, line-aligned with `train_features_file` (same number of files).",
        ),
        "train_shards": _Option(
            None,
            _PathList(),
            "Instead of `train_features_file` and `train_labels_file`: the index of shards "
            "written by `kerasnmt prepare` (`NAME.index.json`), or a list of them. Training "
            "then reads token ids, with no tokenization in the loop, and plans its batches "
            "from the stored lengths (a window of `train.sample_buffer_size` examples "
            "sorted by length and cut into batches, in shuffled order); a resumed run "
            "continues at the batch where it stopped.",
        ),
        "train_alignments": _Option(
            None,
            _PathList(),
            "Pharaoh alignments of the training pairs (`0-0 1-2 ...`, source-target token "
            "indices), one line a pair; needed by `params.guided_alignment_type`.",
        ),
        "train_files_weights": _Option(
            None,
            _NumberList(),
            "With several training corpora: one weight a corpus; batches sample the corpora "
            "in proportion to their weights.",
        ),
        "eval_features_file": _Option(None, _Path(), "Validation source text."),
        "eval_labels_file": _Option(
            None, _Path(), "Validation target text (the references of `eval.scorers`)."
        ),
    },
    "model": {
        "num_layers": _Option(
            ARCHITECTURE_DEFAULTS["num_layers"],
            _Layers(),
            "Number of encoder and decoder layers, or `[encoder_layers, decoder_layers]`.",
        ),
        "num_units": _Option(
            ARCHITECTURE_DEFAULTS["num_units"], _Integer(minimum=1), "Model width (embedding size)."
        ),
        "num_heads": _Option(
            ARCHITECTURE_DEFAULTS["num_heads"],
            _Integer(minimum=1),
            "Attention heads; must divide `num_units`.",
        ),
        "ffn_inner_dim": _Option(
            ARCHITECTURE_DEFAULTS["ffn_inner_dim"],
            _Integer(minimum=1),
            "Inner width of the feed-forward sublayers.",
        ),
        "dropout": _Option(
            ARCHITECTURE_DEFAULTS["dropout"],
            _Number(0, 1, closed=(True, False)),
            "Dropout on the embeddings and on the output of each sublayer.",
        ),
        "attention_dropout": _Option(
            ARCHITECTURE_DEFAULTS["attention_dropout"],
            _Number(0, 1, closed=(True, False)),
            "Dropout on the attention weights.",
        ),
        "ffn_dropout": _Option(
            ARCHITECTURE_DEFAULTS["ffn_dropout"],
            _Number(0, 1, closed=(True, False)),
            "Dropout after the activation of the feed-forward sublayers.",
        ),
        "maximum_relative_position": _Option(
            ARCHITECTURE_DEFAULTS["maximum_relative_position"],
            _Integer(minimum=1, nullable=True),
            "Clipping distance `k` of the relative position representations (Shaw et al., "
            "2018) in self-attention; null uses absolute sinusoidal position encodings instead.",
        ),
        "share_embeddings": _Option(
            ARCHITECTURE_DEFAULTS["share_embeddings"],
            _Choice(*SHARE_EMBEDDINGS),
            "Which embeddings share one matrix, as OpenNMT-tf's levels: `source_target_input` "
            "(source and target input embeddings), `target` (target input embeddings and "
            "output projection), `all` (all three; needs one joint vocabulary).",
        ),
        "pre_norm": _Option(
            ARCHITECTURE_DEFAULTS["pre_norm"],
            _Boolean(),
            "Layer normalization before each sublayer (true) or after the residual (false).",
        ),
        "embeddings_initializer": _Option(
            ARCHITECTURE_DEFAULTS["embeddings_initializer"],
            _Choice(*EMBEDDINGS_INITIALIZERS),
            "`glorot_uniform` (OpenNMT-tf's) or `scaled_normal`: `N(0, num_units ** -0.5)`, as "
            "fairseq and Tensor2Tensor initialize embeddings (unit variance once scaled by "
            "`sqrt(num_units)`, as the sinusoidal position encodings).",
        ),
        "source_eos": _Option(
            ARCHITECTURE_DEFAULTS["source_eos"],
            _Boolean(),
            "The encoder reads `</s>` after each source's tokens, as fairseq's sources end "
            "(CTranslate2's `add_source_eos`); added inside the model, after preprocessing.",
        ),
        "use_output_bias": _Option(
            ARCHITECTURE_DEFAULTS["use_output_bias"],
            _Boolean(),
            "Whether the output projection has a bias (fairseq's has none).",
        ),
        "query_key_value_init_gain": _Option(
            ARCHITECTURE_DEFAULTS["query_key_value_init_gain"],
            _Number(minimum=0, closed=(False, True)),
            "Gain of the Glorot-uniform initialization of the attention query, key and value "
            "kernels: fairseq's 0.7071 (`1 / sqrt(2)`) gives the separate projections the "
            "scale of one fused `[D, 3D]` kernel.",
        ),
        "layer_norm_epsilon": _Option(
            ARCHITECTURE_DEFAULTS["layer_norm_epsilon"],
            _Number(minimum=0, closed=(False, True)),
            "Epsilon of the layer normalizations: 1e-6, or OpenNMT-tf 2.x's 1e-3 (Keras' "
            "default), which `kerasnmt convert opennmt-tf` writes for a converted model.",
        ),
    },
    "params": {
        "optimizer": _Option(
            "Adam",
            _OptimizerName(),
            "Optimizer class name in `keras.optimizers` (`Adam`, `AdamW`, `Adafactor`, ...). "
            "`Adam` runs as `kerasnmt.training.FusedAdam`: the same update, one TensorFlow "
            "operation a variable.",
        ),
        "optimizer_params": _Option(
            {"beta_1": 0.9, "beta_2": 0.998},
            _Mapping(),
            "Keyword arguments of the optimizer (for example `beta_2`, `epsilon`, `clipnorm`, "
            "`weight_decay`), merged onto those of the default that the optimizer takes.",
        ),
        "learning_rate": _Option(
            2.0,
            _Number(minimum=0, closed=(False, True)),
            "The learning rate; with `decay_type: NoamDecay` it is the scale of the schedule, "
            "with `decay_type: InvSqrtDecay` its peak.",
        ),
        "decay_type": _Option(
            "NoamDecay",
            _Choice("NoamDecay", "InvSqrtDecay", None),
            "Learning rate schedule. `NoamDecay`: `learning_rate * model_dim ** -0.5 * "
            "min(step ** -0.5, step * warmup_steps ** -1.5)` with `step` counted from 1. "
            "`InvSqrtDecay`: `initial_learning_rate + (learning_rate - initial_learning_rate) "
            "* step / warmup_steps` up to `step = warmup_steps`, then "
            "`learning_rate * sqrt(warmup_steps / step)`, with `step` counted from 1. "
            "Null: a constant `learning_rate`.",
        ),
        "decay_params": {
            "model_dim": _Option(
                None,
                _Integer(minimum=1, nullable=True),
                "`model_dim` of `NoamDecay`; null takes `model.num_units`.",
            ),
            "warmup_steps": _Option(
                8000, _Integer(minimum=1), "`warmup_steps` of `NoamDecay` or `InvSqrtDecay`."
            ),
            "initial_learning_rate": _Option(
                0.0,
                _Number(minimum=0),
                "`initial_learning_rate` of `InvSqrtDecay`: where its linear warmup starts.",
            ),
        },
        "start_decay_steps": _Option(
            0,
            _Integer(minimum=0),
            "The schedule stays at its first step for this many weight updates "
            "(OpenNMT-tf's `start_decay_steps`).",
        ),
        "decay_step_duration": _Option(
            1,
            _Integer(minimum=1),
            "Weight updates that make one step of the schedule: the schedule's step is "
            "`max(update - start_decay_steps, 0) // decay_step_duration`.",
        ),
        "minimum_learning_rate": _Option(
            0.0, _Number(minimum=0), "The schedule's learning rate never goes below this."
        ),
        "moving_average_decay": _Option(
            None,
            _Number(0, 1, closed=(False, False), nullable=True),
            "Keep an exponential moving average of the weights with this decay (e.g. 0.9999, "
            "lowered early in training as in OpenNMT-tf): checkpoints, evaluations, exports "
            "and the trained model hold the average.",
        ),
        "label_smoothing": _Option(
            0.1, _Number(0, 1, closed=(True, False)), "Label smoothing of the cross-entropy."
        ),
        "guided_alignment_type": _Option(
            None,
            _Choice(*GUIDED_ALIGNMENT_TYPES, None),
            "Guided alignment loss on the first head of the last decoder layer's "
            "cross-attention: cross-entropy (`ce`) or mean squared error (`mse`); needs "
            "`data.train_alignments`.",
        ),
        "guided_alignment_weight": _Option(
            1.0, _Number(minimum=0), "Weight of the guided alignment loss."
        ),
        "beam_width": _Option(4, _Integer(minimum=1), "Beam size; 1 is greedy search."),
        "length_penalty": _Option(
            0.0,
            _Number(minimum=0),
            "Length penalty `alpha`: scores are divided by `((5 + length) / 6) ** alpha` (GNMT), "
            "or by `length ** alpha` with `length_normalization: power`.",
        ),
        "length_normalization": _Option(
            "gnmt",
            _Choice(*LENGTH_NORMALIZATIONS),
            "Divisor of the length penalty: `gnmt` (OpenNMT-tf's `((5 + length) / 6) ** "
            "alpha`) or `power` (`length ** alpha`: fairseq's `--lenpen`, Marian's "
            "`--normalize`, CTranslate2's `length_penalty`; `length` counts `</s>`).",
        ),
        "freeze_finished_scores": _Option(
            False,
            _Boolean(),
            "Score a finished hypothesis with its own length from the step it emits `</s>` "
            "(as fairseq and CTranslate2; `BeamSampler(freeze_finished_scores=True)`). "
            "OpenNMT-tf (`false`) ranks it with its length plus one.",
        ),
        "finished_hypotheses": _Option(
            "in_beam",
            _Choice(*FINISHED_HYPOTHESES),
            "Where the beam search's finished hypotheses go: `in_beam` (OpenNMT-tf: they keep "
            "their slots, re-ranked each step) or `set_aside` (fairseq and CTranslate2: they "
            "leave the beam, which is refilled from `2 * beam_width` candidates, and a "
            "sentence ends at `beam_width` finished hypotheses; "
            "`BeamSampler(finished_hypotheses=\"set_aside\")`, with `early_exit: false` and "
            "`sampling_topk: 1`).",
        ),
        "coverage_penalty": _Option(
            0.0,
            _Number(minimum=0),
            "GNMT coverage penalty `beta`: adds `beta * sum(log(min(attention_sum, 1)))` over "
            "the source positions.",
        ),
        "sampling_topk": _Option(
            1,
            _Integer(minimum=0),
            "1 searches deterministically; k > 1 samples each token among the k most likely; "
            "0 samples from the whole distribution.",
        ),
        "sampling_temperature": _Option(
            1.0,
            _Number(minimum=0, closed=(False, True)),
            "Logits are divided by this before sampling; higher is more random.",
        ),
        "num_hypotheses": _Option(
            1,
            _Integer(minimum=1),
            "Hypotheses a decode returns (the n-best list); at most `beam_width`.",
        ),
        "maximum_decoding_length": _Option(
            250, _Integer(minimum=1), "Maximum length of a translation, `</s>` excluded."
        ),
        "decoding_length_ratio": _Option(
            2.0,
            _Number(minimum=0),
            "A translation of a sentence of n source tokens has at most `floor(ratio * n) + "
            "decoding_length_offset` tokens (fairseq's `max_len_a`).",
        ),
        "decoding_length_offset": _Option(
            10,
            _Integer(minimum=1),
            "The offset of that limit (fairseq's `max_len_b`).",
        ),
        "minimum_decoding_length": _Option(
            0, _Integer(minimum=0), "Minimum length of a translation, `</s>` excluded."
        ),
        "replace_unknown_target": _Option(
            False,
            _Boolean(),
            "Replace each unknown target token by the source token with the highest attention.",
        ),
        "compact_batch": _Option(
            False,
            _Boolean(),
            "Stop each sentence as soon as its hypotheses have finished and decode the "
            "unfinished ones in smaller batches (`BeamSampler(compact_batch=True)`; `translate` "
            "from a checkpoint streams the sentences through `batch_size` decoding slots): "
            "faster, and each result is the one of the sentence decoded alone. OpenNMT-tf "
            "(`false`) decodes a finished sentence on with its batch.",
        ),
        "early_exit": _Option(
            False,
            _Boolean(),
            "Stop a batch's beam search once the `num_hypotheses` best hypotheses of every "
            "sentence have finished (`BeamSampler(early_exit=True)`; `--early-exit` of "
            "`export` and `translate` sets it too): often about twice as fast, the same "
            "results without penalties. OpenNMT-tf (`false`) runs until every hypothesis "
            "has finished.",
        ),
        "shortlist": _Option(
            None,
            _Path(),
            "Lexical shortlist (`kerasnmt build-shortlist`, CTranslate2's vmap format): "
            "decode each batch over the target tokens its source tokens may translate to, "
            "the probabilities normalized over them (Marian's lexical shortlist): faster, "
            "translations may differ. `null`: the whole target vocabulary.",
        ),
        "shortlist_width": _Option(
            2048,
            _Integer(minimum=3),
            "Target ids a batch is decoded over with `shortlist` (its shortlist padded to "
            "this, one compiled decoding for all); a batch whose shortlist is longer is "
            "decoded over the whole vocabulary.",
        ),
    },
    "train": {
        "batch_size": _Option(
            3072, _Integer(minimum=1), "Batch size, counted in `batch_type` units."
        ),
        "batch_type": _Option(
            "tokens",
            _Choice(*BATCH_TYPES),
            "Count `batch_size` in examples or in tokens (padding included).",
        ),
        "batch_size_multiple": _Option(
            1,
            _Integer(minimum=1),
            "With `batch_type: tokens`, the number of examples of a batch is a multiple of "
            "this (8 suits float16 kernels; a bucket too long for one multiple still gets one).",
        ),
        "effective_batch_size": _Option(
            25000,
            _Integer(minimum=1, nullable=True),
            "Accumulate gradients over enough batches to reach at least this batch size "
            "before each update; null updates after every batch.",
        ),
        "length_bucket_width": _Option(
            1,
            _Integer(minimum=1),
            "Width of the length buckets batches are drawn from; smaller means less padding. "
            "With `data.train_shards`, only the rounding of `pad_to_bucket_boundary` (batches "
            "are cut from examples sorted by length).",
        ),
        "pad_to_bucket_boundary": _Option(
            False,
            _Boolean(),
            "Pad each batch to its length bucket's longest length instead of its own longest "
            "sequence, so that a bucket has one shape (static shapes for XLA, TPU).",
        ),
        "maximum_features_length": _Option(
            100,
            _Integer(minimum=1, nullable=True),
            "Drop training pairs whose source has more tokens than this; null keeps all.",
        ),
        "maximum_labels_length": _Option(
            100,
            _Integer(minimum=1, nullable=True),
            "Drop training pairs whose target is longer than this, counted as OpenNMT-tf "
            "counts it: its tokens plus its end mark `</s>` (so targets of at most this "
            "minus 1 tokens are kept); null keeps all.",
        ),
        "sample_buffer_size": _Option(
            -1,
            _Integer(minimum=-1, nullable=True),
            "Shuffle buffer, in examples: -1 shuffles the whole corpus, 0 or null does not "
            "shuffle, n shuffles shards of n examples (OpenNMT-tf's behaviour). With "
            "`data.train_shards`: the window of examples sorted and cut into batches together "
            "(-1 the whole corpus; 0 or null the whole corpus, in order, unshuffled).",
        ),
        "prefetch_buffer_size": _Option(
            None,
            _Integer(minimum=1, nullable=True),
            "Batches prepared ahead of training; null lets tf.data tune it (AUTOTUNE).",
        ),
        "save_checkpoints_steps": _Option(
            5000, _Integer(minimum=1), "Save a checkpoint every this many steps."
        ),
        "keep_checkpoint_max": _Option(
            8, _Integer(minimum=1), "Number of recent checkpoints kept on disk."
        ),
        "save_summary_steps": _Option(
            100,
            _Integer(minimum=1),
            "Every this many steps, log the mean loss, accuracy and perplexity of the steps "
            "since the previous summary, and the learning rate.",
        ),
        "max_step": _Option(
            500000,
            _Integer(minimum=1, nullable=True),
            "Stop training at this step; null trains until interrupted.",
        ),
        "average_last_checkpoints": _Option(
            8,
            _Integer(minimum=0),
            "At the end of training, average this many last checkpoints into "
            "`model_dir/avg` (a damaged one is reported and skipped: the newest readable "
            "ones); 0 does not average.",
        ),
        "mixed_precision": _Option(
            None,
            _Choice("auto", "mixed_float16", "mixed_bfloat16", None),
            "Keras mixed precision policy: `mixed_float16` (GPU, with loss scaling), "
            "`mixed_bfloat16` (CPU, TPU); null trains in float32. `auto` picks "
            "`mixed_bfloat16` on a TPU, `mixed_float16` when a GPU is visible, "
            "`mixed_bfloat16` when the CPU has AVX-512 BF16 or AMX (`avx512_bf16`, "
            "`amx_bf16` in /proc/cpuinfo), float32 otherwise, and logs its choice.",
        ),
        "seed": _Option(
            None,
            _Integer(minimum=0, nullable=True),
            "Random seed for initialization, shuffling and dropout, and for the sampling of "
            "`params.sampling_topk` when the run's model decodes (evaluations, `translate`, "
            "`export`); null picks one at random. Needed by multi-worker training "
            "(`TF_CONFIG`).",
        ),
        "tpu": _Option(
            None,
            _Text(),
            "Train on this TPU (`TPUStrategy`): its name or `grpc://` address as "
            "`tf.distribute.cluster_resolver.TPUClusterResolver` takes it, `local` on a TPU "
            "VM. Needs `pad_to_bucket_boundary: true` and both maximum lengths (one shape a "
            "bucket, a bounded number of buckets). Null: the local GPUs or CPU, or the "
            "workers of `TF_CONFIG` (see Running on several devices).",
        ),
    },
    "eval": {
        "batch_size": _Option(32, _Integer(minimum=1), "Evaluation batch size."),
        "batch_type": _Option(
            "examples", _Choice(*BATCH_TYPES), "Count `batch_size` in examples or tokens."
        ),
        "steps": _Option(
            5000, _Integer(minimum=1),
            "Evaluate at every multiple of this many training steps (also in a resumed run), "
            "and when training ends.",
        ),
        "scorers": _Option(
            ["bleu", "chrf"],
            _ChoiceList("bleu", "chrf", case_sensitive=False),
            "Scores computed on the detokenized translations of the validation set with "
            "sacreBLEU (case-insensitive names). `bleu` also reports `bleu_tokenized_lc`, "
            "BLEU as papers on Multi30k publish it (lowercased, Moses-tokenized text).",
        ),
        "target_language": _Option(
            "en",
            _LanguageCode(),
            "Language of the validation references, for the Moses tokenizer of "
            "`bleu_tokenized_lc` (as the Moses scripts' `-l`: `de` for German).",
        ),
        "export_on_best": _Option(
            None,
            _Choice("bleu", "chrf", "loss", None),
            "Export a SavedModel to `model_dir/export/STEP` when this metric is the best so "
            "far; it must be `loss` or one of `scorers`.",
        ),
        "max_exports_to_keep": _Option(
            5, _Integer(minimum=1), "Number of best-model exports kept on disk."
        ),
        "save_eval_predictions": _Option(
            False,
            _Boolean(),
            "Write the detokenized translations of each evaluation to "
            "`model_dir/eval/predictions.txt.STEP`, one a line.",
        ),
        "early_stopping": {
            "metric": _Option(
                "loss",
                _Choice("bleu", "chrf", "loss"),
                "Early stopping's metric: `loss` or one of `scorers`.",
            ),
            "min_improvement": _Option(
                0.0,
                _Number(0),
                "The least change of `metric` that counts as an improvement (in its own "
                "units: BLEU points for `bleu`).",
            ),
            "steps": _Option(
                None,
                _Integer(minimum=1, nullable=True),
                "Stop training when none of the last this many evaluations improved "
                "`metric` by more than `min_improvement` on the evaluation before them (as "
                "OpenNMT-tf); null: no early stopping.",
            ),
        },
    },
    "infer": {
        "batch_size": _Option(32, _Integer(minimum=1), "Translation batch size."),
        "batch_type": _Option(
            "examples",
            _Choice("examples"),
            "Count `batch_size` in examples: a translation batch is a number of sentences "
            "(OpenNMT-tf's `tokens` is refused rather than read as another number).",
        ),
        "n_best": _Option(
            1,
            _Integer(minimum=1),
            "Translations printed for each input line; at most `params.beam_width`.",
        ),
        "with_scores": _Option(False, _Boolean(), "Print the score before each translation."),
        "with_alignments": _Option(
            None,
            _Choice("hard", "soft", None),
            "Print alignments after each translation: `hard` (Pharaoh pairs of the most "
            "attended source token) or `soft` (the attention vectors).",
        ),
    },
}

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

# The keys of the `BeamSampler` arguments that `decoding_option_problems` relates.
_DECODING_OPTION_KEYS = {
    "beam_size": "params.beam_width",
    "n_best": "params.num_hypotheses",
    "min_length": "params.minimum_decoding_length",
    "max_length": "params.maximum_decoding_length",
    "top_k": "params.sampling_topk",
    "early_exit": "params.early_exit",
    "finished_hypotheses": "params.finished_hypotheses",
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


def _walk(schema, prefix=""):
    """Yields (key path, option) for every option of the schema, in order."""
    for key, entry in schema.items():
        path = f"{prefix}{key}"
        if isinstance(entry, dict):
            yield from _walk(entry, prefix=f"{path}.")
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

    return defaults(_SCHEMA)


# ---------------------------------------------------------------------------------------
# Loading and checking.
# ---------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key given twice in one mapping (PyYAML keeps the
    last silently)."""

    def construct_mapping(self, node, deep=False):
        first_line = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(
                    self.name,
                    [f"line {line}: key {key!r} given twice (first on line {first_line[key]})"],
                )
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def load_config(path, required=()):
    """Reads a YAML run configuration, merges it onto the defaults and checks it.

    Args:
        path: the YAML file. Relative file paths inside it are resolved from its directory.
        required: key paths that must be set (not null) for the command at hand, e.g.
            `("model_dir", "data.train_features_file")`.

    Returns:
        The complete configuration as a nested dict (see `default_config()`), with file
        paths absolute, lists of training files always lists, `eval.scorers` a list, and
        `params.decay_params.model_dim` filled in from `model.num_units` when null (but for
        `decay_type: InvSqrtDecay`, which has no `model_dim`).

    Raises:
        ConfigError: listing every mistake with its key path, before anything runs.

    Examples:
        >>> import pathlib, tempfile
        >>> run = pathlib.Path(tempfile.mkdtemp()) / "run.yml"
        >>> _ = run.write_text("train:\\n  batch_type: token\\n  batch_sizes: 64\\n")
        >>> load_config(run)
        Traceback (most recent call last):
        ...
        kerasnmt.config.ConfigError: ...run.yml: 2 errors in the configuration:
          train.batch_sizes: unknown key (did you mean train.batch_size?)
          train.batch_type: expected one of examples, tokens, got 'token' (did you mean 'tokens'?)
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as stream:
            values = yaml.load(stream, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigError(path, ["the configuration file does not exist"]) from None
    except yaml.YAMLError as error:
        raise ConfigError(path, [f"not valid YAML: {error}"]) from None
    base_dir = os.path.dirname(os.path.abspath(path))
    return check_config({} if values is None else values, base_dir, source=path, required=required)


def check_config(values, base_dir, source="<config>", required=()):
    """Merges a configuration given as a dict onto the defaults and checks it.

    `load_config` reads a YAML file and calls this; use it directly for configurations
    built in Python.

    Args:
        values: a nested dict with some of the keys of `default_config()`.
        base_dir: the directory relative file paths are resolved from.
        source: what to call `values` in error messages.
        required: key paths that must be set (not null); a tuple of key paths is met
            by any one of them.

    Returns:
        The complete, checked configuration (see `load_config`).

    Raises:
        ConfigError: listing every mistake with its key path.
    """
    errors = {}
    config = default_config()
    if not isinstance(values, dict):
        raise ConfigError(source, [f"expected a mapping of sections at the top, {_got(values)}"])
    _merge(values, _SCHEMA, config, "", base_dir, errors)
    params = values.get("params")
    _check_together(config, errors, params.get("optimizer_params") if isinstance(params, dict)
                    else None)
    for key_path in missing_keys(config, required):
        if key_path.split(" ")[0] not in errors:
            errors[key_path] = f"{key_path}: required but not set"
    if errors:
        raise ConfigError(source, [errors[key] for key in sorted(errors)])
    params = config["params"]
    if params["decay_params"]["model_dim"] is None and params["decay_type"] != "InvSqrtDecay":
        params["decay_params"]["model_dim"] = config["model"]["num_units"]
    return config


def missing_keys(config, required):
    """The entries of `required` that `config` leaves unset (null), named as key paths;
    a tuple of alternatives is met by any one of them and named `"a (or b)"`.

    Examples:
        >>> config = default_config()
        >>> config["data"]["train_shards"] = ["train.index.json"]
        >>> missing_keys(config, ["model_dir", ("data.train_features_file", "data.train_shards")])
        ['model_dir']
        >>> missing_keys(default_config(), [("data.train_features_file", "data.train_shards")])
        ['data.train_features_file (or data.train_shards)']
    """
    missing = []
    for entry in required:
        alternatives = entry if isinstance(entry, tuple) else (entry,)
        if all(_get(config, key_path) is None for key_path in alternatives):
            missing.append(alternatives[0] + "".join(f" (or {key})" for key in alternatives[1:]))
    return missing


def _get(config, key_path):
    value = config
    for key in key_path.split("."):
        value = value[key]
    return value


def _unknown_key_message(key, path, section):
    if path in _BUCKET_KEYS_UNUSED:
        return (f"{path}: an OpenNMT-tf option kerasnmt does not use (translations are "
                "grouped by source width, see docs/decoding.md); remove it")
    if key in _RENAMED_KEYS:
        return f"{path}: unknown key (kerasnmt calls it {_RENAMED_KEYS[key]})"
    if key in _OPENNMT_TF_ONLY:
        return f"{path}: an OpenNMT-tf option that kerasnmt does not have"
    elsewhere = [
        option_path for option_path, _ in _walk(_SCHEMA) if option_path.split(".")[-1] == key
    ]
    if elsewhere:
        return f"{path}: unknown key here (did you mean {' or '.join(elsewhere)}?)"
    close = difflib.get_close_matches(str(key), [str(k) for k in section], n=1, cutoff=0.6)
    if close:
        prefix = path.rsplit(".", 1)[0] + "." if "." in path else ""
        return f"{path}: unknown key (did you mean {prefix}{close[0]}?)"
    return f"{path}: unknown key"


def _merge(values, schema, config, prefix, base_dir, errors):
    """Checks `values` against `schema` and writes them into `config`, collecting errors."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in schema:
            errors[path] = _unknown_key_message(key, path, schema)
            continue
        entry = schema[key]
        if isinstance(entry, dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                errors[path] = f"{path}: expected a mapping of options, {_got(value)}"
                continue
            _merge(value, entry, config[key], f"{path}.", base_dir, errors)
            continue
        try:
            checked = entry.kind.check(value, base_dir)
        except _Invalid as error:
            errors[path] = f"{path}: {error}"
            continue
        if isinstance(entry.kind, _Mapping):
            config[key].update(checked)
        else:
            config[key] = checked


def _check_together(config, errors, given_optimizer_params):
    """Checks that options agree with each other, for every group of options that are
    valid alone (a mistake is reported once, not again as a disagreement).
    `given_optimizer_params`: the `params.optimizer_params` of the file, if any."""
    data, model, params = config["data"], config["model"], config["params"]
    evaluation = config["eval"]
    found = list(errors)

    def valid(*paths):
        return not any(key == path or key.startswith(f"{path}.") for key in found for path in paths)

    def error(path, message):
        errors.setdefault(path, f"{path}: {message}")

    def more_than(path, other_path):
        value, other = _get(config, path), _get(config, other_path)
        if valid(path, other_path) and value > other:
            error(path, f"{value} is more than {other_path} ({other})")

    units, heads = model["num_units"], model["num_heads"]
    if valid("model.num_units", "model.num_heads") and units % heads:
        error("model.num_heads", f"{heads} does not divide model.num_units ({units})")
    # The params section's own rules, then infer.n_best against the same beam.
    for keys in (_DECODING_OPTION_KEYS,
                 {"n_best": "infer.n_best", "beam_size": "params.beam_width"}):
        options = {argument: _get(config, key) for argument, key in keys.items() if valid(key)}
        for argument, message in decoding_option_problems(options, keys).items():
            errors.setdefault(keys[argument], message)  # the message names the key
    more_than("train.average_last_checkpoints", "train.keep_checkpoint_max")
    train = config["train"]
    if (valid("train.batch_size_multiple", "train.batch_type")
            and train["batch_size_multiple"] != 1 and train["batch_type"] == "examples"):
        error("train.batch_size_multiple", "has no effect with train.batch_type examples "
              "(batches hold train.batch_size examples); use batch_type tokens")
    if valid("train.tpu") and train["tpu"] is not None:
        # A TPU compiles one program a batch shape: one shape a bucket, finitely many buckets.
        if valid("train.pad_to_bucket_boundary") and not train["pad_to_bucket_boundary"]:
            error("train.pad_to_bucket_boundary",
                  "must be true with train.tpu (a TPU compiles one program a batch shape)")
        for key in ("maximum_features_length", "maximum_labels_length"):
            if valid(f"train.{key}") and train[key] is None:
                error(f"train.{key}",
                      "must be set with train.tpu (a bounded number of batch shapes)")

    if valid("data"):
        _check_data_files(data, error)
        if params["guided_alignment_type"] is not None and data["train_alignments"] is None:
            error(
                "params.guided_alignment_type",
                f"{params['guided_alignment_type']!r} needs data.train_alignments",
            )
        for path in ("eval.export_on_best", "eval.early_stopping.steps"):
            if _get(config, path) is not None and data["eval_features_file"] is None:
                error(path, "needs data.eval_features_file and data.eval_labels_file")
    for path in ("eval.export_on_best", "eval.early_stopping.metric"):
        metric = _get(config, path)
        if valid("eval") and metric not in (None, "loss") and metric not in evaluation["scorers"]:
            error(path, f"{metric!r} is not among eval.scorers")
    if valid("params.optimizer", "params.optimizer_params"):
        _check_optimizer_params(params, error, given_optimizer_params or {})
    if params["decay_type"] is None:
        for key in ("start_decay_steps", "decay_step_duration", "minimum_learning_rate"):
            if valid(f"params.{key}") and params[key] != _SCHEMA["params"][key].default:
                error(f"params.{key}", "has no effect without a params.decay_type")
    decay_type, decay_params = params["decay_type"], params["decay_params"]
    if valid("params.decay_type"):
        if (decay_type == "InvSqrtDecay" and valid("params.decay_params.model_dim")
                and decay_params["model_dim"] is not None):
            error("params.decay_params.model_dim", "has no effect with params.decay_type "
                  "InvSqrtDecay (its params.learning_rate is the peak)")
        if (decay_type != "InvSqrtDecay" and valid("params.decay_params.initial_learning_rate")
                and decay_params["initial_learning_rate"] != 0):
            error("params.decay_params.initial_learning_rate", "has no effect with "
                  f"params.decay_type {decay_type or 'null'} (only InvSqrtDecay has one)")


def _check_data_files(data, error):
    features, labels = data["train_features_file"], data["train_labels_file"]
    if data["sentencepiece_sampling_alpha"] is not None:
        if data["source_sentencepiece"] is None and data["target_sentencepiece"] is None:
            error("data.sentencepiece_sampling_alpha", "given without a SentencePiece model "
                  "(data.source_sentencepiece or data.target_sentencepiece)")
        for key in ("train_shards", "train_alignments"):
            if data[key] is not None:
                error("data.sentencepiece_sampling_alpha", f"given with data.{key}, which "
                      "hold one segmentation of each sentence")
    if data["train_shards"] is not None:
        if features is not None:
            error("data.train_shards", "given with data.train_features_file: train from "
                  "shards or from text, not both")
        elif data["train_alignments"] is not None:
            error("data.train_alignments", "given with data.train_shards (shards store "
                  "the alignments given to kerasnmt prepare)")
        elif data["train_files_weights"] is not None and len(data["train_files_weights"]) != len(
                data["train_shards"]):
            error("data.train_files_weights", f"{len(data['train_files_weights'])} entries for "
                  f"{len(data['train_shards'])} indexes in data.train_shards")
        return
    if (features is None) != (labels is None):
        missing = "train_labels_file" if labels is None else "train_features_file"
        error(f"data.{missing}", "required with the other training file but not set")
    for key in ("train_alignments", "train_files_weights"):
        if data[key] is None:
            continue
        if features is None:
            error(f"data.{key}", "given without data.train_features_file")
        elif len(data[key]) != len(features):
            error(
                f"data.{key}",
                f"{len(data[key])} entries for {len(features)} files in data.train_features_file",
            )
    if features is not None and labels is not None and len(labels) != len(features):
        error(
            "data.train_labels_file",
            f"{len(labels)} files for {len(features)} files in data.train_features_file",
        )
    if (data["eval_features_file"] is None) != (data["eval_labels_file"] is None):
        missing = "eval_labels_file" if data["eval_labels_file"] is None else "eval_features_file"
        error(f"data.{missing}", "required with the other evaluation file but not set")


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


def _check_optimizer_params(params, error, given):
    """Reports the `params.optimizer_params` of `given` that the optimizer does not take,
    and drops the defaults it does not take (`beta_1` and `beta_2` for `SGD`)."""
    optimizer_class = getattr(keras.optimizers, params["optimizer"])
    signature = inspect.signature(optimizer_class.__init__)
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
                error(path, f"expected {expected}, {_got(value)}")


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


# ---------------------------------------------------------------------------------------
# The reference page.
# ---------------------------------------------------------------------------------------


def _format_default(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_default(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_format_default(v) for v in value) + "]"
    return str(value)


def config_reference():
    """Renders every option with its default, accepted values and meaning as Markdown.

    `docs/training.md` carries this text between its `BEGIN`/`END` markers; a test checks
    that the two agree.

    Returns:
        The Markdown text: one table a section.
    """
    lines = []
    for section, entry in _SCHEMA.items():
        if isinstance(entry, dict):
            title, options, prefix = f"`{section}`", entry, f"{section}."
        else:
            title, options, prefix = "Top level", {section: entry}, ""
        lines += [f"### {title}", "", "| key | default | accepted values | meaning |"]
        lines.append("|---|---|---|---|")
        for path, option in _walk(options, prefix=prefix):
            lines.append(
                f"| `{path}` | `{_format_default(option.default)}` | "
                f"{option.kind.describe()} | {option.doc} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(config_reference(), end="")
