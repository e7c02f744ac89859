"""OpenNMT-format vocabulary files: one token a line, starting with `<blank>`, `<s>`, `</s>`.

The unknown token (`UNKNOWN_TOKEN`, written back as `<unk>`) has no line of its own: it
gets the id equal to the number of tokens in the file (one out-of-vocabulary bucket), as
in OpenNMT-tf.
"""

from kerasnmt.data.result_file import result_file

PADDING_TOKEN = "<blank>"
START_OF_SENTENCE_TOKEN = "<s>"
END_OF_SENTENCE_TOKEN = "</s>"
SPECIAL_TOKENS = (PADDING_TOKEN, START_OF_SENTENCE_TOKEN, END_OF_SENTENCE_TOKEN)
PADDING_ID, START_OF_SENTENCE_ID, END_OF_SENTENCE_ID = 0, 1, 2
UNKNOWN_TOKEN = "<unk>"


class VocabularyError(ValueError):
    """A vocabulary file or list that does not follow the OpenNMT conventions."""


def check_vocabulary(tokens, source="<list>"):
    """Checks the special tokens at the top and that no token appears twice.

    Args:
        tokens: the vocabulary, a list of strings in id order.
        source: where the tokens come from, named in error messages.

    Returns:
        `tokens` as a list.

    Raises:
        VocabularyError: naming `source`, the line and the token.
    """
    tokens = list(tokens)
    if tuple(tokens[:3]) != SPECIAL_TOKENS:
        raise VocabularyError(
            f"{source}: a vocabulary must start with {', '.join(SPECIAL_TOKENS)} "
            f"(ids 0, 1, 2) but starts with {tokens[:3]!r}; load it with "
            "add_special_tokens=True to prepend them"
        )
    first_line = {}
    for line_number, token in enumerate(tokens, start=1):
        if not token or token != token.strip() or any(c.isspace() for c in token):
            raise VocabularyError(
                f"{source}, line {line_number}: token {token!r} is empty or contains whitespace"
            )
        if token in first_line:
            raise VocabularyError(
                f"{source}, line {line_number}: duplicate token {token!r} "
                f"(first seen on line {first_line[token]})"
            )
        first_line[token] = line_number
    return tokens


def load_vocabulary(path, add_special_tokens=False):
    """Reads an OpenNMT-tf vocabulary file unchanged.

    Args:
        path: the vocabulary file, one token a line, UTF-8.
        add_special_tokens: prepend `<blank>`, `<s>`, `</s>` to a file that lacks them
            (a plain token list) instead of raising an error.

    Returns:
        The tokens in id order.

    Raises:
        VocabularyError: on non-UTF-8 bytes, missing special tokens, empty or
            duplicate tokens; the message names the file and the line.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
        >>> save_vocabulary(["<blank>", "<s>", "</s>", "▁he", "▁can"], path)
        >>> load_vocabulary(path)
        ['<blank>', '<s>', '</s>', '▁he', '▁can']
    """
    tokens = []
    with open(path, "rb") as file:
        for line_number, raw_line in enumerate(file, start=1):
            try:
                line = raw_line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise VocabularyError(
                    f"{path}, line {line_number}: not valid UTF-8 ({error.reason} "
                    f"at byte {error.start})"
                ) from None
            tokens.append(line.rstrip("\r\n"))
    if add_special_tokens and tuple(tokens[:3]) != SPECIAL_TOKENS:
        tokens = list(SPECIAL_TOKENS) + tokens
    return check_vocabulary(tokens, source=str(path))


def save_vocabulary(tokens, path):
    """Writes `tokens` (special tokens first) one a line, UTF-8, after checking them; the
    file replaces `path` only once complete (`result_file`)."""
    tokens = check_vocabulary(tokens, source=str(path))
    with result_file(path, expected_lines=len(tokens)) as file:
        for token in tokens:
            file.write(token + "\n")
