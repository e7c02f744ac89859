import gzip

import pytest

from kerasnmt.data.text_files import CorpusError, count_bytes, count_lines, read_lines


def write(path, content):
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as file:
            file.write(content)
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", ["corpus.txt", "corpus.txt.gz"])
def test_lines_come_numbered_without_line_endings(tmp_path, name):
    path = write(tmp_path / name, "a cat\r\n\n   \n\tя тут \nlast".encode())
    assert list(read_lines(path)) == [
        (1, "a cat"),
        (2, ""),
        (3, "   "),
        (4, "\tя тут "),
        (5, "last"),
    ]


def test_only_newline_ends_a_line(tmp_path):
    # U+2028, U+0085 and a lone \r are not line ends here (nor in tf.data.TextLineDataset).
    path = write(tmp_path / "c.txt", "a\u2028b\x85c\rd\ne\n".encode())
    assert list(read_lines(path)) == [(1, "a\u2028b\x85c\rd"), (2, "e")]


def test_empty_file_has_no_lines(tmp_path):
    path = write(tmp_path / "empty.txt", b"")
    assert list(read_lines(path)) == []
    assert count_lines(path) == 0


@pytest.mark.parametrize("name", ["bad.txt", "bad.txt.gz"])
def test_invalid_utf8_names_file_line_and_offsets(tmp_path, name):
    # Line 3 starts at byte 4 + 3 = 7 of the file; the bad byte is its 3rd byte.
    path = write(tmp_path / name, b"abc\nde\nxy\xffz\nok\n")
    lines = read_lines(path)
    assert next(lines) == (1, "abc")  # lines before the bad one come through
    assert next(lines) == (2, "de")
    with pytest.raises(
        CorpusError,
        match=rf"{name}, line 3: not valid UTF-8 \(invalid start byte: byte 0xff at offset 2 "
        r"of the line, 9 of the file\)",
    ):
        next(lines)


def test_truncated_multibyte_character_is_reported(tmp_path):
    path = write(tmp_path / "cut.txt", "ok\nя".encode()[:-1] + b"\n")
    with pytest.raises(CorpusError, match=r"cut\.txt, line 2: not valid UTF-8"):
        list(read_lines(path))


def test_replace_policy_substitutes_and_continues(tmp_path):
    path = write(tmp_path / "bad.txt", b"xy\xffz\n\xc3\nok\n")
    assert list(read_lines(path, errors="replace")) == [
        (1, "xy\ufffdz"),
        (2, "\ufffd"),
        (3, "ok"),
    ]


def test_unknown_error_policy_is_refused(tmp_path):
    path = write(tmp_path / "a.txt", b"a\n")
    with pytest.raises(ValueError, match="errors must be one of"):
        list(read_lines(path, errors="ignore"))


def test_corrupt_gzip_is_a_corpus_error(tmp_path):
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(gzip.compress(b"one\ntwo\n" * 1000)[:40])
    with pytest.raises(CorpusError, match=r"broken\.txt\.gz: corrupt gzip data"):
        list(read_lines(path))


@pytest.mark.parametrize(
    "content, expected",
    [(b"a\nb\nc\n", 3), (b"a\nb\nc", 3), (b"\n", 1), (b"\n\n", 2), (b"x", 1), (b"\xff\xfe\n", 1)],
)
def test_count_lines_agrees_with_read_lines(tmp_path, content, expected):
    plain = write(tmp_path / "c.txt", content)
    compressed = write(tmp_path / "c.txt.gz", content)
    assert count_lines(plain) == count_lines(compressed) == expected
    assert len(list(read_lines(plain, errors="replace"))) == expected


def test_count_lines_across_chunk_boundaries(tmp_path):
    # 300,000 lines of 7 bytes: 2.1 MB, more than two 1 MiB chunks.
    path = write(tmp_path / "big.txt", b"token \n" * 300_000)
    assert count_lines(path) == 300_000


def test_count_bytes_is_the_decompressed_size(tmp_path):
    content = "здравствуй\n".encode() * 100  # 21 bytes a line
    assert count_bytes(write(tmp_path / "a.txt", content)) == 2100
    assert count_bytes(write(tmp_path / "a.txt.gz", content)) == 2100


def test_reading_is_lazy(tmp_path):
    # A bad line far down the file does not stop reading the first lines.
    path = write(tmp_path / "late.txt", b"good\n" * 10 + b"\xff\n")
    lines = read_lines(path)
    assert [next(lines) for _ in range(10)] == [(n, "good") for n in range(1, 11)]
