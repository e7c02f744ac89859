import pytest

from kerasnmt.data.vocabulary import VocabularyError, load_vocabulary, save_vocabulary


def write(tmp_path, content, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_reads_opennmt_file_unchanged(tmp_path):
    path = write(tmp_path, "<blank>\n<s>\n</s>\n▁he\n▁can\n".encode())
    assert load_vocabulary(path) == ["<blank>", "<s>", "</s>", "▁he", "▁can"]


def test_save_then_load_round_trips(tmp_path):
    tokens = ["<blank>", "<s>", "</s>", "▁он", "▁может"]
    save_vocabulary(tokens, tmp_path / "v.txt")
    assert load_vocabulary(tmp_path / "v.txt") == tokens


def test_a_save_that_fails_midway_keeps_the_previous_file(tmp_path):
    path = tmp_path / "vocab.txt"
    save_vocabulary(["<blank>", "<s>", "</s>", "a"], path)
    with pytest.raises(UnicodeEncodeError):
        save_vocabulary(["<blank>", "<s>", "</s>", "b", "\ud800"], path)  # not UTF-8
    assert path.read_text(encoding="utf-8") == "<blank>\n<s>\n</s>\na\n"
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.txt"]


def test_missing_special_tokens_is_an_error_naming_the_file(tmp_path):
    path = write(tmp_path, b"a\nb\n")
    with pytest.raises(VocabularyError, match=r"vocab\.txt.*must start with <blank>, <s>, </s>"):
        load_vocabulary(path)


def test_missing_special_tokens_can_be_added(tmp_path):
    path = write(tmp_path, b"a\nb\n")
    assert load_vocabulary(path, add_special_tokens=True) == ["<blank>", "<s>", "</s>", "a", "b"]


def test_duplicate_token_names_token_and_line(tmp_path):
    path = write(tmp_path, b"<blank>\n<s>\n</s>\nx\ny\nx\n")
    with pytest.raises(VocabularyError, match=r"line 6: duplicate token 'x' \(first seen on line 4\)"):
        load_vocabulary(path)


def test_non_utf8_line_is_named(tmp_path):
    path = write(tmp_path, b"<blank>\n<s>\n</s>\nok\n\xff\xfe\n")
    with pytest.raises(VocabularyError, match=r"vocab\.txt, line 5: not valid UTF-8"):
        load_vocabulary(path)


def test_empty_token_line_is_an_error(tmp_path):
    path = write(tmp_path, b"<blank>\n<s>\n</s>\na\n\nb\n")
    with pytest.raises(VocabularyError, match=r"line 5: token '' is empty"):
        load_vocabulary(path)
