"""Shuffling parallel text corpora that do not fit in memory, at one read per epoch.

`sample_buffer_size` follows OpenNMT-tf:

* `-1`: shuffle the whole corpus (a buffer as large as the corpus);
* `0` or `None`: no shuffling, lines in file order;
* `0 < n < size`: OpenNMT-tf's `random_shard`: cut the corpus into blocks of `n`
  consecutive lines, read the blocks in a random order (a new order each epoch), then
  shuffle with a buffer of `n` examples. (`n >= size` is the same as `-1`.)

OpenNMT-tf implements the blocks as `dataset.skip(offset).take(n)`, so block `k` re-reads
the `k * n` lines before it: about `size * blocks / 2` extra line reads per epoch, plus a
counting pass. Here one indexing pass (`index_lines`, done once, when the pipeline is
built: it also counts lines for the mismatched-count check and checks UTF-8) records the
byte offset of every block start; each epoch then seeks to each block once and reads it,
so every line is read exactly once per epoch, and memory holds one block plus the
shuffle buffer. A gzip file cannot seek, so the indexing pass also decompresses it once
into a temporary file that the blocks are read from (deleted at exit).
"""

import atexit
import codecs
import dataclasses
import itertools
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from kerasnmt.data.text_files import CorpusError, open_binary

_CHUNK_SIZE = 1 << 20
_temporary_directories = []


@dataclasses.dataclass(frozen=True)
class LineIndex:
    """What one pass over a text file learned: its line count and its block offsets.

    Attributes:
        path: the file as given.
        readable_path: the file to seek in: `path`, or the decompressed copy of a `.gz`.
        num_lines: the number of lines, as `tf.data.TextLineDataset` counts them (a last
            line without a final newline counts).
        block_size: the lines per block, or `None` when no offsets were recorded.
        offsets: byte offsets in `readable_path` of lines `0, n, 2n, ...`, then the
            file size; block `k` is `offsets[k]:offsets[k + 1]`.
    """

    path: str
    readable_path: str
    num_lines: int
    block_size: int
    offsets: list

    @property
    def num_blocks(self):
        return len(self.offsets) - 1


def _temporary_directory():
    if not _temporary_directories:
        directory = tempfile.mkdtemp(prefix="kerasnmt-decompressed-")
        _temporary_directories.append(directory)
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return _temporary_directories[0]


def index_lines(path, block_size=None, boundaries=None):
    """Counts the lines of a text file, checks it is UTF-8 and records block offsets.

    Args:
        path: a text file, gzip-compressed when its name ends with `.gz`.
        block_size: record the byte offset of lines `0, n, 2n, ...` (blocks of `n`
            lines).
        boundaries: or record the byte offsets of these 0-based line numbers (sorted,
            the last one at most the number of lines), e.g. the first line of each
            shard and the line count; lines past the end map to the file size.
            With either, a `.gz` file is also decompressed into a temporary file to seek
            in; with neither, the file is only counted and checked.

    Returns:
        A `LineIndex`. With `block_size`, its `offsets` end with the file size; with
        `boundaries`, it has one offset a boundary (the line count maps to the size).

    Raises:
        CorpusError: on bytes that are not UTF-8 (naming the file and the line) or on
            corrupt gzip data.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.en")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"a\\nbb\\nccc\\nd")
        >>> index = index_lines(path, block_size=2)
        >>> index.num_lines, index.offsets
        (4, [0, 5, 10])
        >>> index_lines(path, boundaries=[0, 1, 4]).offsets
        [0, 2, 10]
    """
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    if block_size is not None and boundaries is not None:
        raise ValueError("give block_size or boundaries, not both")
    if block_size is not None:
        wanted = itertools.count(0, block_size)
    elif boundaries is not None:
        wanted = iter(list(boundaries) + [None])
    else:
        wanted = iter([None])
    copy = None
    readable_path = path
    if (block_size, boundaries) != (None, None) and str(path).endswith(".gz"):
        copy = tempfile.NamedTemporaryFile(
            dir=_temporary_directory(), suffix=".txt", delete=False
        )
        readable_path = copy.name
    decoder = codecs.getincrementaldecoder("utf-8")()
    offsets = []
    pending = next(wanted)
    while pending == 0:
        offsets.append(0)
        pending = next(wanted)
    newlines = 0
    position = 0
    last_byte = b"\n"
    try:
        with open_binary(path) as file:
            while True:
                try:
                    chunk = file.read(_CHUNK_SIZE)
                except (OSError, EOFError) as error:
                    raise CorpusError(
                        f"{path}: corrupt gzip data after line {newlines}: {error}"
                    ) from None
                try:
                    decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as error:
                    line = newlines + chunk[: max(error.start, 0)].count(b"\n") + 1
                    raise CorpusError(
                        f"{path}, line {line}: not valid UTF-8 ({error.reason})"
                    ) from None
                if not chunk:
                    break
                if copy is not None:
                    copy.write(chunk)
                count = chunk.count(b"\n")
                if pending is not None and pending <= newlines + count:
                    ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
                    while pending is not None and pending <= newlines + count:
                        offsets.append(position + int(ends[pending - newlines - 1]) + 1)
                        pending = next(wanted)
                newlines += count
                position += len(chunk)
                last_byte = chunk[-1:]
    finally:
        if copy is not None:
            copy.close()
    num_lines = newlines + (last_byte != b"\n")
    if block_size is not None:
        offsets = [offset for offset in offsets if offset < position] + [position]
        if num_lines == 0:
            offsets = [0]
    elif boundaries is not None:
        while pending is not None:  # The line count, or lines past the end.
            offsets.append(position)
            pending = next(wanted)
    return LineIndex(path, readable_path, num_lines, block_size, offsets)


