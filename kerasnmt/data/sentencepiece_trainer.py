"""Train a SentencePiece model on a byte-budget sample of raw text files.

The sample follows Tensor2Tensor's `generate_lines_for_vocab`: from each file, read
every k-th line so the sample spreads over the whole file, and stop once the file's
budget is spent. Files are streamed, so memory depends on the budget, not on the
corpus size.
"""

import io

import sentencepiece

from kerasnmt.data.text_files import CorpusError, count_bytes, read_lines
from kerasnmt.data.result_file import result_file
from kerasnmt.data.vocabulary import SPECIAL_TOKENS, save_vocabulary
from kerasnmt.data.vocabulary_builder import pad_to_multiple

MODEL_TYPES = ("unigram", "bpe", "char", "word")
# With byte fallback a model also holds one piece per byte value, `<0x00>` ... `<0xFF>`.
BYTE_PIECES = tuple(f"<0x{value:02X}>" for value in range(256))
# SentencePiece's own <unk>, <s>, </s> take ids 0, 1, 2; they become the vocabulary's
# <blank>, <s>, </s>, so every other piece keeps its SentencePiece id.
_SPECIAL_IDS = {"unk_id": 0, "bos_id": 1, "eos_id": 2, "pad_id": -1}
_FIXED_OPTIONS = (*_SPECIAL_IDS, "vocab_size", "model_type", "character_coverage",
                  "sentence_iterator", "model_writer", "model_prefix", "input")


def sample_lines_with_byte_budget(path, file_byte_budget, errors="strict"):
    """Yields a sample of a file's lines that spreads over the whole file, within a budget.

    Tensor2Tensor's sampling, exactly: with `countermax = int(file_size /
    file_byte_budget / 2)`, skip `countermax` lines, take the next one, and so on
    (every `countermax + 1`-th line, the first taken being line `countermax + 1`).
    Each taken line is stripped of surrounding whitespace and its length is charged
    to the budget; before taking a line, stop if the budget is spent (`<= 0`). So
    the last line taken may overshoot the budget, and a file smaller than twice the
    budget is sampled from its first line on (`countermax = 0`). As in Tensor2Tensor
    under Python 3, `file_size` is in bytes (decompressed size for `.gz`) and a
    line's length is its number of characters (the same for ASCII text).

    Args:
        path: a UTF-8 text file, plain or `.gz`.
        file_byte_budget: the budget for this file, a positive number; `None` takes
            every line.
        errors: `"strict"` (raise on bytes that are not UTF-8, in any line read) or
            `"replace"`.

    Yields:
        `(line_number, stripped_text)` pairs, `line_number` counting from 1. Empty
        lines are yielded too (they cost nothing).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.en")
        >>> with open(path, "w") as file:  # 20 lines of 4 bytes: 80 bytes.
        ...     _ = file.write("".join(f"w{i:02d}\\n" for i in range(1, 21)))
        >>> # countermax = int(80 / 12 / 2) = 3: every 4th line, each costing 3 characters;
        >>> # after line 16 the budget is 12 - 4 * 3 = 0, so line 20 is not taken.
        >>> list(sample_lines_with_byte_budget(path, 12))
        [(4, 'w04'), (8, 'w08'), (12, 'w12'), (16, 'w16')]
    """
    if file_byte_budget is None:
        for line_number, line in read_lines(path, errors=errors):
            yield line_number, line.strip()
        return
    if not file_byte_budget > 0:
        raise ValueError(f"file_byte_budget must be positive or None, not {file_byte_budget}")
    budget = file_byte_budget
    countermax = int(count_bytes(path) / file_byte_budget / 2)
    counter = 0
    for line_number, line in read_lines(path, errors=errors):
        if counter < countermax:
            counter += 1
            continue
        if budget <= 0:
            return
        line = line.strip()
        budget -= len(line)
        counter = 0
        yield line_number, line


