import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart" / "data"


@pytest.mark.parametrize(
    "name, expected_lines", [("train", 3000), ("val", 200), ("test_2016_flickr", 200)]
)
def test_sample_is_line_aligned_utf8_text(name, expected_lines):
    for language in ("en", "de"):
        path = DATA / f"{name}.{language}"
        lines = path.read_bytes().decode("utf-8").split("\n")
        assert lines[-1] == "", f"{path} must end with a newline"
        lines = lines[:-1]
        assert len(lines) == expected_lines, path
        assert all(line.strip() and "\r" not in line for line in lines), path
