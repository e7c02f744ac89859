"""The `kerasnmt` command.

Each subcommand is one function decorated with `@subcommand`: it receives its
`argparse` parser, adds its arguments, and returns the function that runs it with the
parsed arguments. The function's name (underscores become dashes) names the
subcommand, the first line of its docstring is the one-line help and the whole
docstring the description shown by `kerasnmt SUBCOMMAND --help`.

Bad input (unreadable or malformed files, impossible option values) ends the command
with a one-line message on stderr and exit status 2, without a traceback.
"""

import argparse
import inspect
import os
import signal
import sys
import time

import numpy as np
import sentencepiece
import tensorflow as tf

from kerasnmt.config import ConfigError, load_config
from kerasnmt.export.formats import ALL_QUANTIZATIONS, EXPORT_FORMATS, FORMAT_OPTIONS
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.result_file import check_result_path, result_file
from kerasnmt.data.sentencepiece_trainer import MODEL_TYPES, train_sentencepiece
from kerasnmt.data.shards import write_shards
from kerasnmt.data.text_files import ERROR_POLICIES
from kerasnmt.data.vocabulary import load_vocabulary, save_vocabulary
from kerasnmt.data.vocabulary_builder import DEFAULT_TOLERANCE, build_vocabulary
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.evaluation import BLEU_TOKENIZERS, DEFAULT_LANGUAGE, check_moses_language, score_files

PROGRAM = "kerasnmt"
BAD_INPUT_STATUS = 2
INTERRUPTED_STATUS = 128 + signal.SIGINT  # the shell's status for a Ctrl-C
_SUBCOMMANDS = []


def subcommand(add_arguments):
    """Registers a subcommand builder `add_arguments(parser) -> run(args)`."""
    _SUBCOMMANDS.append(add_arguments)
    return add_arguments


