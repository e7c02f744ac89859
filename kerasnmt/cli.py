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
"""

import argparse
import inspect
import os
import signal
import sys

import numpy as np
import tensorflow as tf

from kerasnmt import runner
from kerasnmt.config import ConfigError
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.result_file import check_result_path, result_file
from kerasnmt.data.sentencepiece_trainer import MODEL_TYPES
from kerasnmt.data.text_files import ERROR_POLICIES
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.evaluation import BLEU_TOKENIZERS, check_moses_language
from kerasnmt.export.formats import ALL_QUANTIZATIONS, EXPORT_FORMATS
from kerasnmt.runner import run_model, training_run
from kerasnmt.runner.decoding_model import (
    check_model_arguments,
    check_n_best,
    decoding_sampler,
    load_model_for_decoding,
)
from kerasnmt.runner.option_error import OptionError
from kerasnmt.runner.run_model import decoding_options
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


def _add_early_exit_argument(parser):
    parser.add_argument(
        "--early-exit", action="store_true",
        help="stop a batch's beam search once the n-best hypotheses of every sentence have "
        "finished (BeamSampler(early_exit=True): often about twice as fast; the same "
        "results without length or coverage penalty, possibly slightly different with "
        "them) instead of when every hypothesis has, as OpenNMT-tf does; as "
        "params.early_exit: true",
    )


def _add_shortlist_argument(parser):
    parser.add_argument(
        "--shortlist", metavar="FILE",
        help="decode over this lexical shortlist (kerasnmt build-shortlist) instead of "
        "params.shortlist: each batch over the target tokens its source tokens may "
        "translate to (faster; translations may differ)",
    )


def _add_model_arguments(parser):
    parser.add_argument(
        "--config", metavar="RUN_YML",
        help="the run configuration: the model's shape and vocabularies, and the decoding "
        "options (params); the weights come from its model_dir",
    )
    parser.add_argument(
        "--checkpoint", metavar="PATH",
        help="with --config: a checkpoint (MODEL_DIR/ckpt-STEP) or a directory of them "
        "(default: MODEL_DIR/avg when it is the newest, else the latest of MODEL_DIR)",
    )
    parser.add_argument(
        "--model", metavar="FILE.keras",
        help="a model saved with translator.save('FILE.keras'), instead of a checkpoint; "
        "decoding options come from --config when given, else beam search of width 4",
    )


def _add_no_xla_argument(parser):
    parser.add_argument(
        "--no-xla", action="store_true", help="do not compile the decoding with XLA"
    )


def _read_sentences(path):
    """The lines of a UTF-8 file, or of stdin for None/'-'."""
    from kerasnmt.data.text_files import read_stream_lines
    from kerasnmt.evaluation import read_lines

    if path and path != "-":
        return read_lines(path)
    return [text for _, text in read_stream_lines(sys.stdin.buffer, "stdin")]


class _SavedModelTranslator:
    """Translates with an exported SavedModel."""

    def __init__(self, path, n_best, with_alignments):
        import tensorflow as tf

        if not os.path.isfile(os.path.join(path, "saved_model.pb")):
            raise OSError(f"{path}: not a SavedModel directory (no saved_model.pb)")
        self.tf = tf
        model = tf.saved_model.load(path)
        self.n_best_signature = n_best > 1 or with_alignments
        self.signature = model.signatures["n_best" if self.n_best_signature else "serving_default"]
        self.n_best = n_best
        self.with_alignments = with_alignments
        # Each translated sentence's count of unknown source tokens, in translation order;
        # exports written before the signatures returned it give none.
        self.unknown_source_tokens = [] if "unknown_source_tokens" in (
            self.signature.structured_outputs) else None
        # What the export provides is in the signature's output specs: refuse before
        # reading or decoding anything.
        outputs = self.signature.structured_outputs
        available = outputs["translations"].shape[1] if self.n_best_signature else 1
        if available < n_best:
            raise ValueError(
                f"{path} returns {available} hypotheses a sentence (exported with "
                f"n_best={available}): export it again with --n-best {n_best}"
            )
        if with_alignments and "alignments" not in outputs:
            raise ValueError(f"{path} was exported without alignments: export it again "
                             "with --with-alignments")

    def __call__(self, sentences):
        """A list of n-best lists of hypotheses (`text`, `score`[, `alignment`]), one per
        sentence."""
        outputs = self.signature(source=self.tf.constant(sentences, self.tf.string))
        if self.unknown_source_tokens is not None:
            self.unknown_source_tokens.append(outputs["unknown_source_tokens"].numpy())
        if not self.n_best_signature:
            return [[{"text": text.decode("utf-8"), "score": float(score)}] for text, score in
                    zip(outputs["translation"].numpy(), outputs["score"].numpy())]
        texts, scores = outputs["translations"].numpy(), outputs["scores"].numpy()
        alignments = outputs["alignments"].numpy() if self.with_alignments else None
        results = []
        for i in range(len(sentences)):
            n_best = [{"text": texts[i, k].decode("utf-8"), "score": float(scores[i, k])}
                      for k in range(self.n_best)]
            if alignments is not None:
                for hypothesis, alignment in zip(n_best, _unpadded_alignments(alignments[i])):
                    hypothesis["alignment"] = alignment
            results.append(n_best)
        return results


def _unpadded_alignments(alignments):
    """Each hypothesis' `[target tokens, source tokens]` rows of a sentence's zero-padded
    `[n, T, S]` alignments (a token's row is a distribution; padding is zeros)."""
    used = np.flatnonzero(alignments.max(axis=(0, 1)) > 0)
    columns = int(used[-1]) + 1 if len(used) else 0
    rows = np.sum(alignments.sum(axis=-1) > 0.5, axis=-1)
    return [alignment[:count, :columns] for alignment, count in zip(alignments, rows)]


class _CheckpointTranslator:
    """Translates with `Translator.translate`."""

    def __init__(self, translator, config, n_best, batch_size, early_exit, jit_compile,
                 shortlist):
        self.translator = translator
        self.sampler = decoding_sampler(config, max(n_best, config["params"]["num_hypotheses"])
                                if config else n_best, early_exit)
        self.n_best = n_best
        self.batch_size = batch_size
        self.replace_unknown_target = bool(config and config["params"]["replace_unknown_target"])
        self.shortlist = shortlist
        self.jit_compile = jit_compile
        # Sources cut as the export of this configuration cuts them.
        self.options = decoding_options(config) if config else {}

    def __call__(self, sentences):
        results = self.translator.translate(
            sentences, sampler=self.sampler, batch_size=self.batch_size, return_details=True,
            replace_unknown_target=self.replace_unknown_target, shortlist=self.shortlist,
            jit_compile=self.jit_compile, **self.options,
        )
        return [n_best[: self.n_best] for n_best in results]


def format_hypothesis(hypothesis, with_scores=False, with_alignments=None):
    """One output line, as OpenNMT-tf writes it: `[SCORE ||| ]TEXT[ ||| ALIGNMENT]`.

    `hard` alignments are Pharaoh pairs `source-target` of each target token's most
    attended source token; `soft` ones the attention vectors, one a target token,
    separated by ` ; `.

    Examples:
        >>> import numpy as np
        >>> hypothesis = {"text": "B A", "score": -0.5, "alignment": np.array([[0.2, 0.8], [0.9, 0.1]])}
        >>> format_hypothesis(hypothesis, with_scores=True, with_alignments="hard")
        '-0.500000 ||| B A ||| 1-0 0-1'
        >>> format_hypothesis(hypothesis, with_alignments="soft")
        'B A ||| 0.200000 0.800000 ; 0.900000 0.100000'
    """
    line = hypothesis["text"]
    if with_scores:
        line = f"{hypothesis['score']:.6f} ||| {line}"
    if with_alignments == "hard":
        alignment = hypothesis["alignment"]
        sources = np.argmax(alignment, axis=-1) if len(alignment) else []
        pairs = (f"{source}-{target}" for target, source in enumerate(sources))
        line = f"{line} ||| {' '.join(pairs)}"
    elif with_alignments == "soft":
        vectors = (" ".join(f"{value:.6f}" for value in row) for row in hypothesis["alignment"])
        line = f"{line} ||| {' ; '.join(vectors)}"
    return line


@subcommand(None)
def translate(parser):
    """Translate sentences with an exported SavedModel or a trained model.

    Reads raw source sentences, one a line (UTF-8), from --input or stdin, and writes
    their translations, one a line in the same order, to --output or stdout. With
    --n-best N, each sentence gets N lines (its hypotheses, best first); with
    --with-scores, each line is "SCORE ||| TRANSLATION" (the penalized log-probability
    the beam search ranks by; higher is better), and with --with-alignments it ends with
    " ||| ALIGNMENT", as OpenNMT-tf prints them.

    With --saved-model, the SavedModel decides the decoding options (fixed at export);
    with --config (and --checkpoint) or --model, they come from the configuration's
    params section (beam_width, length_penalty, ...). Sentences are translated in
    batches of similar lengths; a progress bar is shown when --output is a file. Source
    tokens the source vocabulary lacks (read as <unk>) are counted, and a warning on stderr
    says how many, in how many sentences (a SavedModel counts those left after its
    maximum_source_length cut; one exported by kerasnmt 0.1.0 does not count them).

    --output FILE is written whole or not at all: the translations go to a temporary
    file beside it, renamed to FILE once it holds one line per source line (N with
    --n-best N); a crash, Ctrl-C or a line count that differs leaves an existing FILE
    as it was.
    """
    parser.add_argument(
        "--saved-model", metavar="DIR", help="an exported SavedModel (kerasnmt export)"
    )
    _add_model_arguments(parser)
    parser.add_argument("--input", "-i", metavar="FILE", help="source sentences (default: stdin)")
    parser.add_argument("--output", "-o", metavar="FILE", help="where to write (default: stdout)")
    parser.add_argument(
        "--n-best", type=positive_int,
        help="hypotheses to write for each sentence (default: infer.n_best of --config, else 1)",
    )
    parser.add_argument(
        "--with-scores", action="store_true",
        help="write SCORE ||| TRANSLATION (default: infer.with_scores of --config)",
    )
    parser.add_argument(
        "--with-alignments", choices=("hard", "soft"),
        help="append ' ||| ' and the alignment of each translation: hard (Pharaoh pairs "
        "source-target, the most attended source token of each target token) or soft (the "
        "attention vectors, ' ; '-separated); tokens are SentencePiece pieces or words "
        "(default: infer.with_alignments of --config; a SavedModel must be exported with "
        "--with-alignments)",
    )
    parser.add_argument(
        "--batch-size", type=positive_int,
        help="sentences translated together (default: infer.batch_size of --config, else "
        f"{TRANSLATION_BATCH_SIZE})",
    )
    _add_early_exit_argument(parser)
    _add_shortlist_argument(parser)
    _add_no_xla_argument(parser)

    def run(args):
        fixed_at_export = {"--early-exit": args.early_exit, "--shortlist": args.shortlist,
                           "--no-xla": args.no_xla}
        for option, given in fixed_at_export.items():
            if args.saved_model and given:
                parser.error(f"{option} does not apply to --saved-model (fixed at export)")
        if args.saved_model and (args.config or args.model or args.checkpoint):
            parser.error("--saved-model goes alone, without --config, --checkpoint or --model")
        if not args.saved_model:
            try:
                check_model_arguments(args.config, args.checkpoint, args.model)
            except OptionError as error:
                parser.error(str(error))
        if args.output:
            check_result_path(args.output, [args.input])
        translator, config = (None, None) if args.saved_model else load_model_for_decoding(
            args.config, args.checkpoint, args.model)
        infer = config["infer"] if config else {}
        n_best = args.n_best or infer.get("n_best", 1)
        with_scores = args.with_scores or infer.get("with_scores", False)
        with_alignments = args.with_alignments or infer.get("with_alignments")
        batch_size = args.batch_size or infer.get("batch_size", TRANSLATION_BATCH_SIZE)
        if args.saved_model:
            translate_batch = _SavedModelTranslator(args.saved_model, n_best,
                                                    bool(with_alignments))
        else:
            check_n_best(args.n_best, config)

            translate_batch = _CheckpointTranslator(
                translator, config, n_best, batch_size, args.early_exit, not args.no_xla,
                run_model.build_shortlist(config, translator.preprocessor, args.shortlist),
            )
        sentences = _read_sentences(args.input)
        unknown = None if args.saved_model else _unknown_source_tokens(translator, sentences)
        lines = (
            format_hypothesis(hypothesis, with_scores, with_alignments) + "\n"
            for n_best_list in _translate_in_order(sentences, translate_batch, batch_size,
                                                   progress=bool(args.output))
            for hypothesis in n_best_list
        )
        if not args.output:
            sys.stdout.writelines(lines)
        else:
            with result_file(args.output, expected_lines=len(sentences) * n_best) as stream:
                stream.writelines(lines)
            print(f"wrote {len(sentences)} translations to {args.output}")
        if args.saved_model and translate_batch.unknown_source_tokens is not None:
            unknown = np.concatenate(translate_batch.unknown_source_tokens + [np.zeros([0])])
        _report_unknown_source_tokens(unknown, translator)

    return run


def _unknown_source_tokens(translator, sentences, block=1024):
    """Each sentence's count of tokens the source vocabulary lacks (in blocks, to bound
    memory)."""
    from kerasnmt.decoding.source import unknown_source_tokens

    counts = [unknown_source_tokens(translator.preprocessor, sentences[start:start + block])
              for start in range(0, len(sentences), block)]
    return np.concatenate(counts) if counts else np.zeros([0], np.int64)


def _report_unknown_source_tokens(unknown, translator):
    """One line on stderr when source tokens were unknown: they are translated as `<unk>`,
    which loses them silently otherwise."""
    if unknown is None or not unknown.any():
        return
    from kerasnmt.layers import SentencePieceTokenizer

    tokens, sentences = int(unknown.sum()), int(np.count_nonzero(unknown))
    hint = ""
    # A SavedModel's tokenizer is in its graph (`translator` is None): no hint then.
    tokenizer = translator.preprocessor.source_tokenizer if translator else None
    if isinstance(tokenizer, SentencePieceTokenizer) and not tokenizer.byte_fallback:
        hint = ("; a SentencePiece vocabulary with byte fallback (kerasnmt build-vocab "
                "--sentencepiece, without --no-byte-fallback) spells unseen characters in "
                "bytes instead")
    print(f"{PROGRAM} translate: warning: {tokens} source token{'s' * (tokens != 1)} in "
          f"{sentences} of {len(unknown)} sentence{'s' * (len(unknown) != 1)} "
          f"{'were' if tokens != 1 else 'was'} not in the source vocabulary and read as "
          f"<unk>{hint}", file=sys.stderr)


def _translate_in_order(sentences, translate_batch, batch_size, progress):
    """Translates sentences sorted by length in blocks, yields results in input order."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()))
    block = batch_size if isinstance(translate_batch, _SavedModelTranslator) else batch_size * 8
    results = [None] * len(sentences)
    bar = None
    if progress:
        import keras

        bar = keras.utils.Progbar(len(sentences), unit_name="sentence")
    for start in range(0, len(order), block):
        indices = order[start:start + block]
        for index, result in zip(indices, translate_batch([sentences[i] for i in indices])):
            results[index] = result
        if bar is not None:
            bar.add(len(indices))
    return results


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
        doc = inspect.getdoc(function or add_arguments)
        subparser = subparsers.add_parser(
            add_arguments.__name__.replace("_", "-"),
            help=doc.splitlines()[0],
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        run = add_arguments(subparser)
        if function is not None:
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
    message = " ".join(str(error).split())
    print(f"{PROGRAM} {args.subcommand}: error: {message}", file=sys.stderr)
    return BAD_INPUT_STATUS


if __name__ == "__main__":
    sys.exit(main())
