"""The guides of docs/ run as written: every code block of each guide is executed, in order.

A guide's Markdown follows these conventions, which this module enforces:

- A ```` ```python ```` block runs in the test process, in one namespace per guide (a later
  block sees the names of the earlier ones, as in one Python session), its working
  directory a fresh temporary directory.
- A ```` ```bash ```` block runs with `bash -euo pipefail` in that directory (always that
  one: each block is a new shell, so a `cd` ends with its block), with the directory of
  this Python (`sys.executable`'s, the virtual environment's `bin`) first on `PATH`, so
  `kerasnmt ...` is the command of this checkout.
- A block right after the HTML comment `<!-- file: NAME -->` is a file the guide asks the
  reader to save (a YAML configuration, ...): its text is written to `NAME` in that
  directory, in its place among the blocks, and not run.
- A ```` ```text ```` block right after the HTML comment `<!-- output -->` is the output of
  the block before it: what that block printed (stdout) must match it, `...` standing for
  any text (doctest's `ELLIPSIS`), trailing whitespace ignored.
- Any other block (another language, a fence without one, a `text` block that is not an
  output, an indented code block) fails the test: a reader could not run it, and the test
  could not check it.

The guides' inputs are files of this repository, copied into the directory under the names
the guide uses (`INPUTS`); each guide says where a reader finds them.
"""

import contextlib
import doctest
import inspect
import io
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from markdown_it import MarkdownIt

from kerasnmt.config import default_config
from kerasnmt.decoding import BeamSampler
from kerasnmt.decoding.widths import DEFAULT_LENGTH_OFFSET, DEFAULT_LENGTH_RATIO
from kerasnmt.models import TransformerBackbone, Translator
from kerasnmt.training import CheckpointCallback
from kerasnmt.training.fitting import DEFAULT_BATCH_SIZE

# Training, exports and a few `kerasnmt` commands (tests/conftest.py runs it first).
pytestmark = pytest.mark.heavy(81)

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
QUICKSTART_DATA = ROOT / "examples" / "quickstart" / "data"
WRITTEN_BY_0_1_0 = ROOT / "tests" / "fixtures" / "written_by_0_1_0"

# The guides, in the order of the "Guides" section of mkdocs.yml, and the files of this
# repository each one reads: {name in the working directory: path in the repository}.
INPUTS = {
    "training_from_python.md": {
        name: QUICKSTART_DATA / name
        for name in ("train.en", "train.de", "val.en", "val.de", "test_2016_flickr.en")
    },
    "custom_decoding.md": {"translator.keras": WRITTEN_BY_0_1_0 / "translator.keras"},
    "keras_hub.md": {
        "run": WRITTEN_BY_0_1_0 / "run",
        "translator.keras": WRITTEN_BY_0_1_0 / "translator.keras",
        "train.en": QUICKSTART_DATA / "train.en",
        "train.de": QUICKSTART_DATA / "train.de",
    },
    "migrating_from_opennmt_tf.md": {
        "onmt": ROOT / "tests" / "fixtures" / "opennmt_tf" / "relative",
    },
}
GUIDES = list(INPUTS)

FILE_COMMENT = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->$")
OUTPUT_COMMENT = re.compile(r"^<!--\s*output\s*-->$")


def guide_blocks(path):
    """The blocks of a guide, in order: `(kind, line, text, extra)` with kind `"python"`,
    `"bash"`, `"file"` (extra: its name) or `"output"`; a block of no kind fails."""
    blocks, previous = [], None
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        where = f"{path.name}:{token.map[0] + 1}" if token.map else path.name
        if token.type == "code_block":
            pytest.fail(f"{where}: an indented code block: fence it as python, bash, a "
                        "<!-- file: NAME --> or an <!-- output --> (see tests/test_guides.py)")
        if token.type == "fence":
            language = token.info.strip().split(" ")[0]
            comment = previous.content.strip() if previous is not None and \
                previous.type == "html_block" else ""
            line = token.map[0] + 1
            if FILE_COMMENT.match(comment):
                blocks.append(("file", line, token.content, FILE_COMMENT.match(comment)[1]))
            elif OUTPUT_COMMENT.match(comment) and language == "text":
                if not blocks or blocks[-1][0] not in ("python", "bash"):
                    pytest.fail(f"{where}: an output block after no python or bash block")
                blocks.append(("output", line, token.content, None))
            elif language in ("python", "bash") and not comment:
                blocks.append((language, line, token.content, None))
            else:
                pytest.fail(f"{where}: a ```{language} block the test cannot run or check "
                            "(see tests/test_guides.py for the conventions)")
        previous = token
    return blocks


def copy_inputs(guide, directory):
    for name, source in INPUTS[guide].items():
        target = directory / name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)


