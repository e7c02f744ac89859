"""`kerasnmt build-vocab`: a vocabulary counted from tokenized text, or a SentencePiece
model trained on raw text, each built again only when its inputs or options changed."""

import sentencepiece as sentencepiece_library

from kerasnmt.data.sentencepiece_trainer import train_sentencepiece
from kerasnmt.data.vocabulary import save_vocabulary
from kerasnmt.data.vocabulary_builder import DEFAULT_TOLERANCE, build_vocabulary
from kerasnmt.data.vocabulary_record import get_or_build
from kerasnmt.runner.option_error import OptionError


def build_vocab(files, output, size=None, min_frequency=1, size_multiple=None,
                target_size=None, tolerance=None, sentencepiece=False, file_byte_budget=None,
                model_type=None, character_coverage=None, force=False,
                no_byte_fallback=False, utf8_errors="strict"):
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

    Args:
        files: input text files
        output: the vocabulary file to write; with --sentencepiece, the prefix of
            OUTPUT.model and OUTPUT.vocab
        size: the number of vocabulary entries, counting <blank>, <s>, </s> (as
            OpenNMT-tf's onmt-build-vocab); without --sentencepiece, keep only the SIZE - 3
            most frequent tokens (default: keep all); required with --sentencepiece, where
            it is the SentencePiece vocabulary size
        min_frequency: keep only tokens seen at least this many times (not with
            --sentencepiece)
        size_multiple: make the number of entries + 1 (the unknown-token id) a multiple
            of this, e.g. 8 for float16: without --sentencepiece by appending the filler
            tokens averyunlikelytoken0, averyunlikelytoken1, ...; with --sentencepiece by
            raising --size
        target_size: instead of --size and --min-frequency (not with --sentencepiece):
            keep the tokens seen at least M times, M found by bisection (Tensor2Tensor's
            build_to_target_size) so that the number of entries, counting <blank>, <s>,
            </s>, comes closest to N
        tolerance: with --target-size, the largest distance to N accepted, in percent of
            N; farther is an error naming the closest size (default: 1, as Tensor2Tensor)
        sentencepiece: train a SentencePiece model on raw (untokenized) text instead of
            counting tokens
        file_byte_budget: with --sentencepiece, how much text to sample from each file:
            every k-th line with k chosen from the file size, stopping once BYTES
            characters are taken (Tensor2Tensor's sampling); 'all' takes every line
            (default: 1e6)
        model_type: with --sentencepiece, the SentencePiece algorithm (default: unigram)
        character_coverage: with --sentencepiece, the share of characters the model
            covers (default: 1.0; 0.9995 suits Chinese or Japanese)
        force: build even when OUTPUT was built from the same files and options
            (recorded in OUTPUT.build.json), which is otherwise reused
        no_byte_fallback: with --sentencepiece, train without byte fallback: characters
            the sample never showed become unknown tokens (kerasnmt translate reports
            them)
        utf8_errors: on bytes that are not UTF-8: 'strict' stops with an error naming
            the file and line, 'replace' reads them as U+FFFD

    Raises:
        OptionError: options that do not go together.
        ValueError: an input problem, naming the file and line.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> corpus, vocabulary = os.path.join(directory, "train"), os.path.join(directory, "v")
        >>> with open(corpus, "w", encoding="utf-8") as file:
        ...     _ = file.write("a b a\\n")
        >>> build_vocab([corpus], vocabulary)  # doctest: +ELLIPSIS
        wrote /.../v (5 entries)
        >>> build_vocab([corpus], vocabulary)  # doctest: +ELLIPSIS
        /.../v up to date: built from the same files and options (/.../v.build.json); --force builds again
        >>> build_vocab([corpus], vocabulary, tolerance=2)
        Traceback (most recent call last):
        ...
        kerasnmt.runner.option_error.OptionError: --tolerance needs --target-size
    """
    if sentencepiece:
        if size is None:
            raise OptionError("--sentencepiece needs --size")
        if min_frequency != 1:
            raise OptionError("--min-frequency does not apply to --sentencepiece")
        if target_size is not None or tolerance is not None:
            raise OptionError("--target-size and --tolerance do not apply to --sentencepiece")
        options = {
            "sentencepiece": sentencepiece_library.__version__,
            "size": size,
            "size_multiple": size_multiple,
            "file_byte_budget": _sampled_bytes(file_byte_budget),
            "model_type": model_type or "unigram",
            "character_coverage": 1.0 if character_coverage is None else character_coverage,
            "byte_fallback": not no_byte_fallback,
            "utf8_errors": utf8_errors,
        }
        outputs = [f"{output}.model", f"{output}.vocab"]

        def build():
            return train_sentencepiece(
                files, output, size,
                file_byte_budget=options["file_byte_budget"],
                model_type=options["model_type"],
                character_coverage=options["character_coverage"],
                size_multiple=size_multiple, errors=utf8_errors,
                byte_fallback=options["byte_fallback"],
            )

        return get_or_build(files, output, options, outputs, build, force=force)
    given = {"file_byte_budget": file_byte_budget, "model_type": model_type,
             "character_coverage": character_coverage}
    for option, value in given.items():
        if value is not None:
            raise OptionError(f"--{option.replace('_', '-')} needs --sentencepiece")
    if no_byte_fallback:
        raise OptionError("--no-byte-fallback needs --sentencepiece")
    if tolerance is not None and target_size is None:
        raise OptionError("--tolerance needs --target-size")
    if target_size is not None and (size is not None or min_frequency != 1):
        raise OptionError("--target-size chooses the minimum frequency: give no --size or "
                          "--min-frequency with it")
    if tolerance is not None and not tolerance >= 0:
        raise OptionError(f"--tolerance must be a percentage of at least 0, not {tolerance}")
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    options = {
        "size": size,
        "min_frequency": min_frequency,
        "size_multiple": size_multiple,
        "target_size": target_size,
        "tolerance": tolerance if target_size is not None else None,
        "utf8_errors": utf8_errors,
    }

    def build():
        vocabulary = build_vocabulary(
            files, size=size, min_frequency=min_frequency, size_multiple=size_multiple,
            errors=utf8_errors, target_size=target_size, tolerance=tolerance,
        )
        save_vocabulary(vocabulary, output)
        return vocabulary

    return get_or_build(files, output, options, [output], build, force=force)


def _sampled_bytes(file_byte_budget):
    """The budget `train_sentencepiece` takes: 1e6 characters a file by default, None for
    every line (`"all"`)."""
    if file_byte_budget is None:
        return 1e6
    return None if file_byte_budget == "all" else file_byte_budget
