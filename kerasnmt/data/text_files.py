"""Streaming reads of corpus text files, plain or gzip-compressed, one sentence a line.

Nothing here loads a whole file: lines come one at a time from a buffered binary
stream. A file whose name ends with `.gz` is decompressed on the fly.

Lines end at `"\\n"` only, as in `tf.data.TextLineDataset`, so line numbers agree with
the training pipeline; a `"\\r"` just before the `"\\n"` is dropped with it. Other
Unicode line separators (`"\\u2028"`, `"\\x85"`, ...) stay inside the line. (Unlike
`TextLineDataset`, which deletes every `"\\r"`, a `"\\r"` inside a line is kept.)
"""

import gzip
import os

ERROR_POLICIES = ("strict", "replace")
_CHUNK_SIZE = 1 << 20


class CorpusError(ValueError):
    """A corpus file that cannot be used as it is; the message names the file and line."""


def open_binary(path):
    """Opens `path` for reading bytes, decompressing it if its name ends with `.gz`."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_lines(path, errors="strict"):
    """Yields the lines of a text file one at a time, without their line ending.

    Args:
        path: a UTF-8 text file; gzip-compressed when its name ends with `.gz`.
        errors: what to do with bytes that are not valid UTF-8. `"strict"` (the
            default) raises a `CorpusError`; `"replace"` puts U+FFFD (`"�"`) in
            place of each invalid sequence and goes on.

    Yields:
        `(line_number, text)` pairs, `line_number` counting from 1. Empty and
        whitespace-only lines are yielded as they are.

    Raises:
        CorpusError: on invalid UTF-8 (with `errors="strict"`), naming the file,
            the line, the offending byte and its offset in the line and in the
            (decompressed) file; or on corrupt gzip data.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.en")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"a cat\\r\\n\\nthe dog")
        >>> list(read_lines(path))
        [(1, 'a cat'), (2, ''), (3, 'the dog')]
    """
    with open_binary(path) as file:
        yield from read_stream_lines(file, path, errors)


def read_stream_lines(stream, name, errors="strict"):
    """Yields the lines of an open binary stream (e.g. `sys.stdin.buffer`) as `read_lines`
    yields a file's, its errors naming the stream `name`.

    Examples:
        >>> import io
        >>> list(read_stream_lines(io.BytesIO(b"a cat\\r\\nthe dog"), "stdin"))
        [(1, 'a cat'), (2, 'the dog')]
    """
    if errors not in ERROR_POLICIES:
        raise ValueError(f"errors must be one of {ERROR_POLICIES}, not {errors!r}")
    line_number = 0
    file_offset = 0
    lines = iter(stream)
    while True:
        try:
            raw_line = next(lines, None)
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError.
            raise CorpusError(
                f"{name}: corrupt gzip data after line {line_number}: {error}"
            ) from None
        if raw_line is None:
            return
        line_number += 1
        try:
            text = raw_line.decode("utf-8", errors=errors)
        except UnicodeDecodeError as error:
            bad_byte = raw_line[error.start]
            raise CorpusError(
                f"{name}, line {line_number}: not valid UTF-8 ({error.reason}: byte "
                f"0x{bad_byte:02x} at offset {error.start} of the line, "
                f"{file_offset + error.start} of the file)"
            ) from None
        file_offset += len(raw_line)
        if text.endswith("\n"):
            text = text[:-1]
            if text.endswith("\r"):
                text = text[:-1]
        yield line_number, text


def read_line_aligned(first_path, second_path):
    """The lines of two line-aligned text files (e.g. sources and their references), as two
    lists of texts read as `read_lines` reads them.

    Raises:
        CorpusError: when their line counts differ (naming both files and their counts), or
            as `read_lines` does.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> en, de = os.path.join(directory, "val.en"), os.path.join(directory, "val.de")
        >>> for path, text in ((en, "a cat\\nthe dog\\n"), (de, "eine Katze\\nder Hund")):
        ...     with open(path, "w", encoding="utf-8") as file:
        ...         _ = file.write(text)
        >>> read_line_aligned(en, de)
        (['a cat', 'the dog'], ['eine Katze', 'der Hund'])
    """
    first = [text for _, text in read_lines(first_path)]
    second = [text for _, text in read_lines(second_path)]
    if len(first) != len(second):
        raise CorpusError(f"{first_path} has {len(first)} lines but {second_path} has "
                          f"{len(second)}: the files must be line-aligned")
    return first, second


def _chunks(path):
    with open_binary(path) as file:
        while chunk := file.read(_CHUNK_SIZE):
            yield chunk


def count_lines(path):
    """Counts the lines of a text file (plain or `.gz`) by streaming its bytes.

    A last line without a final newline counts, so the result equals the number of
    pairs `read_lines(path)` yields. No decoding is done: this is fast and accepts
    any bytes.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.en")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"one\\ntwo\\nthree")
        >>> count_lines(path)
        3
    """
    newlines = 0
    last_byte = b"\n"
    for chunk in _chunks(path):
        newlines += chunk.count(b"\n")
        last_byte = chunk[-1:]
    return newlines + (last_byte != b"\n")


def count_bytes(path):
    """The size of the text in bytes: the file size, or for `.gz` the decompressed size.

    A compressed file is decompressed (streaming) to measure it.
    """
    if not str(path).endswith(".gz"):
        return os.path.getsize(path)
    return sum(len(chunk) for chunk in _chunks(path))
