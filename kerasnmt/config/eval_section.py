"""The `eval` section of the run configuration: validation, scorers, best exports and early
stopping; its scorers and language are those of `kerasnmt.evaluation`.

Examples:
    >>> EVAL_SECTION["scorers"].default
    ['bleu', 'chrf']
"""

from kerasnmt.config.option_types import (
    Boolean,
    Choice,
    ChoiceList,
    Integer,
    Invalid,
    Kind,
    Number,
    Option,
    got,
)
from kerasnmt.data.batching import BATCH_TYPES
from kerasnmt.evaluation import DEFAULT_LANGUAGE, SCORERS, check_moses_language
from kerasnmt.training.fitting import DEFAULT_BATCH_SIZE

# What an evaluation records: the validation loss and the scores of `SCORERS`.
VALIDATION_METRICS = (*SCORERS, "loss")


class LanguageCode(Kind):
    """A language code as the Moses scripts take it (`-l de`): 2 or 3 lowercase letters
    (`kerasnmt.evaluation.check_moses_language`)."""

    def _describe(self):
        return "a language code of 2 or 3 lowercase letters (en, de, fr, cs, ...)"

    def _check(self, value, base_dir):
        if isinstance(value, bool):  # YAML 1.1 reads an unquoted `no` (Norwegian) as false.
            raise Invalid(f"expected {self.describe()}, {got(value)} (quote the code: \"no\")")
        try:
            return check_moses_language(value)
        except ValueError:
            raise Invalid(f"expected {self.describe()}, {got(value)}") from None


EVAL_SECTION = {
    "batch_size": Option(DEFAULT_BATCH_SIZE, Integer(minimum=1), "Evaluation batch size."),
    "batch_type": Option(
        "examples", Choice(*BATCH_TYPES), "Count `batch_size` in examples or tokens."
    ),
    "steps": Option(
        5000, Integer(minimum=1),
        "Evaluate at every multiple of this many training steps (also in a resumed run), "
        "and when training ends.",
    ),
    "scorers": Option(
        list(SCORERS),
        ChoiceList(*SCORERS, case_sensitive=False),
        "Scores computed on the detokenized translations of the validation set with "
        "sacreBLEU (case-insensitive names). `bleu` also reports `bleu_tokenized_lc`, "
        "BLEU as papers on Multi30k publish it (lowercased, Moses-tokenized text).",
    ),
    "target_language": Option(
        DEFAULT_LANGUAGE,
        LanguageCode(),
        "Language of the validation references, for the Moses tokenizer of "
        "`bleu_tokenized_lc` (as the Moses scripts' `-l`: `de` for German).",
    ),
    "export_on_best": Option(
        None,
        Choice(*VALIDATION_METRICS, None),
        "Export a SavedModel to `model_dir/export/STEP` when this metric is the best so "
        "far; it must be `loss` or one of `scorers`.",
    ),
    "max_exports_to_keep": Option(
        5, Integer(minimum=1), "Number of best-model exports kept on disk."
    ),
    "save_eval_predictions": Option(
        False,
        Boolean(),
        "Write the detokenized translations of each evaluation to "
        "`model_dir/eval/predictions.txt.STEP`, one a line.",
    ),
    "early_stopping": {
        "metric": Option(
            "loss",
            Choice(*VALIDATION_METRICS),
            "Early stopping's metric: `loss` or one of `scorers`.",
        ),
        "min_improvement": Option(
            0.0,
            Number(0),
            "The least change of `metric` that counts as an improvement (in its own "
            "units: BLEU points for `bleu`).",
        ),
        "steps": Option(
            None,
            Integer(minimum=1, nullable=True),
            "Stop training when none of the last this many evaluations improved "
            "`metric` by more than `min_improvement` on the evaluation before them (as "
            "OpenNMT-tf); null: no early stopping.",
        ),
    },
}
