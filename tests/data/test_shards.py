"""Sharded TFRecord corpora: same examples as the text pipeline, deterministic, atomic."""

import hashlib
import itertools
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import tensorflow as tf

from kerasnmt.data.shards import (
    ShardsError,
    load_shards_index,
    read_shards,
    shard_records,
    write_shards,
)
from kerasnmt.data.shuffling import shuffled_parallel_lines
from kerasnmt.data.training_pipeline import training_dataset
from kerasnmt.data.vocabulary_builder import build_vocabulary
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(26)

# The Multi30k sample bundled with the quickstart.
MULTI30K = pathlib.Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "data"
NUM_LINES = 240


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 240 pairs of the Multi30k train sample, plus a diagonal Pharaoh alignment file."""
    directory = tmp_path_factory.mktemp("multi30k")
    paths = {}
    lines = {}
    for language in ("en", "de"):
        with open(os.path.join(MULTI30K, f"train.{language}"), encoding="utf-8") as file:
            lines[language] = [line.rstrip("\n") for line in itertools.islice(file, NUM_LINES)]
        paths[language] = str(directory / f"train.{language}")
        with open(paths[language], "w", encoding="utf-8") as file:
            file.write("".join(line + "\n" for line in lines[language]))
    alignments = []
    for english, german in zip(lines["en"], lines["de"]):
        size = min(len(english.split()), len(german.split()))
        alignments.append(" ".join(f"{i}-{i}" for i in range(0, size, 2)))
    paths["align"] = str(directory / "train.align")
    with open(paths["align"], "w", encoding="utf-8") as file:
        file.write("".join(line + "\n" for line in alignments))
    paths["directory"] = directory
    return paths


@pytest.fixture(scope="module")
def preprocessor(corpus):
    return TranslationPreprocessor(
        WhitespaceTokenizer(),
        WhitespaceTokenizer(),
        build_vocabulary([corpus["en"]]),
        build_vocabulary([corpus["de"]]),
    )


def _as_lists(example):
    return tf.nest.map_structure(lambda value: value.tolist(), example)


def _text_examples(corpus, preprocessor, with_alignment=False):
    """The preprocessor called on each line pair, one example at a time."""
    paths = [corpus["en"], corpus["de"]] + ([corpus["align"]] if with_alignment else [])
    lines, _ = shuffled_parallel_lines(paths, 0)
    examples = lines.map(lambda line_number, *texts: preprocessor(*texts))
    return [_as_lists(example) for example in examples.as_numpy_iterator()]


def _digests(directory):
    return {
        name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
        for name in sorted(os.listdir(directory))
    }


def test_shards_hold_exactly_the_text_examples(corpus, preprocessor, tmp_path):
    index = write_shards(
        corpus["en"], corpus["de"], preprocessor, str(tmp_path / "shards"), name="m30k",
        alignment_file=corpus["align"], num_shards=7, seed=None,
    )
    assert sorted(os.listdir(tmp_path / "shards")) == sorted(
        [f"m30k-{shard:05d}-of-00007.{kind}" for shard in range(7)
         for kind in ("tfrecord", "lengths.npy")] + ["m30k.index.json"]
    )
    loaded = load_shards_index(index)
    # 240 lines in 7 contiguous shards starting at lines 240 * s // 7: 0, 34, 68, 102, 137, ...
    assert [shard["num_examples"] for shard in loaded["shards"]] == [34, 34, 34, 35, 34, 34, 35]
    assert loaded["num_examples"] == NUM_LINES
    expected = _text_examples(corpus, preprocessor, with_alignment=True)
    got = [_as_lists(example) for example in read_shards(index).as_numpy_iterator()]
    assert got == expected
    assert any(sum(map(sum, labels["alignment"])) > 1 for _, labels in got)


def test_seeded_shards_are_identical_whatever_the_process_count(corpus, preprocessor, tmp_path):
    runs = {}
    for run, processes in (("first", 1), ("again", 1), ("two_processes", 2)):
        write_shards(
            corpus["en"], corpus["de"], preprocessor, str(tmp_path / run), num_shards=4,
            num_processes=processes, seed=13,
        )
        runs[run] = _digests(tmp_path / run)
    assert runs["first"] == runs["again"] == runs["two_processes"]
    # The seed shuffles the examples inside each shard, and only there.
    expected = _text_examples(corpus, preprocessor)
    got = [_as_lists(e) for e in read_shards(str(tmp_path / "first")).as_numpy_iterator()]
    assert got != expected
    for shard in range(4):
        span = slice(shard * NUM_LINES // 4, (shard + 1) * NUM_LINES // 4)
        assert sorted(map(str, got[span])) == sorted(map(str, expected[span]))
    write_shards(corpus["en"], corpus["de"], preprocessor, str(tmp_path / "other"), num_shards=4, seed=14)
    assert _digests(tmp_path / "other") != runs["first"]


def test_shuffled_reading_interleaves_shuffled_files_and_splits_workers(corpus, preprocessor, tmp_path):
    index = write_shards(
        corpus["en"], corpus["de"], preprocessor, str(tmp_path / "shards"), num_shards=4, seed=None
    )
    records, count, _ = shard_records(index, shuffle_files=True, seed=3, cycle_length=2)
    in_order, _, _ = shard_records(index)
    order = list(in_order.as_numpy_iterator())
    position = {record: i for i, record in enumerate(order)}
    epochs = [[position[r] for r in records.as_numpy_iterator()] for _ in range(2)]
    assert count == NUM_LINES
    for epoch in epochs:
        assert sorted(epoch) == list(range(NUM_LINES))
        # Two files at a time, one record from each in turn: the first two records
        # are the first records of two different shards.
        assert {epoch[0], epoch[1]} <= {0, 60, 120, 180} and epoch[0] != epoch[1]
        assert epoch[2] == epoch[0] + 1 and epoch[3] == epoch[1] + 1
    assert epochs[0] != epochs[1]
    seen = []
    for worker in range(2):
        records, count, _ = shard_records(index, num_shards=2, shard_index=worker)
        positions = [position[r] for r in records.as_numpy_iterator()]
        # Whole files: worker 0 reads shards 0 and 2, worker 1 shards 1 and 3.
        assert {p // 60 for p in positions} == {worker, worker + 2} and count == 120
        seen += positions
    assert sorted(seen) == list(range(NUM_LINES))
    records, count, _ = shard_records(index, num_shards=8, shard_index=5)
    assert [position[r] for r in records.as_numpy_iterator()] == list(range(5, NUM_LINES, 8))
    assert count == 30


def test_mismatched_files_and_bad_alignments_stop_the_writer(corpus, preprocessor, tmp_path):
    short = tmp_path / "short.de"
    short.write_text("Ein Hund.\n")
    with pytest.raises(ValueError, match=r"train\.en has 240 lines but .*short\.de has 1"):
        write_shards(corpus["en"], str(short), preprocessor, str(tmp_path / "out"))
    lines = open(corpus["align"], encoding="utf-8").read().splitlines()
    lines[99] = "0-0 0-99"
    bad = tmp_path / "bad.align"
    bad.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(ValueError, match=r"bad\.align, line 100: alignment index out of range"):
        write_shards(
            corpus["en"], corpus["de"], preprocessor, str(tmp_path / "out"),
            alignment_file=str(bad), num_shards=2,
        )
    assert not any(name.endswith(".index.json") for name in os.listdir(tmp_path / "out"))


def test_missing_index_or_shard_is_an_error(corpus, preprocessor, tmp_path):
    with pytest.raises(ShardsError, match="no shard index"):
        load_shards_index(str(tmp_path / "nothing.index.json"))
    index = write_shards(corpus["en"], corpus["de"], preprocessor, str(tmp_path / "s"), num_shards=2)
    os.remove(tmp_path / "s" / "train-00001-of-00002.tfrecord")
    with pytest.raises(ShardsError, match="train-00001-of-00002.tfrecord is missing"):
        read_shards(index)


def test_rewriting_a_directory_replaces_its_shards(corpus, preprocessor, tmp_path):
    output = tmp_path / "shards"
    write_shards(corpus["en"], corpus["de"], preprocessor, str(output), num_shards=4)
    (output / "train-00001-of-00002.tfrecord.tmp-123").write_bytes(b"partial")
    (output / "train-00001-of-00002.lengths.npy.tmp-123").write_bytes(b"partial")
    (output / "notes.txt").write_text("kept")
    write_shards(corpus["en"], corpus["de"], preprocessor, str(output), num_shards=2)
    assert sorted(os.listdir(output)) == [
        "notes.txt", "train-00000-of-00002.lengths.npy", "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.lengths.npy", "train-00001-of-00002.tfrecord", "train.index.json",
    ]


_SLOW_WRITER = """
import sys, time
import tensorflow as tf
from kerasnmt.data.shards import write_shards
from kerasnmt.data.vocabulary_builder import build_vocabulary
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

