"""examples/multi30k_tiny/paper_text.py: the paper's text from the raw corpus, and back."""

import doctest
import importlib.util
import pathlib

import pytest

from kerasnmt.evaluation import lowercase_and_moses_tokenize

SCRIPT = pathlib.Path(__file__).parents[1] / "examples" / "multi30k_tiny" / "paper_text.py"


@pytest.fixture(scope="module")
def paper_text():
    spec = importlib.util.spec_from_file_location("paper_text", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_docstring_examples_run(paper_text):
    results = doctest.testmod(paper_text)
    assert results.attempted > 0 and results.failed == 0


def test_the_first_merge_is_the_most_frequent_pair(paper_text):
    # "aa" three times: the pair (a, a</w>) is seen 3 times, "b" has no pair.
    assert paper_text.learn_codes(["aa aa", "aa b"], 1) == "#version: 0.2\na a</w>\n"


def test_prepare_tokenizes_learns_and_applies_one_joint_bpe(paper_text, tmp_path):
    raw = tmp_path / "raw"
    english = ["A dog's toy.", "Two dogs play.", "The dogs play with toys."]
    german = ["Ein Spielzeug.", 'Er sagt: "Hunde spielen."', "Die Hunde spielen."]
    write(raw / "train.en", english)
    write(raw / "train.de", german)
    write(raw / "blind" / "test.en", ["Dogs play."])
    paper_text.main(["prepare", "--data-dir", str(raw), "--output-dir",
                     str(tmp_path / "out"), "--merges", "20"])
    out = tmp_path / "out"
    codes = (out / "code").read_text(encoding="utf-8")
    assert codes.startswith("#version: 0.2\n") and len(codes.splitlines()) == 21
    for name, lines, language in [("train.en", english, "en"), ("train.de", german, "de"),
                                  ("blind/test.en", ["Dogs play."], "en")]:
        pieces = (out / name).read_text(encoding="utf-8").splitlines()
        assert [line.replace("@@ ", "") for line in pieces] == lowercase_and_moses_tokenize(
            lines, language, escape=True)
        assert pieces == paper_text.apply_codes(codes, [line.replace("@@ ", "")
                                                        for line in pieces])
    # The German period moves after the closing quote, as normalize-punctuation.perl does.
    assert (out / "train.de").read_text(encoding="utf-8").splitlines()[1].replace(
        "@@ ", "") == "er sagt : &quot; hunde spielen &quot; ."
    # One BPE learned on both training files.
    assert codes == paper_text.learn_codes(
        lowercase_and_moses_tokenize(english, "en", escape=True)
        + lowercase_and_moses_tokenize(german, "de", escape=True), 20)


def test_decode_removes_joiners_and_detokenizes(paper_text, tmp_path):
    write(tmp_path / "in.de", ["ein hund &apos; s spiel@@ zeug .", "hun@@ de"])
    paper_text.main(["decode", "--language", "de", str(tmp_path / "in.de"),
                     str(tmp_path / "out.de")])
    assert (tmp_path / "out.de").read_text(encoding="utf-8") == (
        "ein hund 's spielzeug.\nhunde\n")


def test_bad_input_names_the_file_and_line(paper_text, tmp_path):
    write(tmp_path / "train.en", ["a", "b"])
    write(tmp_path / "train.de", ["a"])
    with pytest.raises(SystemExit,
                       match=r"train.de has 1 lines but .*train.en has 2: the files must be "
                             "line-aligned"):
        paper_text.main(["prepare", "--data-dir", str(tmp_path), "--output-dir",
                         str(tmp_path / "out")])
    (tmp_path / "train.de").write_bytes(b"a\nb\xff\n")
    with pytest.raises(SystemExit, match=r"train.de, line 2: not valid UTF-8"):
        paper_text.main(["prepare", "--data-dir", str(tmp_path), "--output-dir",
                         str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
    write(tmp_path / "half" / "train.en", ["a"])
    with pytest.raises(SystemExit, match="half: no train.de"):
        paper_text.main(["prepare", "--data-dir", str(tmp_path / "half"), "--output-dir",
                         str(tmp_path / "out")])
