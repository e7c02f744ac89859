"""The `infer` section of the run configuration: how `kerasnmt translate` batches and prints.

Examples:
    >>> INFER_SECTION["n_best"].kind.describe()
    'an integer >= 1'
"""

from kerasnmt.config.option_types import Boolean, Choice, Integer, Option
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE


INFER_SECTION = {
    "batch_size": Option(
        TRANSLATION_BATCH_SIZE, Integer(minimum=1), "Translation batch size."
    ),
    "batch_type": Option(
        "examples",
        Choice("examples"),
        "Count `batch_size` in examples: a translation batch is a number of sentences "
        "(OpenNMT-tf's `tokens` is refused rather than read as another number).",
    ),
    "n_best": Option(
        1,
        Integer(minimum=1),
        "Translations printed for each input line; at most `params.beam_width`.",
    ),
    "with_scores": Option(False, Boolean(), "Print the score before each translation."),
    "with_alignments": Option(
        None,
        Choice("hard", "soft", None),
        "Print alignments after each translation: `hard` (Pharaoh pairs of the most "
        "attended source token) or `soft` (the attention vectors).",
    ),
}
