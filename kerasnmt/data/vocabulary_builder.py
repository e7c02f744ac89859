"""Build an OpenNMT-format vocabulary by counting the tokens of tokenized text files."""

import collections

from kerasnmt.data.text_files import CorpusError, read_lines
from kerasnmt.data.vocabulary import SPECIAL_TOKENS, check_vocabulary

FILLER_TOKEN_FORMAT = "averyunlikelytoken{}"
# How far from a target size a vocabulary may be, in percent of it (Tensor2Tensor's 1%).
DEFAULT_TOLERANCE = 1.0


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


def min_frequency_for_target_size(counts, target_size, tolerance=DEFAULT_TOLERANCE):
    """The minimum frequency whose vocabulary comes closest to `target_size` entries.

    Tensor2Tensor's `build_to_target_size`, for counted tokens: bisection on the minimum
    count. The number of entries with minimum frequency `m`, `3 + #{tokens seen at least m
    times}`, only falls as `m` grows, so the bisection finds the smallest `m` whose
    vocabulary is no larger than `target_size`; that `m` or `m - 1` is the closest (a tie
    goes to `m - 1`, the larger vocabulary). Unlike `size`, which cuts the token list
    anywhere, the cut falls between counts: every token kept is more frequent than every
    token dropped.

    Args:
        counts: a mapping from token to count (the special tokens left out).
        target_size: the wanted number of entries, the 3 special tokens included.
        tolerance: the largest distance to `target_size` accepted, in percent of it
            (Tensor2Tensor accepts 1%).

    Returns:
        `(min_frequency, size)`: the minimum frequency and its number of entries.

    Raises:
        ValueError: no minimum frequency gives a vocabulary within the tolerance; the
            message names the closest size found.

    Examples:
        >>> counts = {"a": 9, "b": 5, "c": 5, "d": 2, "e": 1, "f": 1}
        >>> min_frequency_for_target_size(counts, 7)  # "a" to "d": seen at least twice
        (2, 7)
        >>> min_frequency_for_target_size(counts, 8, tolerance=15)  # 7 and 9: the larger
        (1, 9)
        >>> min_frequency_for_target_size(counts, 8)
        Traceback (most recent call last):
        ...
        ValueError: no minimum frequency gives a vocabulary within 1% of 8 entries: the closest is 9 entries (tokens seen at least 1 times); raise the tolerance, or give --size 8 to keep exactly the 5 most frequent tokens
    """
    if target_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"target_size must be larger than {len(SPECIAL_TOKENS)} (it counts "
                         f"the special tokens {', '.join(SPECIAL_TOKENS)}), not {target_size}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be a percentage of at least 0, not {tolerance}")
    values = list(counts.values())

    def size(min_frequency):
        return len(SPECIAL_TOKENS) + sum(count >= min_frequency for count in values)

    low, high = 1, max(values, default=0) + 1  # size(high) holds the special tokens only
    while low < high:
        middle = (low + high) // 2
        if size(middle) <= target_size:
            high = middle
        else:
            low = middle + 1
    candidates = [(abs(size(m) - target_size), m) for m in (low - 1, low) if m >= 1]
    _, best = min(candidates)
    found = size(best)
    if abs(found - target_size) * 100 > tolerance * target_size:
        raise ValueError(
            f"no minimum frequency gives a vocabulary within {tolerance:g}% of {target_size} "
            f"entries: the closest is {found} entries (tokens seen at least {best} times); "
            f"raise the tolerance, or give --size {target_size} to keep exactly the "
            f"{target_size - len(SPECIAL_TOKENS)} most frequent tokens"
        )
    return best, found


def build_vocabulary(
    files, size=None, min_frequency=1, size_multiple=None, tokenizer=None, errors="strict",
    target_size=None, tolerance=DEFAULT_TOLERANCE,
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
        target_size: instead of `size` and `min_frequency`, the minimum frequency whose
            vocabulary comes closest to this many entries (`min_frequency_for_target_size`,
            Tensor2Tensor's bisection).
        tolerance: with `target_size`, the largest distance to it accepted, in percent.

    Returns:
        The vocabulary, a list of strings in id order, ready for
        `kerasnmt.data.vocabulary.save_vocabulary`.

    Raises:
        CorpusError: when the files hold no token at all or none reaching
            `min_frequency` (naming them), or on a line that is not UTF-8 (naming
            the file and line).
        ValueError: `target_size` out of reach within `tolerance` (naming the closest
            size and the files).
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
        >>> build_vocabulary([path], target_size=5, tolerance=0)  # b: 3 times, a: 2, c: 1
        ['<blank>', '<s>', '</s>', 'b', 'a']
    """
    files = list(files)
    if size is not None and size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"size must be larger than {len(SPECIAL_TOKENS)} (it counts the special "
            f"tokens {', '.join(SPECIAL_TOKENS)}), not {size}"
        )
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be at least 1, not {min_frequency}")
    if target_size is not None and (size is not None or min_frequency != 1):
        raise ValueError("target_size chooses the minimum frequency itself: give no size "
                         "or min_frequency with it")
    counts = count_tokens(files, tokenizer=tokenizer, errors=errors)
    special_tokens_seen = [token for token in SPECIAL_TOKENS if counts.pop(token, 0)]
    if not counts:
        raise CorpusError(
            "no tokens to build a vocabulary from: "
            f"{', '.join(map(str, files)) or 'no files'} hold only empty or whitespace-only "
            "lines" + (f" and the special tokens {', '.join(special_tokens_seen)}"
                       if special_tokens_seen else "")
        )
    if target_size is not None:
        try:
            min_frequency, _ = min_frequency_for_target_size(counts, target_size, tolerance)
        except ValueError as error:
            raise ValueError(f"{', '.join(map(str, files))}: {error}") from None
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