class SlowWriter(tf.io.TFRecordWriter):
    def write(self, record):
        time.sleep(0.02)
        super().write(record)

tf.io.TFRecordWriter = SlowWriter
english, german, output = sys.argv[1:]
preprocessor = TranslationPreprocessor(
    WhitespaceTokenizer(), WhitespaceTokenizer(),
    build_vocabulary([english]), build_vocabulary([german]))
write_shards(english, german, preprocessor, output, num_shards=3)
"""


def test_a_killed_writer_leaves_no_partial_shard_under_a_final_name(corpus, tmp_path):
    script = tmp_path / "slow_writer.py"
    script.write_text(textwrap.dedent(_SLOW_WRITER))
    output = tmp_path / "shards"
    writer = subprocess.Popen(
        [sys.executable, str(script), corpus["en"], corpus["de"], str(output)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline and writer.poll() is None:
        if output.exists() and any(".tfrecord.tmp-" in name for name in os.listdir(output)):
            break
        time.sleep(0.05)
    assert writer.poll() is None, "the writer ended before it could be killed"
    time.sleep(0.3)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    names = os.listdir(output)
    assert any(".tfrecord.tmp-" in name for name in names)
    assert not any(name.endswith(".index.json") for name in names)
    # Any shard under its final name is complete: 80 examples (240 lines, 3 shards).
    for name in names:
        if name.endswith(".tfrecord"):
            assert sum(1 for _ in tf.data.TFRecordDataset(str(output / name))) == 80
    with pytest.raises(ShardsError, match="expected one NAME.index.json"):
        read_shards(str(output))


class RecordedProgress:
    """What `write_shards` reports: the jobs' totals and every `update(job, examples)`."""

    def __init__(self, totals):
        self.totals = totals
        self.updates = []
        self.finished = False

    def update(self, job, examples):
        assert not self.finished
        self.updates.append((job, examples))

    def finish(self):
        self.finished = True


@pytest.mark.parametrize("processes", [1, 3])
def test_progress_counts_each_writing_process_examples(corpus, preprocessor, tmp_path,
                                                       processes):
    """240 lines in 7 shards of 34, 34, 34, 35, 34, 34, 35 examples: process j writes
    shards j, j + P, ...; its updates (one a chunk of at most 256) add up to its total,
    from its worker process as from this one, and the files do not depend on it."""
    reports = []

    def progress(totals):
        reports.append(RecordedProgress(totals))
        return reports[-1]

    write_shards(corpus["en"], corpus["de"], preprocessor, str(tmp_path / "shards"),
                 num_shards=7, num_processes=processes, seed=5, progress=progress)
    (report,) = reports
    sizes = [34, 34, 34, 35, 34, 34, 35]
    assert report.totals == [sum(sizes[j::processes]) for j in range(processes)]
    assert report.finished
    assert sorted(report.updates) == sorted((j, size) for j in range(processes)
                                            for size in sizes[j::processes])
    write_shards(corpus["en"], corpus["de"], preprocessor, str(tmp_path / "silent"),
                 num_shards=7, num_processes=processes, seed=5)
    assert _digests(tmp_path / "shards") == _digests(tmp_path / "silent")
