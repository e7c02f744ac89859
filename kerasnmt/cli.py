"""The `kerasnmt` command: the command line of `kerasnmt.runner`.

Each subcommand is one function decorated with `@subcommand(RUNNER_FUNCTION)`: it
receives its `argparse` parser and adds one argument for each keyword argument of the
runner function, under the same name. Its name (underscores become dashes) names the
subcommand. The runner function's docstring documents both: its first line is the
one-line help, its text before `Args:` the description shown by `kerasnmt SUBCOMMAND
--help`, and each entry of `Args:` the help of that option; an option declared without a
default takes the function's (shown as `(default: ...)`). A builder may return its own
`run(args)`, for a command that reports more than its runner function raises.

Bad input (unreadable or malformed files, impossible option values) ends the command
with a one-line message on stderr and exit status 2, without a traceback; options that do
not go together (`kerasnmt.runner.OptionError`) are usage errors.

Examples:
    >>> args = make_parser().parse_args(["translate", "--config", "run.yml", "--n-best", "2"])
    >>> args.config, args.n_best, args.batch_size, args.no_xla
    ('run.yml', 2, None, False)
"""

import argparse
import atexit
import gc
import inspect
import os
import signal
import sys

import tensorflow as tf

from kerasnmt import runner
from kerasnmt.config import ConfigError
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.sentencepiece_trainer import MODEL_TYPES
from kerasnmt.data.text_files import ERROR_POLICIES
from kerasnmt.evaluation import BLEU_TOKENIZERS, check_moses_language
from kerasnmt.export.formats import ALL_QUANTIZATIONS, EXPORT_FORMATS
from kerasnmt.runner import training_run
from kerasnmt.runner.model_conversion import CONVERTERS
from kerasnmt.runner.option_error import OptionError
from kerasnmt.training import NonFiniteLossError
from kerasnmt.training.distribution import WorkerLostError

PROGRAM = "kerasnmt"
BAD_INPUT_STATUS = 2
INTERRUPTED_STATUS = 128 + signal.SIGINT  # the shell's status for a Ctrl-C
_SUBCOMMANDS = []


def subcommand(function):
    """Registers a subcommand builder `add_arguments(parser)` of the runner's `function`."""

    def register(add_arguments):
        _SUBCOMMANDS.append((add_arguments, function))
        return add_arguments

    return register


