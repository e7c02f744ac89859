"""Build an OpenNMT-format vocabulary by counting the tokens of tokenized text files."""

import collections

from kerasnmt.data.text_files import CorpusError, read_lines
from kerasnmt.data.vocabulary import SPECIAL_TOKENS, check_vocabulary

FILLER_TOKEN_FORMAT = "averyunlikelytoken{}"


def count_tokens(files, tokenizer=None, errors="strict"):
    """Counts how often each token occurs in `files`, reading them line by line.

    Args:
        files: paths of text files (plain or `.gz`), one sentence a line.
        tokenizer: a callable `str -> list[str]`; by default `str.split()`, which
            splits on runs of whitespace (as OpenNMT-tf's `onmt-build-vocab`), so empty
            and whitespace-only lines give no tokens.
        errors: the policy for bytes that are not UTF-8, see
            `kerasnmt.data.text_files.read_lines`.

    Returns:
        A `collections.Counter` from token to count. Memory grows with the number of
        distinct tokens, not with the size of the corpus.
    """
    counts = collections.Counter()
    for path in files:
        for _, line in read_lines(path, errors=errors):
            counts.update(tokenizer(line) if tokenizer is not None else line.split())
    return counts


def pad_to_multiple(tokens, multiple):
    """Appends filler tokens until `len(tokens) + 1` is a multiple of `multiple`.

    The `+ 1` is the out-of-vocabulary id every lookup adds, so the embedding gets a
    number of rows that is a multiple of `multiple` (8 suits float16 and bfloat16
    matrix units). The fillers are named `averyunlikelytoken0`, `averyunlikelytoken1`,
    ..., as OpenNMT-tf's `Vocab.pad_to_multiple` names them; a name already in
    `tokens` is skipped.

    Args:
        tokens: the vocabulary, a list of strings.
        multiple: a positive integer.

    Returns:
        A new list: `tokens` followed by the fillers.

    Examples:
        >>> pad_to_multiple(["<blank>", "<s>", "</s>", "a", "b"], 4)
        ['<blank>', '<s>', '</s>', 'a', 'b', 'averyunlikelytoken0', 'averyunlikelytoken1']
    """
    if multiple < 1:
        raise ValueError(f"size_multiple must be a positive integer, not {multiple}")
    padded = list(tokens)
    present = set(padded)
    index = 0
    while (len(padded) + 1) % multiple != 0:
        filler = FILLER_TOKEN_FORMAT.format(index)
        if filler not in present:
            padded.append(filler)
        index += 1
    return padded


def build_vocabulary(
    files, size=None, min_frequency=1, size_multiple=None, tokenizer=None, errors="strict"
):
    """Builds a vocabulary from the frequent tokens of tokenized text files.

    The result starts with `<blank>`, `<s>`, `</s>` (ids 0, 1, 2), then the tokens
    by decreasing frequency, ties broken by increasing token (Unicode code point
    order, which is also UTF-8 byte order), so the same corpus always gives the
    same file. A token of the corpus that is itself `<blank>`, `<s>` or `</s>` is
    not counted again.

    Args:
        files: paths of tokenized text files (plain or `.gz`), one sentence a line.
            Empty and whitespace-only lines are allowed and contribute no tokens.
        size: the largest number of entries, the 3 special tokens included (as in
            OpenNMT-tf's `onmt-build-vocab --size`), the fillers added by
            `size_multiple` not included. `None` keeps every token.
        min_frequency: keep only tokens seen at least this many times.
        size_multiple: if set, pad with filler tokens so that the number of entries
            plus one (the out-of-vocabulary id) is a multiple of it, see
            `pad_to_multiple`.
        tokenizer: a callable `str -> list[str]`; by default `str.split()`.
        errors: `"strict"` (raise on bytes that are not UTF-8) or `"replace"`.

    Returns:
        The vocabulary, a list of strings in id order, ready for
        `kerasnmt.data.vocabulary.save_vocabulary`.

    Raises:
        CorpusError: when the files hold no token at all or none reaching
            `min_frequency` (naming them), or on a line that is not UTF-8 (naming
            the file and line).
        VocabularyError: when the tokenizer produced a token that cannot be a line
            of a vocabulary file (empty or containing whitespace).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.tok")
        >>> with open(path, "w") as file:
        ...     _ = file.write("b a b\\n\\nc b a\\n")
        >>> build_vocabulary([path])
        ['<blank>', '<s>', '</s>', 'b', 'a', 'c']
        >>> build_vocabulary([path], min_frequency=2, size_multiple=4)
        ['<blank>', '<s>', '</s>', 'b', 'a', 'averyunlikelytoken0', 'averyunlikelytoken1']
    """
    files = list(files)
    if size is not None and size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"size must be larger than {len(SPECIAL_TOKENS)} (it counts the special "
            f"tokens {', '.join(SPECIAL_TOKENS)}), not {size}"
        )
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be at least 1, not {min_frequency}")
    counts = count_tokens(files, tokenizer=tokenizer, errors=errors)
    special_tokens_seen = [token for token in SPECIAL_TOKENS if counts.pop(token, 0)]
    if not counts:
        raise CorpusError(
            "no tokens to build a vocabulary from: "
            f"{', '.join(map(str, files)) or 'no files'} hold only empty or whitespace-only "
            "lines" + (f" and the special tokens {', '.join(special_tokens_seen)}"
                       if special_tokens_seen else "")
        )
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    tokens = [token for token, count in ordered if count >= min_frequency]
    if not tokens:
        raise CorpusError(
            f"no token occurs at least {min_frequency} times in "
            f"{', '.join(map(str, files))} (the most frequent, {ordered[0][0]!r}, "
            f"occurs {ordered[0][1]} times)"
        )
    if size is not None:
        tokens = tokens[: size - len(SPECIAL_TOKENS)]
    vocabulary = list(SPECIAL_TOKENS) + tokens
    if size_multiple is not None:
        vocabulary = pad_to_multiple(vocabulary, size_multiple)
    return check_vocabulary(vocabulary, source="the built vocabulary")