def positive_int(text):
    """An `argparse` type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text}")
    return value


def byte_budget(text):
    """An `argparse` type: a positive number of bytes (`1e6` accepted), or `all`."""
    if text == "all":
        return None
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


@subcommand
def build_vocab(parser):
    """Build a vocabulary file from tokenized text, or train a SentencePiece model.

    Without --sentencepiece: count the tokens of tokenized text (split on whitespace;
    empty and whitespace-only lines add nothing) and write an OpenNMT-format
    vocabulary to --output: <blank>, <s>, </s>, then the tokens by decreasing
    frequency, ties by increasing token (code point order).
    --target-size N keeps the tokens seen at least M times, the minimum frequency M found
    by bisection so that the vocabulary comes closest to N entries (within --tolerance
    percent, else an error naming the closest size).

    With --sentencepiece: train a SentencePiece model on raw text sampled with
    Tensor2Tensor's byte budget and write OUTPUT.model and OUTPUT.vocab, the
    vocabulary listing <blank>, <s>, </s>, then the model's pieces in id order. The
    model has byte fallback (unless --no-byte-fallback): its 256 byte pieces <0x00> ...
    <0xFF> come first, a character the sample never showed is encoded as the pieces of
    its UTF-8 bytes and decoded back, so any string survives; --size counts them.

    Input files are UTF-8, one sentence a line, plain or gzip (name ending .gz).

    Get or build: OUTPUT.build.json records the inputs' SHA-256 digests, the options and
    the output files' digests; when they all still match, the command says so in one line
    and builds nothing (--force builds anyway). A changed input, option or output file is
    built again, with a line saying what changed.
    """
    parser.add_argument("files", nargs="+", metavar="FILE", help="input text files")
    parser.add_argument(
        "--output", "-o", required=True,
        help="the vocabulary file to write; with --sentencepiece, the prefix of "
        "OUTPUT.model and OUTPUT.vocab",
    )
    parser.add_argument(
        "--size", type=positive_int,
        help="the number of vocabulary entries, counting <blank>, <s>, </s> (as "
        "OpenNMT-tf's onmt-build-vocab); without --sentencepiece, keep only the SIZE - 3 "
        "most frequent tokens (default: keep all); required with --sentencepiece, "
        "where it is the SentencePiece vocabulary size",
    )
    parser.add_argument(
        "--min-frequency", type=positive_int, default=1,
        help="keep only tokens seen at least this many times (default: %(default)s; "
        "not with --sentencepiece)",
    )
    parser.add_argument(
        "--size-multiple", type=positive_int,
        help="make the number of entries + 1 (the unknown-token id) a multiple of this, "
        "e.g. 8 for float16: without --sentencepiece by appending the filler tokens "
        "averyunlikelytoken0, averyunlikelytoken1, ...; with --sentencepiece by raising "
        "--size",
    )
    parser.add_argument(
        "--target-size", type=positive_int, metavar="N",
        help="instead of --size and --min-frequency (not with --sentencepiece): keep the tokens "
        "seen at least M times, M found by bisection (Tensor2Tensor's build_to_target_size) "
        "so that the number of entries, counting <blank>, <s>, </s>, comes closest to N",
    )
    parser.add_argument(
        "--tolerance", type=float, metavar="PERCENT",
        help="with --target-size, the largest distance to N accepted, in percent of N; "
        "farther is an error naming the closest size (default: 1, as Tensor2Tensor)",
    )
    parser.add_argument(
        "--sentencepiece", action="store_true",
        help="train a SentencePiece model on raw (untokenized) text instead of counting tokens",
    )
    parser.add_argument(
        "--file-byte-budget", type=byte_budget, metavar="BYTES",
        help="with --sentencepiece, how much text to sample from each file: every k-th "
        "line with k chosen from the file size, stopping once BYTES characters are taken "
        "(Tensor2Tensor's sampling); 'all' takes every line (default: 1e6)",
    )
    parser.add_argument(
        "--model-type", choices=MODEL_TYPES,
        help="with --sentencepiece, the SentencePiece algorithm (default: unigram)",
    )
    parser.add_argument(
        "--character-coverage", type=float,
        help="with --sentencepiece, the share of characters the model covers (default: "
        "1.0; 0.9995 suits Chinese or Japanese)",
    )
    parser.add_argument(
        "--force", action="store_true",
        help="build even when OUTPUT was built from the same files and options (recorded in "
        "OUTPUT.build.json), which is otherwise reused",
    )
    parser.add_argument(
        "--no-byte-fallback", action="store_true",
        help="with --sentencepiece, train without byte fallback: characters the sample "
        "never showed become unknown tokens (kerasnmt translate reports them)",
    )
    parser.add_argument(
        "--utf8-errors", choices=ERROR_POLICIES, default="strict",
        help="on bytes that are not UTF-8: 'strict' stops with an error naming the file "
        "and line, 'replace' reads them as U+FFFD (default: %(default)s)",
    )

    def run(args):
        if args.sentencepiece:
            if args.size is None:
                parser.error("--sentencepiece needs --size")
            if args.min_frequency != 1:
                parser.error("--min-frequency does not apply to --sentencepiece")
            if args.target_size is not None or args.tolerance is not None:
                parser.error("--target-size and --tolerance do not apply to --sentencepiece")
            options = {
                "sentencepiece": sentencepiece.__version__,
                "size": args.size,
                "size_multiple": args.size_multiple,
                "file_byte_budget": (1e6 if args.file_byte_budget is None
                                     else args.file_byte_budget),
                "model_type": args.model_type or "unigram",
                "character_coverage": (1.0 if args.character_coverage is None
                                       else args.character_coverage),
                "byte_fallback": not args.no_byte_fallback,
                "utf8_errors": args.utf8_errors,
            }
            outputs = [f"{args.output}.model", f"{args.output}.vocab"]

            def build():
                return train_sentencepiece(
                    args.files, args.output, args.size,
                    file_byte_budget=options["file_byte_budget"],
                    model_type=options["model_type"],
                    character_coverage=options["character_coverage"],
                    size_multiple=args.size_multiple, errors=args.utf8_errors,
                    byte_fallback=options["byte_fallback"],
                )

            return _get_or_build_vocabulary(args, options, outputs, build)
        for option in ("file_byte_budget", "model_type", "character_coverage"):
            if getattr(args, option) is not None:
                parser.error(f"--{option.replace('_', '-')} needs --sentencepiece")
        if args.no_byte_fallback:
            parser.error("--no-byte-fallback needs --sentencepiece")
        if args.tolerance is not None and args.target_size is None:
            parser.error("--tolerance needs --target-size")
        if args.target_size is not None and (args.size is not None or args.min_frequency != 1):
            parser.error("--target-size chooses the minimum frequency: give no --size or "
                         "--min-frequency with it")
        if args.tolerance is not None and not args.tolerance >= 0:
            parser.error(f"--tolerance must be a percentage of at least 0, not {args.tolerance}")
        tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
        options = {
            "size": args.size,
            "min_frequency": args.min_frequency,
            "size_multiple": args.size_multiple,
            "target_size": args.target_size,
            "tolerance": tolerance if args.target_size is not None else None,
            "utf8_errors": args.utf8_errors,
        }

        def build():
            vocabulary = build_vocabulary(
                args.files, size=args.size, min_frequency=args.min_frequency,
                size_multiple=args.size_multiple, errors=args.utf8_errors,
                target_size=args.target_size, tolerance=tolerance,
            )
            save_vocabulary(vocabulary, args.output)
            return vocabulary

        return _get_or_build_vocabulary(args, options, [args.output], build)

    return run


def _get_or_build_vocabulary(args, options, outputs, build):
    """Tensor2Tensor's get-or-generate: says so in one line and returns when `outputs` were
    built from the same inputs and options (`kerasnmt.data.vocabulary_record`), else builds
    them (saying why when a record disagrees) and records how."""
    from kerasnmt.data.vocabulary_record import (
        describe_inputs,
        record_path,
        stale_reason,
        write_record,
    )

    inputs = describe_inputs(args.files)
    reason = None if args.force else stale_reason(args.output, inputs, options, outputs)
    names = " and ".join(outputs)
    if reason is None and not args.force:
        print(f"{names} up to date: built from the same files and options "
              f"({record_path(args.output)}); --force builds again")
        return
    if reason is not None and os.path.exists(record_path(args.output)):
        print(f"building {names} again: {reason}")
    vocabulary = build()
    write_record(args.output, inputs, options, outputs)
    print(f"wrote {names} ({len(vocabulary)} entries)")


@subcommand
def check_vocab(parser):
    """Check that vocabulary files follow the OpenNMT conventions.

    Each file must be UTF-8, one token a line, start with <blank>, <s>, </s> and hold
    no empty, whitespace-containing or repeated token. Prints the number of entries
    of each file; the first bad file stops the command with an error naming its line.
    """
    parser.add_argument("files", nargs="+", metavar="FILE", help="vocabulary files")

    def run(args):
        for path in args.files:
            tokens = load_vocabulary(path)
            print(f"{path}: {len(tokens)} entries, {len(tokens) + 1} ids with the "
                  "unknown token")

    return run


@subcommand
def evaluate(parser):
    """Score translations against references with BLEU and chrF2 (sacreBLEU).

    Both files are detokenized text, UTF-8, one sentence a line, line-aligned: score
    what a reader sees, not SentencePiece pieces or tokens (sacreBLEU tokenizes the
    text itself for BLEU). Prints corpus BLEU and chrF2, each with sacreBLEU's
    signature, which records the settings so that scores can be compared and
    reproduced; then BLEU as papers on Multi30k publish it ("BLEU tokenized lc"): both
    files lowercased, punctuation-normalized and tokenized with the Moses scripts for
    --language, then scored without further tokenization, with a signature that names
    these steps; then the detokenized BLEU's n-gram precisions, brevity penalty and
    lengths.
    """
    parser.add_argument("hypotheses", metavar="HYPOTHESES", help="the translations to score")
    parser.add_argument("references", metavar="REFERENCES", help="the reference translations")
    parser.add_argument(
        "--lowercase", action="store_true",
        help="compare lowercased text (recorded as case:lc in the signatures)",
    )
    parser.add_argument(
        "--tokenize", choices=BLEU_TOKENIZERS, default="13a",
        help="sacreBLEU's tokenizer for BLEU (default: %(default)s, sacreBLEU's own default)",
    )
    parser.add_argument(
        "--language", type=moses_language, default=DEFAULT_LANGUAGE,
        help="language of the translations, for the Moses tokenizer of the tokenized "
        "lowercased BLEU, as the Moses scripts' -l (default: %(default)s)",
    )

    def run(args):
        print(score_files(
            args.hypotheses, args.references, lowercase=args.lowercase, tokenize=args.tokenize,
            language=args.language,
        ))

    return run


@subcommand
def prepare(parser):
    """Tokenize and look up a parallel corpus once, into sharded TFRecord files.

    Runs the model's preprocessing (SentencePiece or whitespace tokenization, then the
    vocabulary lookup) over SOURCE and TARGET (and --alignments) and writes
    OUTPUT_DIR/NAME-00000-of-00016.tfrecord ... of tf.train.Example, plus
    OUTPUT_DIR/NAME.index.json, which training reads instead of the text
    (kerasnmt.data.training_dataset(shards=...)). Shard k holds the k-th slice of the
    corpus lines; --seed shuffles the examples inside each shard. The files are the
    same whatever --num-processes, and each run with the same seed writes the same
    bytes. Shards are written under temporary names and renamed when complete, and the
    index last: an interrupted run leaves no index, so no half-written corpus is read.

    On a terminal (stderr), a bar per writing process shows its examples, examples/s
    and ETA while it runs (process j writes shards j, j + N, ...); elsewhere nothing,
    or a line per process every --progress-every examples. The summary at the end gives
    the examples, the time and the rate.
    """
    parser.add_argument("source", metavar="SOURCE", help="source text, one sentence a line")
    parser.add_argument("target", metavar="TARGET", help="target text, line-aligned with SOURCE")
    parser.add_argument("--output-dir", "-o", required=True, help="where to write the shards")
    parser.add_argument("--name", default="train", help="file name prefix (default: %(default)s)")
    parser.add_argument("--alignments", metavar="FILE", help="Pharaoh alignments of the pairs")
    parser.add_argument(
        "--config", metavar="RUN_YML",
        help="take the vocabularies and SentencePiece models from this run configuration's "
        "data section (the preprocessing of the run that will train on data.train_shards)",
    )
    parser.add_argument("--source-vocabulary", help="OpenNMT-format vocabulary")
    parser.add_argument("--target-vocabulary", help="OpenNMT-format vocabulary")
    parser.add_argument(
        "--source-sentencepiece", metavar="MODEL",
        help="SentencePiece model for the source (default: split on whitespace)",
    )
    parser.add_argument(
        "--target-sentencepiece", metavar="MODEL",
        help="SentencePiece model for the target (default: split on whitespace)",
    )
    parser.add_argument(
        "--num-shards", type=positive_int, default=16, help="shard files (default: %(default)s)"
    )
    parser.add_argument(
        "--num-processes", type=positive_int, default=1,
        help="worker processes (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0,
        help="seed of the shuffle inside each shard (default: %(default)s)",
    )
    parser.add_argument(
        "--no-shuffle", action="store_true", help="keep the corpus order inside each shard"
    )
    parser.add_argument(
        "--progress-every", type=positive_int, metavar="N",
        help="when stderr is not a terminal, print each writing process's progress line "
        "every N examples (default: nothing until the summary; on a terminal a bar per "
        "process is always shown)",
    )

    def run(args):
        given = [name for name in ("source_vocabulary", "target_vocabulary",
                                   "source_sentencepiece", "target_sentencepiece")
                 if getattr(args, name) is not None]
        from kerasnmt.training_run import MODEL_KEYS, build_preprocessor, preprocessor_of

        if args.config is not None:
            if given:
                raise ValueError(f"--config takes the preprocessing from {args.config}: give no "
                                 + ", ".join("--" + name.replace("_", "-") for name in given))
            preprocessor = build_preprocessor(load_config(args.config, required=MODEL_KEYS))
        else:
            if args.source_vocabulary is None or args.target_vocabulary is None:
                raise ValueError("give --source-vocabulary and --target-vocabulary, or --config")
            preprocessor = preprocessor_of(
                args.source_vocabulary, args.target_vocabulary,
                args.source_sentencepiece, args.target_sentencepiece,
            )
        from kerasnmt.data.progress import WriterProgress

        started = time.monotonic()
        job_totals = []

        def progress(totals):
            job_totals.extend(totals)
            return WriterProgress(totals, sys.stderr, every=args.progress_every)

        index = write_shards(
            args.source, args.target, preprocessor, args.output_dir, name=args.name,
            alignment_file=args.alignments, num_shards=args.num_shards,
            num_processes=args.num_processes, seed=None if args.no_shuffle else args.seed,
            progress=progress,
        )
        seconds = time.monotonic() - started
        examples = sum(job_totals)
        print(f"wrote {args.num_shards} shards and {index}: {examples} examples in "
              f"{seconds:.1f} s ({examples / max(seconds, 1e-9):.0f} examples/s, "
              f"{len(job_totals)} process{'es' * (len(job_totals) != 1)})")

    return run


@subcommand
def train(parser):
    """Train a model from a YAML run configuration, resuming from its model_dir.

    The configuration (see docs/training.md) is checked first: every mistake (unknown
    key, wrong type, missing file, options that disagree) is reported with its key path
    and the command stops with status 2 before anything runs. Then: tokenizers and
    vocabularies (data), the Transformer (model), the training data pipeline (train),
    and training with a progress bar, until train.max_step optimizer steps (or
    --time-limit). The latest checkpoint of model_dir is restored first, so running the
    command again continues a run. Checkpoints go to model_dir every
    train.save_checkpoints_steps steps (the last train.keep_checkpoint_max kept),
    TensorBoard logs to model_dir/logs (tensorboard --logdir MODEL_DIR/logs). With
    data.eval_features_file and data.eval_labels_file, at every multiple of eval.steps
    steps (also in a resumed run) and at the end, the validation set is scored (loss,
    and BLEU and chrF of its translations, printed with the sacreBLEU signatures and
    appended to model_dir/evaluations.jsonl), eval.export_on_best exports the best
    model to model_dir/export/STEP, and eval.early_stopping ends training when the
    scores stop improving (OpenNMT-tf's condition). At the end,
    train.average_last_checkpoints checkpoints are averaged into model_dir/avg.
    SIGTERM (sent by `kill`, Slurm or Kubernetes before they kill a job) and Ctrl-C end
    training after the current step with a checkpoint, skip the final evaluation and
    averaging, and exit with status 143 (128 + 15) or 130 (128 + 2); a second Ctrl-C
    stops at once, still saving a checkpoint. A loss that becomes NaN or infinite ends
    the run with one line and status 1 (the last checkpoint is the one before it).
    Several GPUs are used together; with TF_CONFIG set, the command is one worker of a
    multi-worker run (a worker that dies ends the others with one line and status 1);
    train.tpu trains on a TPU (docs/training.md, Running on several devices).
    """
    parser.add_argument("--config", required=True, metavar="RUN_YML", help="the run configuration")
    parser.add_argument(
        "--time-limit", type=float, metavar="SECONDS",
        help="also stop after this many seconds of training (a checkpoint is saved)",
    )
    parser.add_argument(
        "--verbose", type=int, choices=(0, 1, 2), default=1,
        help="0: no progress display, 1: a progress bar (default), 2: one line per epoch "
        "(an epoch is eval.steps steps)",
    )

    def run(args):
        from kerasnmt.training import NonFiniteLossError
        from kerasnmt.training.distribution import WorkerLostError
        from kerasnmt.training_run import TRAINING_KEYS, train as train_run

        config = load_config(args.config, required=TRAINING_KEYS)
        try:
            result = train_run(config, time_limit=args.time_limit, verbose=args.verbose)
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


@subcommand
def average_checkpoints(parser):
    """Average the weights of the last checkpoints of a training run.

    Reads the configuration (for the model's shape), averages every trainable weight
    over the last --max-count readable checkpoints of model_dir (newest first, as
    OpenNMT-tf's average_checkpoints; a damaged one is reported and skipped) and writes
    the result as one checkpoint in --output (default: MODEL_DIR/avg), numbered with the
    newest averaged step. `kerasnmt export` and `kerasnmt translate` take it by default
    when it is the newest.
    """
    parser.add_argument("--config", required=True, metavar="RUN_YML", help="the run configuration")
    parser.add_argument(
        "--max-count", type=positive_int,
        help="checkpoints to average (default: train.average_last_checkpoints, or 1 when 0)",
    )
    parser.add_argument("--output", metavar="DIR", help="where to write (default: MODEL_DIR/avg)")

    def run(args):
        from kerasnmt.training_run import MODEL_KEYS, average_run_checkpoints

        if args.output and os.path.exists(args.output) and not os.path.isdir(args.output):
            raise ValueError(f"--output {args.output} is a file: average-checkpoints writes "
                             "a checkpoint directory")
        config = load_config(args.config, required=("model_dir",) + MODEL_KEYS)
        average_run_checkpoints(config, max_count=args.max_count, output_dir=args.output)

    return run


@subcommand
def convert(parser):
    """Convert a model trained by another toolkit into a kerasnmt run directory.

    `kerasnmt convert opennmt-tf`: an OpenNMT-tf 2.x Transformer (its YAML configuration,
    paths resolved from the working directory as onmt-main resolves them, and its latest
    checkpoint) becomes --output: run.yml, the vocabularies and a checkpoint at the same
    step, which translate --config, evaluate, export and train use as they are. See
    docs/migrating_from_opennmt_tf.md.
    """
    toolkits = parser.add_subparsers(dest="toolkit", metavar="TOOLKIT", required=True)
    opennmt_tf = toolkits.add_parser("opennmt-tf", help="an OpenNMT-tf 2.x Transformer")
    opennmt_tf.add_argument("--config", required=True, metavar="ONMT_YML",
                            help="the OpenNMT-tf run configuration")
    opennmt_tf.add_argument("--output", required=True, metavar="DIR",
                            help="the kerasnmt run directory to write")
    opennmt_tf.add_argument("--checkpoint", metavar="PATH",
                            help="a checkpoint or a directory of them (default: the latest "
                            "of the configuration's model_dir)")
    opennmt_tf.add_argument("--model-type", metavar="NAME",
                            help="the OpenNMT-tf catalogue model (Transformer, "
                            "TransformerRelative, TransformerBig, ...)")
    opennmt_tf.add_argument("--num-heads", type=positive_int, metavar="N",
                            help="attention heads (an absolute-position model's variables do "
                            "not tell them)")
    opennmt_tf.add_argument("--force", action="store_true",
                            help="replace an --output that is not empty")

    def run(args):
        from kerasnmt.converters import convert_opennmt_tf

        conversion = convert_opennmt_tf(args.config, args.output, checkpoint=args.checkpoint,
                                        model_type=args.model_type, num_heads=args.num_heads,
                                        force=args.force)
        print(conversion.summary(), flush=True)

    return run


@subcommand
def build_shortlist(parser):
    """Estimate a lexical shortlist, for faster decoding, from the training corpus.

    Tokenizes the training pairs (data.train_features_file, data.train_labels_file) with
    the configuration's tokenizers and vocabularies, estimates IBM Model 1 translation
    probabilities t(target token | source token) by EM, and keeps for each source token
    its --per-source most probable target tokens (of probability at least
    --minimum-probability), plus the --frequent most frequent target tokens, always
    allowed. Writes CTranslate2's vmap format (SOURCE<TAB>TARGET TARGET ..., the tokens
    always allowed on the line with an empty source). Set params.shortlist to it (or give
    it to export and translate with --shortlist): each batch is then decoded over the
    target tokens its sources allow (Marian's lexical shortlist). The tokenized corpus is
    held in memory: Multi30k's 29,000 pairs take 13 s and 1.5 GB.
    """
    parser.add_argument("--config", required=True, metavar="RUN_YML", help="the run configuration")
    parser.add_argument("--output", "-o", required=True, help="the shortlist file to write")
    parser.add_argument(
        "--per-source", type=positive_int, default=20,
        help="target tokens kept per source token (default: %(default)s)",
    )
    parser.add_argument(
        "--frequent", type=int, default=100,
        help="most frequent target tokens always allowed (default: %(default)s)",
    )
    parser.add_argument(
        "--minimum-probability", type=float, default=0.001,
        help="drop translations less probable than this (default: %(default)s)",
    )
    parser.add_argument(
        "--iterations", type=positive_int, default=5,
        help="EM iterations of IBM Model 1 (default: %(default)s)",
    )

    def run(args):
        from kerasnmt.data.lexical_shortlist import LexicalShortlist, corpus_ids
        from kerasnmt.training_run import MODEL_KEYS, build_preprocessor

        config = load_config(args.config, required=MODEL_KEYS + ("data.train_features_file",))
        preprocessor = build_preprocessor(config)
        data = config["data"]
        sources, targets = corpus_ids(
            data["train_features_file"], data["train_labels_file"], preprocessor
        )
        shortlist = LexicalShortlist.estimate(
            sources, targets, per_source=args.per_source, frequent=args.frequent,
            minimum_probability=args.minimum_probability, iterations=args.iterations,
        )
        shortlist.save(args.output, preprocessor.source_vocabulary,
                       preprocessor.target_vocabulary)
        print(f"{len(sources)} sentence pairs: {len(shortlist.candidates)} source tokens, "
              f"{sum(map(len, shortlist.candidates.values()))} translations, "
              f"{len(shortlist.always)} target tokens always allowed; wrote {args.output}")

    return run


def _load_model_for_decoding(args):
    """The `Translator` (and configuration, or None) that --config/--checkpoint or
    --model name, in float32 whatever precision it trained in (as its export decodes:
    `kerasnmt.decoding.precision`)."""
    from kerasnmt.decoding import float32_translator
    from kerasnmt.training_run import MODEL_KEYS, restore_translator

    config = load_config(args.config, required=MODEL_KEYS) if args.config else None
    if args.model:
        import keras

        if not os.path.isfile(args.model):
            raise OSError(f"{args.model}: no such file")
        translator = keras.saving.load_model(args.model, compile=False)
        print(f"Loaded {args.model}", file=sys.stderr)
    else:
        translator, checkpoint = restore_translator(config, args.checkpoint)
        print(f"Restored {checkpoint}", file=sys.stderr)
    return float32_translator(translator), config


def _sampler(config, n_best, early_exit=False):
    from kerasnmt.decoding import BeamSampler
    from kerasnmt.training_run import build_sampler

    if config is None:
        return BeamSampler(n_best=n_best, early_exit=early_exit)
    sampler = build_sampler(config, n_best=n_best)
    if early_exit:
        sampler = BeamSampler.from_config(dict(sampler.get_config(), early_exit=True))
    return sampler


def _check_n_best(n_best, config):
    """Refuses an `--n-best` that the configuration's beam cannot give."""
    from kerasnmt.decoding.option_rules import decoding_option_problems

    if n_best and config:
        problems = decoding_option_problems(
            {"n_best": n_best, "beam_size": config["params"]["beam_width"]},
            {"n_best": "--n-best", "beam_size": "params.beam_width"})
        if problems:
            raise ValueError(problems["n_best"])


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


def _check_model_arguments(parser, args):
    if not args.config and not args.model:
        parser.error("give --config (a trained run) or --model (a .keras file)")
    if args.checkpoint and (args.model or not args.config):
        parser.error("--checkpoint goes with --config, not with --model")


@subcommand
def export(parser):
    """Export a trained model as one SavedModel that translates raw text, or to CTranslate2.

    The SavedModel (see docs/serving.md) takes a batch of raw sentences and returns
    their translations: tokenization, vocabulary lookup, beam search (compiled with XLA
    for a few source widths and batch sizes) and detokenization all run inside it. Its
    signatures: serving_default (source -> translation, score) and n_best (source ->
    translations, scores, log_probs[, alignments]). The decoding options are those of
    the configuration's params section (beam_width, length_penalty, coverage_penalty,
    sampling_topk, sampling_temperature, num_hypotheses, maximum_decoding_length,
    minimum_decoding_length, replace_unknown_target, compact_batch, early_exit,
    shortlist, shortlist_width), fixed in the export. Sources are cut to --maximum-source-length
    tokens. It decodes in float32, whatever train.mixed_precision the model trained in.
    With --quantization int8, the Dense layers' weights are Keras int8 (the
    embeddings stay float). The directory is written under a temporary name and renamed, so an
    interrupted export leaves an existing one intact. Load it with TensorFlow alone (plus
    `import tensorflow_text` for SentencePiece models), or serve it with TF Serving, which
    runs its warm-up requests (one of every compiled shape) before serving it.

    With --format ctranslate2 (pip install 'kerasnmt[ctranslate2]'), OUTPUT is a
    CTranslate2 model directory instead (see docs/ctranslate2.md): the weights (quantized
    with --quantization), the vocabularies, the SentencePiece models and
    translate_options.json, the translate_batch arguments of the same decoding options.
    A model option CTranslate2 cannot express is refused before anything is written, and
    an OUTPUT that is not an empty directory is replaced only with --force.

    With --format keras-hub, OUTPUT is a keras-hub preset directory (see
    docs/keras_hub.md): keras_hub.models.Seq2SeqLM.from_preset(OUTPUT), in a process that
    has imported kerasnmt, loads it, and its generate translates with the same decoding
    options as kerasnmt translate --config. An OUTPUT that is not an empty directory is
    replaced only with --force.
    """
    parser.add_argument(
        "output", metavar="OUTPUT",
        help="the SavedModel directory to write (replaced if it exists); with "
        "--next-version, the model base path in which version OUTPUT/N is written; with "
        "--format ctranslate2, the CTranslate2 model directory; with --format keras-hub, "
        "the preset directory",
    )
    _add_model_arguments(parser)
    parser.add_argument(
        "--format", choices=sorted(EXPORT_FORMATS), default="savedmodel",
        help="; ".join(f"{name}: {export_format.description}"
                       for name, export_format in EXPORT_FORMATS.items())
        + " (default: savedmodel)",
    )
    parser.add_argument(
        "--quantization", choices=ALL_QUANTIZATIONS,
        help="SavedModel: int8, Keras int8 weights for the Dense layers (the embeddings "
        "stay float); with --format ctranslate2: CTranslate2's weight type (default: "
        "float32 as trained)",
    )
    parser.add_argument(
        "--force", action="store_true",
        help="with --format ctranslate2 or keras-hub: replace an OUTPUT that is not an "
        "empty directory (a SavedModel export always replaces OUTPUT)",
    )
    parser.add_argument(
        "--next-version", action="store_true",
        help="write OUTPUT/N with N one more than the highest version number in OUTPUT "
        "(TF Serving's layout; 1 for a new OUTPUT)",
    )
    parser.add_argument(
        "--n-best", type=positive_int,
        help="hypotheses the n_best signature returns (default: params.num_hypotheses; "
        "at most params.beam_width)",
    )
    parser.add_argument(
        "--with-alignments", action="store_true",
        help="add the attention alignments to the n_best signature",
    )
    parser.add_argument(
        "--maximum-source-length", type=positive_int,
        help="sources are cut to this many tokens (default: train.maximum_features_length, "
        "else 256)",
    )
    _add_early_exit_argument(parser)
    _add_shortlist_argument(parser)
    _add_no_xla_argument(parser)
    parser.add_argument(
        "--no-warmup", action="store_true",
        help="SavedModel: do not write TF Serving's warm-up file "
        "(assets.extra/tf_serving_warmup_requests: a request of every compiled shape, run "
        "when the model is loaded)",
    )

    def run(args):
        from kerasnmt.export import export_translator, next_version_path, quantize_dense_layers
        from kerasnmt.training_run import build_shortlist

        _check_model_arguments(parser, args)
        export_format = EXPORT_FORMATS[args.format]
        refusals = export_format.refusals({option: getattr(args, option)
                                           for option in FORMAT_OPTIONS})
        refusals.append(export_format.quantization_refusal(args.quantization))
        if any(refusals):
            parser.error("; ".join(filter(None, refusals)))
        if args.format == "ctranslate2":
            return _export_ctranslate2(parser, args)
        if args.format == "keras-hub":
            return _export_keras_hub(args)
        translator, config = _load_model_for_decoding(args)
        if args.quantization:
            quantize_dense_layers(translator, args.quantization)
        _check_n_best(args.n_best, config)
        options, n_best = _export_options(args, config)
        path = next_version_path(args.output) if args.next_version else args.output
        export_translator(
            translator, path, sampler=_sampler(config, n_best, args.early_exit),
            with_alignments=args.with_alignments, jit_compile=not args.no_xla,
            shortlist=build_shortlist(config, translator.preprocessor, args.shortlist),
            warmup=not args.no_warmup,
            **options,
        )
        print(f"Exported to {path}")

    return run


def _export_options(args, config):
    """The options both export formats take from the configuration (or None) and the
    command line, and the number of hypotheses."""
    from kerasnmt.export import DEFAULT_MAXIMUM_SOURCE_LENGTH
    from kerasnmt.training_run import decoding_options

    options = decoding_options(config) if config is not None else {}
    if args.maximum_source_length:
        options["maximum_source_length"] = args.maximum_source_length
    options.setdefault("maximum_source_length", DEFAULT_MAXIMUM_SOURCE_LENGTH)
    options["replace_unknown_target"] = bool(
        config and config["params"]["replace_unknown_target"])
    n_best = args.n_best or (config["params"]["num_hypotheses"] if config else 1)
    return options, n_best


def _export_ctranslate2(parser, args):
    """`kerasnmt export --format ctranslate2`: the checks that need no model first."""
    from kerasnmt.export.ctranslate2 import check_output, export_ctranslate2

    try:
        import ctranslate2  # noqa: F401 (checked before the model is read)
    except ImportError:
        parser.error("--format ctranslate2 needs the ctranslate2 package: pip install "
                     "'kerasnmt[ctranslate2]'")
    check_output(args.output, args.force)
    translator, config = _load_model_for_decoding(args)
    _check_n_best(args.n_best, config)
    if config is not None and config["params"]["shortlist"]:
        raise ValueError(
            "params.shortlist cannot be exported to CTranslate2 (its vocabulary maps decode "
            "over other target tokens, see docs/ctranslate2.md): remove it from the "
            "configuration to export the model without it"
        )
    options, n_best = _export_options(args, config)
    export_ctranslate2(translator, args.output, quantization=args.quantization,
                       sampler=_sampler(config, n_best), force=args.force, **options)
    print(f"Exported to {args.output}")


def _export_keras_hub(args):
    """`kerasnmt export --format keras-hub`: a preset whose `generate` decodes as
    `kerasnmt translate` does with the same configuration."""
    from kerasnmt.export import save_preset
    from kerasnmt.export.directories import check_output

    check_output(args.output, args.force)
    translator, config = _load_model_for_decoding(args)
    _check_n_best(args.n_best, config)
    if config is not None and config["params"]["shortlist"]:
        raise ValueError("params.shortlist cannot be written in a keras-hub preset (a "
                         "vocabulary map file): remove it from the configuration to export "
                         "the model without it")
    options, n_best = _export_options(args, config)
    save_preset(translator, args.output, sampler=_sampler(config, n_best, args.early_exit),
                force=args.force, jit_compile=not args.no_xla, **options)
    print(f"Exported to {args.output}")


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
        self.sampler = _sampler(config, max(n_best, config["params"]["num_hypotheses"])
                                if config else n_best, early_exit)
        self.n_best = n_best
        self.batch_size = batch_size
        self.replace_unknown_target = bool(config and config["params"]["replace_unknown_target"])
        self.shortlist = shortlist
        self.jit_compile = jit_compile
        from kerasnmt.training_run import decoding_options

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


@subcommand
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
            _check_model_arguments(parser, args)
        if args.output:
            check_result_path(args.output, [args.input])
        translator, config = (None, None) if args.saved_model else _load_model_for_decoding(args)
        infer = config["infer"] if config else {}
        n_best = args.n_best or infer.get("n_best", 1)
        with_scores = args.with_scores or infer.get("with_scores", False)
        with_alignments = args.with_alignments or infer.get("with_alignments")
        batch_size = args.batch_size or infer.get("batch_size", TRANSLATION_BATCH_SIZE)
        if args.saved_model:
            translate_batch = _SavedModelTranslator(args.saved_model, n_best,
                                                    bool(with_alignments))
        else:
            _check_n_best(args.n_best, config)
            from kerasnmt.training_run import build_shortlist

            translate_batch = _CheckpointTranslator(
                translator, config, n_best, batch_size, args.early_exit, not args.no_xla,
                build_shortlist(config, translator.preprocessor, args.shortlist),
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


def make_parser():
    """The `kerasnmt` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description="Keras-native neural machine translation."
    )
    subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
    for add_arguments in _SUBCOMMANDS:
        doc = inspect.cleandoc(add_arguments.__doc__)
        subparser = subparsers.add_parser(
            add_arguments.__name__.replace("_", "-"),
            help=doc.splitlines()[0],
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        subparser.set_defaults(run=add_arguments(subparser))
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