def train_sentencepiece(
    files,
    output_prefix,
    vocab_size,
    file_byte_budget=1e6,
    model_type="unigram",
    character_coverage=1.0,
    size_multiple=None,
    errors="strict",
    byte_fallback=True,
    **trainer_options,
):
    """Trains a SentencePiece model and writes it with an OpenNMT-format vocabulary.

    Writes `{output_prefix}.model` (the SentencePiece model) and
    `{output_prefix}.vocab`: `<blank>`, `<s>`, `</s>`, then every piece of the model
    except SentencePiece's `<unk>`, `<s>`, `</s>`, in SentencePiece id order, like
    OpenNMT-tf's `onmt-build-vocab --sentencepiece`. The model is trained with
    `<unk>`, `<s>`, `</s>` at ids 0, 1, 2 (and no padding piece), so each piece has
    the same id in the vocabulary as in the model, and `<unk>` maps to the
    vocabulary's out-of-vocabulary id.

    With `byte_fallback` (the default), SentencePiece's `byte_fallback=True`: the model
    and the vocabulary also hold the 256 byte pieces `<0x00>` ... `<0xFF>` (ids 3 to
    258, `BYTE_PIECES`), a character the sample never showed is encoded as the pieces of
    its UTF-8 bytes, and decoding joins them back into the character. Any string then
    survives tokenization, and no source token is unknown.

    The model learns from the non-empty lines of `sample_lines_with_byte_budget`
    applied to each file, fed to SentencePiece as an iterator: nothing is written
    to a temporary file and only the sample is held in memory.

    Args:
        files: paths of raw (untokenized) UTF-8 text files, plain or `.gz`.
        output_prefix: where to write, without the `.model` / `.vocab` suffix.
        vocab_size: the number of entries of the vocabulary file, the 3 special
            tokens included; also the number of pieces of the model. SentencePiece
            fails when the sample is too small to reach it, except for the `"char"`
            model type, which has one piece per character seen and takes
            `vocab_size` only as an upper bound.
        file_byte_budget: the sampling budget of each file; `None` uses every line
            (then SentencePiece holds the whole corpus in memory unless you pass
            `input_sentence_size`).
        model_type: `"unigram"`, `"bpe"`, `"char"` or `"word"`.
        character_coverage: the share of characters the model covers; 1.0 suits
            small alphabets, 0.9995 Chinese or Japanese.
        size_multiple: if set, `vocab_size` is first raised to the next value for
            which `vocab_size + 1` is a multiple of it (as OpenNMT-tf does), so the
            extra entries are real pieces; a model with fewer pieces (`"char"`) is
            padded with filler tokens as in `build_vocabulary`.
        errors: `"strict"` (raise on bytes that are not UTF-8) or `"replace"`.
        byte_fallback: encode unseen characters as byte pieces (see above); the 256
            byte pieces count in `vocab_size`, which must then exceed 259 plus the
            number of distinct characters of the sample. Not with the `"word"` model
            type, whose decoding leaves the `▁` of a word spelled in bytes in the text.
        **trainer_options: further `sentencepiece.SentencePieceTrainer.train`
            options, e.g. `input_sentence_size`, `num_threads`, `seed_sentencepiece_size`,
            `minloglevel` (0 shows SentencePiece's progress log; default 1, quiet).

    Returns:
        The vocabulary written, a list of strings in id order.

    Raises:
        CorpusError: when the sample holds no text (naming the files), when
            SentencePiece rejects it (e.g. `vocab_size` too large for it, or too small
            for the byte pieces and the characters), or on a line that is not UTF-8
            (naming the file and line).

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> with open(os.path.join(directory, "train.en"), "w") as file:
        ...     _ = file.write("the cat sat on the mat\\na dog ran in the park\\n" * 10)
        >>> vocabulary = train_sentencepiece(
        ...     [os.path.join(directory, "train.en")], os.path.join(directory, "sp"), 276)
        >>> vocabulary[:5], vocabulary[258], len(vocabulary)
        (['<blank>', '<s>', '</s>', '<0x00>', '<0x01>'], '<0xFF>', 276)
        >>> sorted(os.listdir(directory))
        ['sp.model', 'sp.vocab', 'train.en']
        >>> len(train_sentencepiece([os.path.join(directory, "train.en")],
        ...                         os.path.join(directory, "small"), 20, byte_fallback=False))
        20
    """
    files = list(files)
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type must be one of {MODEL_TYPES}, not {model_type!r}")
    if byte_fallback and model_type == "word":
        # SentencePiece decodes a word it spelled in bytes with its "▁" left in the text.
        raise ValueError("SentencePiece's word model does not round-trip byte fallback "
                         "(a word spelled in bytes keeps its '▁' when decoded): train it "
                         "without byte fallback (byte_fallback=False, --no-byte-fallback)")
    fixed = sorted(set(trainer_options) & set(_FIXED_OPTIONS))
    if fixed:
        raise ValueError(f"train_sentencepiece sets {', '.join(fixed)} itself")
    if size_multiple is not None:
        if size_multiple < 1:
            raise ValueError(f"size_multiple must be a positive integer, not {size_multiple}")
        vocab_size += -(vocab_size + 1) % size_multiple
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"vocab_size must be larger than {len(SPECIAL_TOKENS)} (it counts the special "
            f"tokens {', '.join(SPECIAL_TOKENS)}), not {vocab_size}"
        )
    sampled_lines = 0

    def sentences():
        nonlocal sampled_lines
        for path in files:
            for _, line in sample_lines_with_byte_budget(path, file_byte_budget, errors=errors):
                if line:
                    sampled_lines += 1
                    yield line

    model = io.BytesIO()
    options = {"minloglevel": 1, **trainer_options, **_SPECIAL_IDS}
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=sentences(), model_writer=model, vocab_size=vocab_size,
            model_type=model_type, character_coverage=character_coverage,
            byte_fallback=bool(byte_fallback), **options,
        )
    except RuntimeError as error:
        names = ", ".join(map(str, files)) or "no files"
        if sampled_lines == 0:
            raise CorpusError(f"no text to train SentencePiece on: {names} hold only "
                              "empty or whitespace-only lines") from None
        hint = ""
        if byte_fallback and "smaller than required_chars" in str(error):
            hint = (f" (byte fallback adds the {len(BYTE_PIECES)} byte pieces to the "
                    "special tokens and the characters: raise the size, or train without "
                    "byte fallback, --no-byte-fallback)")
        raise CorpusError(
            f"SentencePiece training on {sampled_lines} lines sampled from {names} "
            f"failed: {error}{hint}"
        ) from None
    processor = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    pieces = [processor.id_to_piece(i) for i in range(len(SPECIAL_TOKENS), len(processor))]
    vocabulary = list(SPECIAL_TOKENS) + pieces
    if size_multiple is not None:
        vocabulary = pad_to_multiple(vocabulary, size_multiple)
    save_vocabulary(vocabulary, f"{output_prefix}.vocab")
    with result_file(f"{output_prefix}.model", binary=True) as file:
        file.write(model.getvalue())
    return vocabulary