def read_block(index, block):
    """The lines of block `block` of an indexed file, as `TextLineDataset` gives them.

    Line endings are `"\\n"`; every `"\\r"` is deleted, as `TextLineDataset` does.
    """
    start, end = index.offsets[block], index.offsets[block + 1]
    if start == end:
        return []
    with open(index.readable_path, "rb") as file:
        file.seek(start)
        data = file.read(end - start)
    lines = data.replace(b"\r", b"").split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines


def block_shuffled_lines(indexes, seed=None, num_shards=1, shard_index=0):
    """Parallel lines, block by block in a random block order that changes every epoch.

    Args:
        indexes: one `LineIndex` per parallel file (source, target, alignment), all with
            the same `num_lines` and `block_size`.
        seed: seeds the block order; `None` for a random order.
        num_shards: keep only the lines whose 0-based number `i` has
            `i % num_shards == shard_index` (multi-worker training).
        shard_index: this worker's index.

    Returns:
        A `tf.data.Dataset` of `(line_number, line_1, line_2, ...)`, `line_number`
        counting from 1 (int64) and one string per file.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> paths = [os.path.join(directory, name) for name in ("a", "b")]
        >>> for path, text in zip(paths, ("1\\n2\\n3\\n4\\n5\\n", "v\\nw\\nx\\ny\\nz\\n")):
        ...     with open(path, "w") as file:
        ...         _ = file.write(text)
        >>> dataset = block_shuffled_lines([index_lines(path, 2) for path in paths], seed=3)
        >>> sorted(int(number) for number, _, _ in dataset)
        [1, 2, 3, 4, 5]
    """
    first = indexes[0]
    for index in indexes[1:]:
        if index.num_lines != first.num_lines or index.block_size != first.block_size:
            raise ValueError("all parallel files must have the same lines and block size")

    def _read(block):
        block = int(block)
        first_line = block * first.block_size
        numbers = np.arange(first_line, first_line + first.block_size, dtype=np.int64)
        columns = [read_block(index, block) for index in indexes]
        numbers = numbers[: len(columns[0])]
        if num_shards > 1:
            keep = numbers % num_shards == shard_index
            numbers = numbers[keep]
            columns = [np.asarray(column, dtype=object)[keep] for column in columns]
        else:
            columns = [np.asarray(column, dtype=object) for column in columns]
        return [numbers + 1] + columns

    def _read_block(block):
        outputs = tf.py_function(
            _read, [block], [tf.int64] + [tf.string] * len(indexes), name="read_block"
        )
        for output in outputs:
            output.set_shape([None])
        return tuple(outputs)

    blocks = tf.data.Dataset.range(first.num_blocks)
    blocks = blocks.shuffle(first.num_blocks, seed=seed, reshuffle_each_iteration=True)
    return blocks.map(_read_block).unbatch()


def shuffled_parallel_lines(paths, sample_buffer_size, seed=None, num_shards=1, shard_index=0):
    """Reads parallel text files as `(line_number, line_1, ...)` tuples, shuffled.

    Args:
        paths: the parallel files (source, target, optional alignment); `.gz` files are
            decompressed.
        sample_buffer_size: `-1` shuffles everything, `0`/`None` nothing, `0 < n < size`
            reads blocks of `n` lines in a random order then shuffles with a buffer of
            `n` (see the module documentation).
        seed: makes the order reproducible.
        num_shards: split lines across workers: line `i` (0-based) goes to worker
            `i % num_shards`.
        shard_index: this worker.

    Returns:
        `(dataset, num_lines)`: the dataset and the number of lines in each file.

    Raises:
        CorpusError: when the files do not have the same number of lines (naming both
            files and both counts), or on invalid UTF-8.
    """
    if sample_buffer_size is None:
        sample_buffer_size = 0
    if sample_buffer_size < -1:
        raise ValueError(f"sample_buffer_size must be -1, 0 or positive, got {sample_buffer_size}")
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise ValueError(f"need 0 <= shard_index < num_shards, got {shard_index} and {num_shards}")
    block_size = sample_buffer_size if sample_buffer_size > 0 else None
    indexes = []
    for path in paths:
        index = index_lines(path, block_size)
        if indexes and index.num_lines != indexes[0].num_lines:
            raise CorpusError(
                f"parallel files differ in length: {paths[0]} has {indexes[0].num_lines} "
                f"lines but {path} has {index.num_lines}"
            )
        indexes.append(index)
    num_lines = indexes[0].num_lines
    if block_size is not None and block_size >= num_lines:
        block_size = None  # One block: a plain shuffle of everything.
    if block_size is None:
        for index in indexes:
            if index.readable_path != index.path:
                os.remove(index.readable_path)
    shard_lines = len(range(shard_index, num_lines, num_shards))
    if block_size is not None:
        dataset = block_shuffled_lines(indexes, seed, num_shards, shard_index)
        return dataset.shuffle(block_size, seed=seed), num_lines
    compression = ["GZIP" if str(path).endswith(".gz") else None for path in paths]
    files = [
        tf.data.TextLineDataset(str(path), compression_type=kind)
        for path, kind in zip(paths, compression)
    ]
    numbers = tf.data.Dataset.range(1, num_lines + 1)
    dataset = tf.data.Dataset.zip((numbers, *files))
    if num_shards > 1:
        dataset = dataset.shard(num_shards, shard_index)
    if sample_buffer_size != 0 and shard_lines > 0:
        dataset = dataset.shuffle(shard_lines, seed=seed)
    return dataset, num_lines
