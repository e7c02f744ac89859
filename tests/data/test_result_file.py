import os

import pytest

from kerasnmt.data.result_file import result_file


def test_a_crash_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "test.de"
    path.write_text("old 1\nold 2\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="out of memory"):
        with result_file(path, expected_lines=2) as stream:
            stream.write("new 1\n")
            stream.flush()
            raise RuntimeError("out of memory")
    assert path.read_text(encoding="utf-8") == "old 1\nold 2\n"
    assert os.listdir(tmp_path) == ["test.de"]


def test_too_few_lines_write_nothing_under_the_name(tmp_path):
    path = tmp_path / "new.de"
    with pytest.raises(ValueError, match=r"new\.de: 1 lines written where 2 were expected"):
        with result_file(path, expected_lines=2) as stream:
            stream.write("only one\n")
    assert os.listdir(tmp_path) == []


def test_the_file_appears_only_at_the_end_with_the_usual_permissions(tmp_path):
    path = tmp_path / "out.txt"
    with result_file(path) as stream:
        stream.write("Ein Mann fährt Rad.\n")
        assert not path.exists()
        temporaries = os.listdir(tmp_path)
        assert temporaries == [f".out.txt.tmp-{os.getpid()}"]
    assert path.read_bytes() == "Ein Mann fährt Rad.\n".encode("utf-8")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_text_that_is_not_utf8_encodable_is_refused(tmp_path):
    path = tmp_path / "out.txt"
    with pytest.raises(UnicodeEncodeError):
        with result_file(path) as stream:
            stream.write("a lone surrogate \udcff\n")
    assert os.listdir(tmp_path) == []