def positive_int(text):
    """An `argparse` type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def byte_budget(text):
    """An `argparse` type: a positive number of bytes (`1e6` accepted), or `all`."""
    if text == "all":
        return text
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number or 'all', not {text}")
    return value


def moses_language(text):
    """An `argparse` type: a language code for the Moses tokenizer (`en`, `de`, ...)."""
    try:
        return check_moses_language(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


@subcommand(runner.build_vocab)
def build_vocab(parser):
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--output", "-o", required=True)
    parser.add_argument("--size", type=positive_int)
    parser.add_argument("--min-frequency", type=positive_int)
    parser.add_argument("--size-multiple", type=positive_int)
    parser.add_argument("--target-size", type=positive_int, metavar="N")
    parser.add_argument("--tolerance", type=float, metavar="PERCENT")
    parser.add_argument("--sentencepiece", action="store_true")
    parser.add_argument("--file-byte-budget", type=byte_budget, metavar="BYTES")
    parser.add_argument("--model-type", choices=MODEL_TYPES)
    parser.add_argument("--character-coverage", type=float)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--no-byte-fallback", action="store_true")
    parser.add_argument("--utf8-errors", choices=ERROR_POLICIES)


@subcommand(runner.check_vocab)
def check_vocab(parser):
    parser.add_argument("files", nargs="+", metavar="FILE")


@subcommand(runner.evaluate)
def evaluate(parser):
    parser.add_argument("hypotheses", metavar="HYPOTHESES")
    parser.add_argument("references", metavar="REFERENCES")
    parser.add_argument("--lowercase", action="store_true")
    parser.add_argument("--tokenize", choices=BLEU_TOKENIZERS)
    parser.add_argument("--language", type=moses_language)


@subcommand(runner.prepare)
def prepare(parser):
    parser.add_argument("source", metavar="SOURCE")
    parser.add_argument("target", metavar="TARGET")
    parser.add_argument("--output-dir", "-o", required=True)
    parser.add_argument("--name")
    parser.add_argument("--alignments", metavar="FILE")
    parser.add_argument("--config", metavar="RUN_YML")
    for side in ("source", "target"):
        parser.add_argument(f"--{side}-vocabulary")
        parser.add_argument(f"--{side}-sentencepiece", metavar="MODEL")
    parser.add_argument("--num-shards", type=positive_int)
    parser.add_argument("--num-processes", type=positive_int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--no-shuffle", action="store_true")
    parser.add_argument("--progress-every", type=positive_int, metavar="N")


@subcommand(runner.train)
def train(parser):
    parser.add_argument("--config", required=True, metavar="RUN_YML")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS")
    parser.add_argument(
        "--verbose", type=int, choices=(0, 1, 2), default=1,
        help="0: no progress display, 1: a progress bar (default), 2: one line per epoch "
        "(an epoch is eval.steps steps)",
    )

    def run(args):
        try:
            result = training_run.train(args.config, time_limit=args.time_limit,
                                        verbose=args.verbose)
        except (NonFiniteLossError, WorkerLostError) as error:
            print(f"{PROGRAM} train: error: {error}", file=sys.stderr)
            return 1
        print(f"Training stopped at step {result.step}: {result.stop_reason}")
        print(f"Last checkpoint: {result.checkpoint}")
        if result.averaged_checkpoint:
            print(f"Averaged checkpoint: {result.averaged_checkpoint}")
        if result.signal_number is not None:
            return 128 + result.signal_number  # the shell's status for a signalled process
        return 0

    return run


@subcommand(runner.average_checkpoints)
def average_checkpoints(parser):
    parser.add_argument("--config", required=True, metavar="RUN_YML")
    parser.add_argument("--max-count", type=positive_int)
    parser.add_argument("--output", metavar="DIR")


@subcommand(runner.convert)
def convert(parser):
    parser.add_argument("toolkit", choices=sorted(CONVERTERS), metavar="TOOLKIT")
    parser.add_argument("--config", required=True, metavar="ONMT_YML")
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--checkpoint", metavar="PATH")
    parser.add_argument("--model-type", metavar="NAME")
    parser.add_argument("--num-heads", type=positive_int, metavar="N")
    parser.add_argument("--force", action="store_true")


@subcommand(runner.build_shortlist)
def build_shortlist(parser):
    parser.add_argument("--config", required=True, metavar="RUN_YML")
    parser.add_argument("--output", "-o", required=True)
    parser.add_argument("--per-source", type=positive_int)
    parser.add_argument("--frequent", type=int)
    parser.add_argument("--minimum-probability", type=float)
    parser.add_argument("--iterations", type=positive_int)


def _add_decoding_arguments(parser):
    """The arguments `export` and `translate` share: the model, and how to decode."""
    parser.add_argument("--config", metavar="RUN_YML")
    parser.add_argument("--checkpoint", metavar="PATH")
    parser.add_argument("--model", metavar="FILE.keras")
    parser.add_argument("--early-exit", action="store_true")
    parser.add_argument("--shortlist", metavar="FILE")
    parser.add_argument("--no-xla", action="store_true")


@subcommand(runner.export)
def export(parser):
    parser.add_argument("output", metavar="OUTPUT")
    _add_decoding_arguments(parser)
    parser.add_argument(
        "--format", choices=sorted(EXPORT_FORMATS),
        help="; ".join(f"{name}: {export_format.description}"
                       for name, export_format in EXPORT_FORMATS.items())
        + " (default: %(default)s)",
    )
    parser.add_argument("--quantization", choices=ALL_QUANTIZATIONS)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--next-version", action="store_true")
    parser.add_argument("--n-best", type=positive_int)
    parser.add_argument("--with-alignments", action="store_true")
    parser.add_argument("--maximum-source-length", type=positive_int)
    parser.add_argument("--no-warmup", action="store_true")


@subcommand(runner.translate_file)
def translate(parser):
    parser.add_argument("--saved-model", metavar="DIR")
    _add_decoding_arguments(parser)
    parser.add_argument("--input", "-i", metavar="FILE")
    parser.add_argument("--output", "-o", metavar="FILE")
    parser.add_argument("--n-best", type=positive_int)
    parser.add_argument("--with-scores", action="store_true")
    parser.add_argument("--with-alignments", choices=("hard", "soft"))
    parser.add_argument("--batch-size", type=positive_int)
    parser.add_argument("--xla", action="store_true")


def _runner_call(parser, function):
    """`run(args)`: calls the runner's `function` with the parsed options as its keyword
    arguments; an `OptionError` is a usage error of `parser`."""

    def run(args):
        options = {name: value for name, value in vars(args).items()
                   if name not in ("run", "subcommand")}
        try:
            function(**options)
        except OptionError as error:
            parser.error(str(error))

    return run


def _argument_help(docstring):
    """`{argument: text}` of the `Args:` section of a Google-style docstring."""
    helps, name = {}, None
    for line in docstring.partition("\n\nArgs:\n")[2].splitlines():
        if not line.startswith("    "):
            break  # the next section
        if line.startswith("        ") and name is not None:
            helps[name] += " " + line.strip()
        else:
            name, _, text = line.strip().partition(": ")
            helps[name] = text
    return helps


def _document(parser, function):
    """The parser's description, and each argument's help and missing default, from the
    runner's `function`: its docstring and its signature."""
    docstring = inspect.getdoc(function)
    parser.description = docstring.partition("\n\nArgs:\n")[0]
    helps = _argument_help(docstring)
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(function).parameters.items()}
    for action in parser._actions:
        if action.dest == "help":
            continue
        if action.default is None and defaults.get(action.dest) is not inspect.Parameter.empty:
            action.default = defaults.get(action.dest)
        if action.help is None:
            action.help = helps[action.dest].replace("%", "%%")
            if action.default not in (None, False) and "(default:" not in action.help:
                action.help += " (default: %(default)s)"