class _Tee(io.StringIO):
    """Collects what is written and passes it on (pytest shows it when a test fails)."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text):
        self.stream.write(text)
        return super().write(text)


def run_python(path, line, text, namespace):
    code = compile("\n" * line + text, str(path), "exec")  # tracebacks: the guide's lines
    with contextlib.redirect_stdout(_Tee(sys.stdout)) as out:
        exec(code, namespace)  # noqa: S102 (the guide's own code)
    return out.getvalue()


def run_bash(path, line, text, directory):
    environment = dict(os.environ)
    environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + environment["PATH"]
    completed = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=directory,
                               env=environment, capture_output=True, text=True, timeout=300)
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    if completed.returncode != 0:
        pytest.fail(f"{path.name}:{line}: the bash block exited with status "
                    f"{completed.returncode}\n--- stdout\n{completed.stdout[-3000:]}"
                    f"\n--- stderr\n{completed.stderr[-3000:]}")
    return completed.stdout


def check_output(path, line, expected, printed):
    expected = "\n".join(text.rstrip() for text in expected.strip("\n").splitlines()) + "\n"
    printed = "\n".join(text.rstrip() for text in printed.strip("\n").splitlines()) + "\n"
    if not doctest.OutputChecker().check_output(expected, printed, doctest.ELLIPSIS):
        pytest.fail(f"{path.name}:{line}: the block before printed\n{printed}\n"
                    f"where the guide shows\n{expected}")


@pytest.mark.parametrize("guide", GUIDES)
def test_every_block_of_the_guide_runs(guide, tmp_path, monkeypatch):
    path = DOCS / guide
    blocks = guide_blocks(path)
    assert any(kind in ("python", "bash") for kind, *_ in blocks), f"{guide}: nothing to run"
    copy_inputs(guide, tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    printed = ""
    for kind, line, text, name in blocks:
        if kind == "file":
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        elif kind == "python":
            printed = run_python(path, line, text, namespace)
        elif kind == "bash":
            printed = run_bash(path, line, text, tmp_path)
        else:
            check_output(path, line, text, printed)


def test_the_guides_are_the_guides_section_of_the_site():
    with open(ROOT / "mkdocs.yml", encoding="utf-8") as file:
        nav = yaml.safe_load(file)["nav"]
    sections = {key: value for entry in nav for key, value in entry.items()}
    assert [page for entry in sections["Guides"] for page in entry.values()] == GUIDES


def test_the_index_names_every_page_of_the_site():
    with open(ROOT / "mkdocs.yml", encoding="utf-8") as file:
        nav = yaml.safe_load(file)["nav"]

    def pages(entries):
        for entry in entries:
            for value in entry.values():
                yield from (pages(value) if isinstance(value, list) else [value])

    index = (DOCS / "index.md").read_text(encoding="utf-8")
    missing = [page for page in pages(nav) if page != "index.md" and f"({page})" not in index]
    assert not missing, f"docs/index.md links to no {missing}"


def test_the_defaults_table_of_training_from_python_is_the_code_s():
    """The values the table "Python defaults and YAML defaults" of
    docs/training_from_python.md states, and those it says both sides share."""
    def defaults(function):
        return {name: parameter.default
                for name, parameter in inspect.signature(function).parameters.items()}

    config, fit = default_config(), defaults(Translator.fit)
    train, model, params = config["train"], config["model"], config["params"]
    # Different.
    assert (fit["batch_size"], DEFAULT_BATCH_SIZE, fit["batch_type"]) == (None, 32, "examples")
    assert (train["batch_size"], train["batch_type"]) == (3072, "tokens")
    assert (fit["effective_batch_size"], train["effective_batch_size"]) == (None, 25000)
    assert (fit["maximum_features_length"], fit["maximum_labels_length"]) == (None, None)
    assert (train["maximum_features_length"], train["maximum_labels_length"]) == (100, 100)
    assert train["max_step"] == 500000
    assert (train["save_checkpoints_steps"], train["keep_checkpoint_max"],
            train["average_last_checkpoints"]) == (5000, 8, 8)
    callback = defaults(CheckpointCallback)
    assert (callback["save_every_steps"], callback["keep_checkpoints"]) == (5000, 8)
    assert defaults(Translator.translate)["maximum_source_length"] == 256
    # The same.
    backbone = defaults(TransformerBackbone)
    for name, value in (("maximum_relative_position", 20), ("num_layers", 6),
                        ("num_units", 512)):
        assert backbone[name] == model[name] == value, name
    assert defaults(Translator)["label_smoothing"] == params["label_smoothing"] == 0.1
    assert (params["learning_rate"], params["decay_type"],
            params["decay_params"]["warmup_steps"]) == (2.0, "NoamDecay", 8000)
    assert fit["length_bucket_width"] == train["length_bucket_width"] == 1
    assert config["eval"]["batch_size"] == 32 and train["sample_buffer_size"] == -1
    sampler = BeamSampler()
    assert (sampler.beam_size, sampler.length_penalty, sampler.max_length) == (
        params["beam_width"], params["length_penalty"], params["maximum_decoding_length"]) == (
        4, 0.0, 250)
    assert (DEFAULT_LENGTH_RATIO, DEFAULT_LENGTH_OFFSET) == (
        params["decoding_length_ratio"], params["decoding_length_offset"]) == (2.0, 10)
