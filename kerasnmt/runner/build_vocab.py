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
    """Builds a vocabulary file from tokenized text, or trains a SentencePiece model.

    The arguments are the options of `kerasnmt build-vocab` (`kerasnmt build-vocab --help`
    says what each does); `OUTPUT.build.json` records the inputs, the options and the
    outputs, and a build that would give the same files is skipped (unless `force`).

    Args:
        files: input text files, UTF-8, plain or gzip.
        output: the vocabulary file; with `sentencepiece`, the prefix of `OUTPUT.model`
            and `OUTPUT.vocab`.
        size: the number of entries, counting <blank>, <s>, </s>; required with
            `sentencepiece`.
        min_frequency: keep only tokens seen at least this many times.
        size_multiple: make the number of entries + 1 a multiple of this.
        target_size: instead of `size` and `min_frequency`, the size that the minimum
            frequency found by bisection comes closest to.
        tolerance: with `target_size`, the largest distance accepted, in percent.
        sentencepiece: train a SentencePiece model on raw text.
        file_byte_budget: with `sentencepiece`, the characters sampled from each file
            (None: every line).
        model_type: with `sentencepiece`, its algorithm (default unigram).
        character_coverage: with `sentencepiece`, the share of characters covered.
        force: build even when the record matches.
        no_byte_fallback: with `sentencepiece`, train without byte fallback.
        utf8_errors: `"strict"` or `"replace"`, on bytes that are not UTF-8.

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
            "file_byte_budget": 1e6 if file_byte_budget is None else file_byte_budget,
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

