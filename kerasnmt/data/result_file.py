"""Result files (translations, vocabularies, models, shortlists) that appear whole under
their name, or not at all."""

import contextlib
import os

from kerasnmt.data.text_files import count_lines


@contextlib.contextmanager
def result_file(path, expected_lines=None, binary=False):
    """Opens a file for writing (UTF-8 text, or bytes) that replaces `path` only once it is
    complete.

    The lines go to a temporary file beside `path` (`.NAME.tmp-PID`, same directory, so
    the final rename is atomic); it is renamed to `path` when the block ends without an
    error and, with `expected_lines`, holds exactly that many lines. Otherwise it is
    removed and an existing `path` keeps its previous content: a crash, a Ctrl-C or a
    text that would break the line correspondence (a translation holding a newline)
    never leaves a partial or misaligned file under the final name. (A SIGKILL leaves the
    temporary file, never a partial `path`.) Text is encoded strictly as UTF-8.

    Args:
        path: the file to write.
        expected_lines: the number of lines the file must hold (e.g. one per source
            sentence), or None.
        binary: open the file for bytes instead of text.

    Raises:
        ValueError: naming `path` when the written file does not hold `expected_lines`
            lines (the previous `path`, if any, is left as it was).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "test.de")
        >>> with result_file(path, expected_lines=2) as stream:
        ...     _ = stream.write("Ein Hund .\\nZwei Katzen .\\n")
        >>> open(path, encoding="utf-8").read().splitlines()
        ['Ein Hund .', 'Zwei Katzen .']
        >>> with result_file(path, expected_lines=2) as stream:
        ...     _ = stream.write("Eine Zeile\\nmit Umbruch\\nzu viel\\n")
        Traceback (most recent call last):
        ...
        ValueError: ...test.de: 3 lines written where 2 were expected; ...
        >>> open(path, encoding="utf-8").read().splitlines()  # the previous file
        ['Ein Hund .', 'Zwei Katzen .']
    """
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.tmp-{os.getpid()}")
    try:
        if binary:
            stream = open(temporary, "wb")
        else:
            stream = open(temporary, "w", encoding="utf-8", errors="strict", newline="\n")
        with stream:
            yield stream
        if expected_lines is not None:
            written = count_lines(temporary)
            if written != expected_lines:
                raise ValueError(
                    f"{path}: {written} lines written where {expected_lines} were expected; "
                    "nothing was written under that name"
                    + (" (its previous content is kept)" if os.path.exists(path) else "")
                )
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def check_result_path(path, inputs=()):
    """Refuses, before any work, a result `path` that `result_file` could not write or
    that would replace one of the files the work reads.

    Args:
        path: the file to write.
        inputs: the paths the work reads (None or "-" for stdin are skipped).

    Raises:
        ValueError: naming `path`: it is one of `inputs`, a directory, or in a directory
            that does not exist.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> source = os.path.join(directory, "test.en")
        >>> _ = open(source, "w").write("A dog .\\n")
        >>> check_result_path(os.path.join(directory, "test.de"), [source])
        >>> check_result_path(source, [source])
        Traceback (most recent call last):
        ...
        ValueError: ...test.en is also an input: writing it would replace what is read
        >>> check_result_path(os.path.join(directory, "missing", "test.de"))
        Traceback (most recent call last):
        ...
        ValueError: ...test.de: its directory ...missing does not exist
    """
    for source in inputs:
        if source not in (None, "-") and os.path.exists(source) and os.path.exists(path) \
                and os.path.samefile(source, path):
            raise ValueError(f"{path} is also an input: writing it would replace what is read")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory, not a file to write")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ValueError(f"{path}: its directory {directory} does not exist")
