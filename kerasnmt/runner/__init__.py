"""What each `kerasnmt` command does, as library calls with the command's options as
keyword arguments (`kerasnmt SUBCOMMAND --help` prints each function's docstring):
`train`, `evaluate`, `translate_file`, `export`, `average_checkpoints`, `build_vocab`,
`check_vocab`, `prepare`, `build_shortlist` and `convert`. For example,
`translate_file(input="test.en", output="test.de", config="run.yml", n_best=2)` is
`kerasnmt translate --input test.en --output test.de --config run.yml --n-best 2`.

`kerasnmt/cli.py` only parses the command line into these arguments and reports errors.
A function refuses its outputs before it starts work, and raises `OptionError` (a
`ValueError`) for options that do not go together, `ValueError` or `OSError` for bad
input, each with a one-line message naming the file, line or key.

The pieces of a run (`run_model`, `run_dataset`, `run_checkpoints`, and
`kerasnmt.training.run_optimizer`)
build each part of a training run from its configuration; `training_run.train` runs it.
"""

from kerasnmt.runner.average import average_checkpoints
from kerasnmt.runner.corpus_preparation import prepare
from kerasnmt.runner.file_translation import translate_file
from kerasnmt.runner.model_conversion import convert
from kerasnmt.runner.model_export import export
from kerasnmt.runner.option_error import OptionError
from kerasnmt.runner.scoring import evaluate
from kerasnmt.runner.shortlist_estimation import build_shortlist
from kerasnmt.runner.training_run import TrainingResult, train
from kerasnmt.runner.vocabulary_build import build_vocab
from kerasnmt.runner.vocabulary_check import check_vocab

__all__ = [
    "OptionError",
    "TrainingResult",
    "average_checkpoints",
    "build_shortlist",
    "build_vocab",
    "check_vocab",
    "convert",
    "evaluate",
    "export",
    "prepare",
    "train",
    "translate_file",
]
