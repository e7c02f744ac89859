"""The README's first command, shortened: the quickstart script end to end with a tiny model."""

import os
import pathlib
import re
import subprocess
import sys

import pytest
import tensorflow as tf

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(47)

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def test_quickstart_trains_exports_and_scores_through_the_saved_model(tmp_path):
    saved_models = tmp_path / "saved_models" / "quickstart"
    command = [
        sys.executable, str(REPOSITORY / "examples" / "quickstart" / "quickstart.py"),
        "--tiny", "--max-step", "8", "--test-sentences", "8", "--vocabulary-size", "400",
        "--workdir", str(tmp_path / "run"), "--saved-models", str(saved_models),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    out = completed.stdout
    for step in ("1. Vocabulary", "2. Training", "3. Export", "4. Translating"):
        assert f"=== {step}" in out
    assert "stopped at step 8: reached train.max_step (8)" in out
    assert re.search(r"BLEU = \d+\.\d\d  nrefs:1\|case:mixed\|eff:no\|tok:13a", out)
    # The published score, Moses-tokenized for the German references.
    assert re.search(r"BLEU tokenized lc = \d+\.\d\d  moses:lc\+norm\+tok\|lang:de\|"
                     r"nrefs:1\|case:lc\|eff:no\|tok:none", out)
    assert out.count("  translation: ") == 5

    # The export is version 1 of the base path (the translations above came through it,
    # loaded with tf.saved_model.load).
    assert sorted(os.listdir(saved_models)) == ["1"]
    assert tf.saved_model.contains_saved_model(str(saved_models / "1"))


def test_getting_started_shows_the_quickstart_configuration():
    import yaml

    page = (REPOSITORY / "docs" / "getting_started.md").read_text(encoding="utf-8")
    section = page[page.index("## Run configuration"):]
    shown = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL).group(1))
    run = REPOSITORY / "examples" / "quickstart" / "run.yml"
    assert shown == yaml.safe_load(run.read_text(encoding="utf-8"))
