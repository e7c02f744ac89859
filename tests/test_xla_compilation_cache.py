"""The XLA compilation cache (`KERASNMT_XLA_CACHE`): programs saved by one process are loaded
by the next, and a cache that is damaged or was made elsewhere is ignored with one warning
while the translations stay the same."""

import hashlib
import json
import logging
import os
import subprocess
import sys

import pytest

from kerasnmt import xla_compilation_cache
from kerasnmt.xla_compilation_cache import MANIFEST, PREFIX, check_entries, record_entries

pytestmark = pytest.mark.heavy(30)

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Two sentences of different source widths: two compiled programs.
TRANSLATE = """
from kerasnmt import BeamSampler
from tests.models.translator_fixtures import tiny_translator
translator = tiny_translator(seed=3)
sentences = ["a b", " ".join(["c d e f"] * 5)]
for line in translator.translate(sentences, BeamSampler(beam_size=2, max_length=6)):
    print(line)
"""


def _entry(directory, name, content):
    path = os.path.join(directory, f"{PREFIX}__{name}__XLA_CPU_JIT.pb")
    with open(path, "wb") as file:
        file.write(content)
    return path


def test_a_program_not_recorded_yet_is_kept_and_recorded_at_the_end(tmp_path, caplog):
    """Written by a process still running, or killed before it recorded it: TensorFlow
    renames a program into place once it is complete."""
    _entry(tmp_path, "1__1", b"recorded")
    record_entries(tmp_path)
    _entry(tmp_path, "2__2", b"written by a process that has not recorded it")
    with caplog.at_level(logging.WARNING):
        assert check_entries(tmp_path) == []
    assert caplog.records == []
    record_entries(tmp_path)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert sorted(manifest["entries"]) == [f"{PREFIX}__1__1__XLA_CPU_JIT.pb",
                                          f"{PREFIX}__2__2__XLA_CPU_JIT.pb"]
    assert manifest["entries"][f"{PREFIX}__2__2__XLA_CPU_JIT.pb"]["sha256"] == (
        hashlib.sha256(b"written by a process that has not recorded it").hexdigest())


def test_a_program_touched_but_unchanged_is_kept_and_one_rewritten_is_deleted(tmp_path):
    kept = _entry(tmp_path, "1__1", b"program one")
    rewritten = _entry(tmp_path, "2__2", b"program two")
    record_entries(tmp_path)
    os.utime(kept, ns=(0, 0))
    with open(rewritten, "r+b") as file:
        file.write(b"P")
    os.utime(rewritten, ns=(0, 0))
    assert check_entries(tmp_path) == [os.path.basename(rewritten)]
    assert os.path.exists(kept)


def test_a_cache_made_by_another_tensorflow_is_emptied_with_one_warning(tmp_path, caplog):
    _entry(tmp_path, "1__1", b"one")
    _entry(tmp_path, "2__2", b"two")
    record_entries(tmp_path)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest["maker"]["tensorflow"] = "2.13.0"
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING):
        assert len(check_entries(tmp_path)) == 2
    assert len(caplog.records) == 1 and "2.13.0" in caplog.text
    assert os.listdir(tmp_path) == [MANIFEST]


def test_the_oldest_programs_go_first_beyond_the_size_bound(tmp_path):
    for age, name in enumerate(["3__3", "1__1", "2__2"]):
        os.utime(_entry(tmp_path, name, b"x" * 100), ns=(age * 10**9, age * 10**9))
    record_entries(tmp_path, maximum_bytes=250)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert sorted(manifest["entries"]) == [f"{PREFIX}__1__1__XLA_CPU_JIT.pb",
                                          f"{PREFIX}__2__2__XLA_CPU_JIT.pb"]
    assert sorted(os.listdir(tmp_path)) == [MANIFEST, *manifest["entries"]]


def test_a_named_tensorflow_cache_is_left_to_tensorflow(tmp_path):
    environ = {"KERASNMT_XLA_CACHE": str(tmp_path),
               "TF_XLA_FLAGS": "--tf_xla_persistent_cache_directory=/elsewhere"}
    assert xla_compilation_cache.use_cache(environ) is None
    assert environ["TF_XLA_FLAGS"] == "--tf_xla_persistent_cache_directory=/elsewhere"


def test_the_end_of_a_process_records_the_maker_of_its_start(tmp_path, monkeypatch):
    """TensorFlow compiled with the `XLA_FLAGS` it started with: a later change to the
    environment does not relabel its programs."""
    at_exit = []
    monkeypatch.setattr(xla_compilation_cache.atexit, "register",
                        lambda function, *arguments: at_exit.append((function, arguments)))
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert xla_compilation_cache.use_cache({"KERASNMT_XLA_CACHE": str(tmp_path)}) == str(
        tmp_path)
    _entry(tmp_path, "1__1", b"compiled at level 0")
    monkeypatch.setenv("XLA_FLAGS", "")
    (function, arguments), = at_exit
    function(*arguments)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["maker"]["xla_flags"] == "--xla_backend_optimization_level=0"
    assert list(manifest["entries"]) == [f"{PREFIX}__1__1__XLA_CPU_JIT.pb"]


def test_a_directory_with_white_space_is_refused_with_a_warning(tmp_path, caplog):
    environ = {"KERASNMT_XLA_CACHE": str(tmp_path / "my cache")}
    with caplog.at_level(logging.WARNING):
        assert xla_compilation_cache.use_cache(environ) is None
    assert "white space" in caplog.text and "TF_XLA_FLAGS" not in environ
    assert not (tmp_path / "my cache").exists()


def _translate(cache=None):
    env = dict(os.environ)
    if cache is not None:
        env["KERASNMT_XLA_CACHE"] = str(cache)
    result = subprocess.run([sys.executable, "-c", TRANSLATE], cwd=REPOSITORY, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("kerasnmt:")]
    return result.stdout.splitlines(), warnings


def _programs(cache):
    return {name: os.stat(cache / name).st_mtime_ns
            for name in os.listdir(cache) if name != MANIFEST}


def test_programs_are_loaded_by_the_next_process_and_a_bad_cache_changes_no_translation(
        tmp_path):
    cache = tmp_path / "xla"
    # An empty cache: every program compiled, as without one.
    expected, warnings = _translate(cache)
    assert len(expected) == 2 and warnings == []
    written = _programs(cache)
    assert len(written) == 2
    # Loaded, not compiled again: no program is written again.
    assert _translate(cache) == (expected, [])
    assert _programs(cache) == written

    damaged = cache / sorted(written)[0]
    damaged.write_bytes(damaged.read_bytes()[:1000])
    translations, warnings = _translate(cache)
    assert translations == expected
    assert len(warnings) == 1 and "1 programs" in warnings[0] and "damaged" in warnings[0]
    # Compiled again, and recorded.
    assert set(_programs(cache)) == set(written)
    assert set(json.loads((cache / MANIFEST).read_text())["entries"]) == set(written)