def make_parser():
    """The `kerasnmt` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description="Keras-native neural machine translation."
    )
    subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
    for add_arguments, function in _SUBCOMMANDS:
        subparser = subparsers.add_parser(
            add_arguments.__name__.replace("_", "-"),
            help=inspect.getdoc(function).splitlines()[0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        run = add_arguments(subparser)
        _document(subparser, function)
        subparser.set_defaults(run=run or _runner_call(subparser, function))
    return parser


def main(argv=None):
    """Runs `kerasnmt` with `argv` (default: `sys.argv[1:]`) and returns the exit status.

    Usage errors exit through `argparse` (status 2, with the usage line). Bad input
    found while running (`ValueError`, which covers `CorpusError` and
    `VocabularyError`, `OSError` such as a missing file, and an input check that
    failed inside a `tf.data` pipeline or a layer, see `kerasnmt.data.pipeline_errors`)
    prints `kerasnmt SUBCOMMAND: error: MESSAGE` on one line and returns 2; a
    configuration error (`ConfigError`) keeps its one line per mistake. A second Ctrl-C
    (the first one ends `train` as SIGTERM does) prints one line and returns 130.
    """
    args = make_parser().parse_args(argv)
    try:
        status = args.run(args)
    except ConfigError as error:
        print(f"{PROGRAM} {args.subcommand}: error: {error}", file=sys.stderr)
        return BAD_INPUT_STATUS
    except (ValueError, OSError) as error:
        return _bad_input(args, error)
    except tf.errors.InvalidArgumentError as error:
        bad_input = corpus_error(error)
        if bad_input is None:
            raise
        return _bad_input(args, bad_input)
    except KeyboardInterrupt:
        print(f"{PROGRAM} {args.subcommand}: interrupted", file=sys.stderr)
        return INTERRUPTED_STATUS
    return status or 0


def _bad_input(args, error):
    print(f"{PROGRAM} {args.subcommand}: error:", *str(error).split(), file=sys.stderr)
    return BAD_INPUT_STATUS


def console_main():
    """The `kerasnmt` command: `main()`, the imported modules' objects kept out of garbage
    collection (`gc.freeze`: a cold 100-sentence `translate`, 15.2 -> 13.7 s), then an end
    without TensorFlow's teardown (1.3 s) once output and exit handlers are done."""
    gc.freeze()
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()  # a normal exit runs these first; os._exit does not
    os._exit(status)


if __name__ == "__main__":
    console_main()
