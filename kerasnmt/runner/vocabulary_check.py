"""`kerasnmt check-vocab`: vocabulary files checked against the OpenNMT conventions."""

from kerasnmt.data.vocabulary import load_vocabulary


def check_vocab(files):
    """Check that vocabulary files follow the OpenNMT conventions.

    Each file must be UTF-8, one token a line, start with <blank>, <s>, </s> and hold
    no empty, whitespace-containing or repeated token. Prints the number of entries
    of each file; the first bad file stops the command with an error naming its line.

    Args:
        files: vocabulary files

    Returns:
        The number of entries of each file.

    Raises:
        VocabularyError: naming the first bad file and its line.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "vocab.de")
        >>> with open(path, "w", encoding="utf-8") as file:
        ...     _ = file.write("<blank>\\n<s>\\n</s>\\nHund\\n")
        >>> sizes = check_vocab([path])  # doctest: +ELLIPSIS
        /.../vocab.de: 4 entries, 5 ids with the unknown token
        >>> sizes
        [4]
    """
    sizes = []
    for path in files:
        tokens = load_vocabulary(path)
        print(f"{path}: {len(tokens)} entries, {len(tokens) + 1} ids with the unknown token")
        sizes.append(len(tokens))
    return sizes
