"""Line indexing and the one-read-per-epoch block shuffle (OpenNMT-tf's random_shard)."""

import gzip

import pytest
import tensorflow as tf

from kerasnmt.data import shuffling
from kerasnmt.data.shuffling import (
    block_shuffled_lines,
    index_lines,
    read_block,
    shuffled_parallel_lines,
)
from kerasnmt.data.text_files import CorpusError


def _write(path, text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as file:
            file.write(data)
    else:
        path.write_bytes(data)
    return str(path)


def _numbered_corpus(tmp_path, num_lines, suffix=""):
    source = _write(tmp_path / f"src{suffix}", "".join(f"s{i}\n" for i in range(1, num_lines + 1)))
    target = _write(tmp_path / f"tgt{suffix}", "".join(f"t{i}\n" for i in range(1, num_lines + 1)))
    return source, target


def _line_numbers(dataset):
    return [int(element[0]) for element in dataset]


def test_index_counts_like_text_line_dataset(tmp_path):
    data = b"a\r\nb\rc\n\n\xc3\xa9\nlast"
    path = _write(tmp_path / "corpus.txt", data)
    index = index_lines(path, block_size=2)
    expected = list(tf.data.TextLineDataset(path).as_numpy_iterator())
    assert index.num_lines == len(expected) == 5
    assert index.offsets == [0, 7, 11, len(data)]  # Lines 0, 2, 4 start at bytes 0, 7, 11.
    lines = [line for block in range(index.num_blocks) for line in read_block(index, block)]
    assert lines == expected == [b"a", b"bc", b"", "é".encode(), b"last"]


def test_index_of_a_file_ending_on_a_block(tmp_path):
    path = _write(tmp_path / "corpus.txt", "1\n2\n3\n4\n")
    index = index_lines(path, block_size=2)
    assert (index.num_lines, index.offsets) == (4, [0, 4, 8])
    assert index_lines(path, boundaries=[0, 1, 1, 4]).offsets == [0, 2, 2, 8]
    assert index_lines(_write(tmp_path / "empty.txt", ""), block_size=3).num_lines == 0


def test_gzip_files_are_decompressed_once_to_seek(tmp_path):
    path = _write(tmp_path / "corpus.txt.gz", "one\ntwo\nthree\n")
    index = index_lines(path, block_size=2)
    assert index.readable_path != path
    assert [read_block(index, 0), read_block(index, 1)] == [[b"one", b"two"], [b"three"]]
    assert index_lines(path).num_lines == 3


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path / "bad.txt", b"fine\nstill fine\nbad \xff byte\n")
    with pytest.raises(CorpusError, match=r"bad\.txt, line 3: not valid UTF-8"):
        index_lines(path)


def test_mismatched_line_counts_name_both_files(tmp_path):
    source = _write(tmp_path / "train.en", "a\nb\nc\n")
    target = _write(tmp_path / "train.de", "a\nb\n")
    with pytest.raises(CorpusError) as error:
        shuffled_parallel_lines([source, target], 0)
    message = str(error.value)
    assert "train.en has 3 lines" in message and "train.de has 2" in message


def test_block_order_is_a_random_permutation_of_contiguous_blocks(tmp_path):
    source, target = _numbered_corpus(tmp_path, 23)
    indexes = [index_lines(source, 5), index_lines(target, 5)]
    dataset = block_shuffled_lines(indexes, seed=11)
    epochs = [list(dataset.as_numpy_iterator()) for _ in range(3)]
    block_orders = []
    for epoch in epochs:
        numbers = [int(number) for number, _, _ in epoch]
        assert sorted(numbers) == list(range(1, 24))
        assert all(s == f"s{n}".encode() and t == f"t{n}".encode() for n, s, t in epoch)
        # Whole blocks of 5 consecutive lines (the last one has 3), in some order.
        order = []
        position = 0
        while position < len(numbers):
            block = (numbers[position] - 1) // 5
            size = 3 if block == 4 else 5
            assert numbers[position : position + size] == list(range(block * 5 + 1, block * 5 + size + 1))
            order.append(block)
            position += size
        assert sorted(order) == [0, 1, 2, 3, 4]
        block_orders.append(order)
    # A new order each epoch, and the same orders again from the same seed.
    assert len({tuple(order) for order in block_orders}) > 1
    again = block_shuffled_lines(indexes, seed=11)
    assert _line_numbers(again) == [int(n) for n, _, _ in epochs[0]]


def test_each_line_is_read_once_per_epoch(tmp_path, monkeypatch):
    source, target = _numbered_corpus(tmp_path, 100)
    reads = []

    def counting_read_block(index, block):
        lines = read_block(index, block)
        reads.append(len(lines))
        return lines

    monkeypatch.setattr(shuffling, "read_block", counting_read_block)
    dataset, num_lines = shuffled_parallel_lines([source, target], 10, seed=3)
    for _ in range(2):
        assert sorted(_line_numbers(dataset)) == list(range(1, 101))
    # Two files, two epochs: 4 * 100 line reads, 10 blocks of 10 lines each time.
    assert num_lines == 100 and sum(reads) == 400 and len(reads) == 40


def test_random_shard_then_buffer_shuffle_mixes_at_most_two_blocks_at_first(tmp_path):
    source, target = _numbered_corpus(tmp_path, 200)
    dataset, _ = shuffled_parallel_lines([source, target], 20, seed=5)
    numbers = _line_numbers(dataset)
    assert sorted(numbers) == list(range(1, 201))
    assert numbers != sorted(numbers)
    # The buffer of 20 holds the first block read; the first 20 outputs come from it
    # and the block read after it.
    assert len({(n - 1) // 20 for n in numbers[:20]}) <= 2
    assert _line_numbers(shuffled_parallel_lines([source, target], 20, seed=5)[0]) == numbers


def test_sample_buffer_size_modes(tmp_path):
    source, target = _numbered_corpus(tmp_path, 30)
    in_order, _ = shuffled_parallel_lines([source, target], 0)
    assert _line_numbers(in_order) == list(range(1, 31))
    assert _line_numbers(shuffled_parallel_lines([source, target], None)[0]) == list(range(1, 31))
    for buffer_size in (-1, 30, 1000):
        everything, _ = shuffled_parallel_lines([source, target], buffer_size, seed=1)
        numbers = _line_numbers(everything)
        assert sorted(numbers) == list(range(1, 31)) and numbers != list(range(1, 31))
    with pytest.raises(ValueError, match="sample_buffer_size"):
        shuffled_parallel_lines([source, target], -2)


def test_gzip_and_plain_files_give_the_same_shuffle(tmp_path):
    plain = _numbered_corpus(tmp_path, 40)
    packed = [
        _write(tmp_path / "src.gz", (tmp_path / "src").read_text()),
        _write(tmp_path / "tgt.gz", (tmp_path / "tgt").read_text()),
    ]
    for buffer_size in (0, 7, -1):
        expected = list(shuffled_parallel_lines(plain, buffer_size, seed=2)[0].as_numpy_iterator())
        got = list(shuffled_parallel_lines(packed, buffer_size, seed=2)[0].as_numpy_iterator())
        assert got == expected


def test_workers_read_disjoint_lines(tmp_path):
    source, target = _numbered_corpus(tmp_path, 25)
    for buffer_size in (0, 4, -1):
        seen = []
        for worker in range(3):
            dataset, _ = shuffled_parallel_lines(
                [source, target], buffer_size, seed=1, num_shards=3, shard_index=worker
            )
            numbers = _line_numbers(dataset)
            assert all((n - 1) % 3 == worker for n in numbers)
            seen += numbers
        assert sorted(seen) == list(range(1, 26))
