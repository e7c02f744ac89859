"""`kerasnmt translate`: a file of sentences translated in order, written whole or not at
all, with an exported SavedModel or a trained model."""

import os
import sys

import numpy as np

from kerasnmt.data.result_file import check_result_path, result_file
from kerasnmt.data.text_files import read_stream_lines
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.evaluation import read_lines
from kerasnmt.runner.checkpoint_translator import CheckpointTranslator
from kerasnmt.runner.decoding_compilation import check_compilation_options, compiles_decoding
from kerasnmt.runner.decoding_model import (
    check_model_arguments,
    check_n_best,
    load_model_for_decoding,
)
from kerasnmt.runner.hypothesis_format import format_hypothesis
from kerasnmt.runner.option_error import OptionError
from kerasnmt.runner.run_model import build_shortlist
from kerasnmt.runner.saved_model_translator import SavedModelTranslator
from kerasnmt.runner.unknown_token_report import (
    count_unknown_source_tokens,
    report_unknown_source_tokens,
)


def translate_file(input=None, output=None, saved_model=None, config=None, checkpoint=None,
                   model=None, n_best=None, with_scores=False, with_alignments=None,
                   batch_size=None, early_exit=False, shortlist=None, no_xla=False, xla=False):
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
    as it was. An --output that is the --input, a directory or in a missing directory is
    refused before anything is read.

    A trained model's decoding is compiled with XLA from 500 sentences, or when
    KERASNMT_XLA_CACHE is set; a smaller file is decoded in graph mode, which starts
    sooner (the same translations; --xla and --no-xla choose).

    Args:
        input: source sentences (default: stdin)
        output: where to write (default: stdout)
        saved_model: an exported SavedModel (kerasnmt export)
        config: the run configuration: the model's shape and vocabularies, and the
            decoding options (params); the weights come from its model_dir (a path, or a
            configuration `load_config` returned)
        checkpoint: with --config: a checkpoint or a directory of them, as for export
        model: a .keras file instead of a checkpoint, as for export
        n_best: hypotheses to write for each sentence (default: infer.n_best of --config,
            else 1)
        with_scores: write SCORE ||| TRANSLATION (default: infer.with_scores of --config)
        with_alignments: append ' ||| ' and the alignment of each translation: hard
            (Pharaoh pairs source-target, the most attended source token of each target
            token) or soft (the attention vectors, ' ; '-separated); tokens are
            SentencePiece pieces or words (default: infer.with_alignments of --config; a
            SavedModel must be exported with --with-alignments)
        batch_size: sentences translated together (default: infer.batch_size of
            --config, else 32)
        early_exit: with a trained model (not --saved-model): as for export
        shortlist: with a trained model (not --saved-model): as for export
        no_xla: with a trained model (not --saved-model): do not compile the decoding
            with XLA
        xla: with a trained model (not --saved-model): compile the decoding with XLA
            whatever the number of sentences

    Returns:
        The number of sentences translated.

    Raises:
        OptionError: options that do not go together.
        ValueError: an --output refused, or bad input naming its file and line.

    Examples:
        >>> translate_file(saved_model="exported", config="run.yml")
        Traceback (most recent call last):
        ...
        kerasnmt.runner.option_error.OptionError: --saved-model goes alone, without --config, --checkpoint or --model
    """
    fixed_at_export = {"--early-exit": early_exit, "--shortlist": shortlist,
                       "--no-xla": no_xla, "--xla": xla}
    for option, given in fixed_at_export.items():
        if saved_model and given:
            raise OptionError(f"{option} does not apply to --saved-model (fixed at export)")
    if saved_model and (config or model or checkpoint):
        raise OptionError("--saved-model goes alone, without --config, --checkpoint or --model")
    if not saved_model:
        check_model_arguments(config, checkpoint, model)
        check_compilation_options(xla, no_xla)
    if output:
        check_result_path(output, [input])
    translator, config = ((None, None) if saved_model
                          else load_model_for_decoding(config, checkpoint, model))
    infer = config["infer"] if config else {}
    given_n_best, n_best = n_best, n_best or infer.get("n_best", 1)
    with_scores = with_scores or infer.get("with_scores", False)
    with_alignments = with_alignments or infer.get("with_alignments")
    batch_size = batch_size or infer.get("batch_size", TRANSLATION_BATCH_SIZE)
    if saved_model:
        translate_batch = SavedModelTranslator(saved_model, n_best, bool(with_alignments))
        sentences = read_sentences(input)
    else:
        check_n_best(given_n_best, config)
        shortlist = build_shortlist(config, translator.preprocessor, shortlist)
        # Whether XLA pays depends on how many sentences there are.
        sentences = read_sentences(input)
        translate_batch = CheckpointTranslator(
            translator, config, n_best, batch_size, early_exit,
            compiles_decoding(len(sentences), xla, no_xla), shortlist,
        )
    unknown = None if saved_model else count_unknown_source_tokens(translator, sentences)
    lines = (
        format_hypothesis(hypothesis, with_scores, with_alignments) + "\n"
        for n_best_list in translate_in_order(sentences, translate_batch, batch_size,
                                              progress=bool(output))
        for hypothesis in n_best_list
    )
    if not output:
        write_to_stdout(lines)
    else:
        with result_file(output, expected_lines=len(sentences) * n_best) as stream:
            stream.writelines(lines)
        print(f"wrote {len(sentences)} translations to {output}")
    if saved_model and translate_batch.unknown_source_tokens is not None:
        unknown = np.concatenate(
            [np.zeros([0], np.int32)] + translate_batch.unknown_source_tokens)
    report_unknown_source_tokens(unknown, translator)
    return len(sentences)


def write_to_stdout(lines):
    """Writes `lines` to stdout, and stops quietly when its reader has stopped reading
    (`kerasnmt translate ... | head`), as Unix tools do: stdout then goes to /dev/null, so
    that the flush at exit does not fail again."""
    try:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def read_sentences(path):
    """The lines of a UTF-8 file, or of stdin for None or `-`."""
    if path and path != "-":
        return read_lines(path)
    return [text for _, text in read_stream_lines(sys.stdin.buffer, "stdin")]


def translate_in_order(sentences, translate_batch, batch_size, progress):
    """Translates sentences sorted by length in blocks, returns the results in input
    order (a SavedModel takes a batch at a time, a `Translator` several)."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()))
    block = batch_size if isinstance(translate_batch, SavedModelTranslator) else batch_size * 8
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
