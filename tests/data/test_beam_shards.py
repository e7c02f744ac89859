"""The Apache Beam shard writer (`kerasnmt[beam]`) writes the same files as `write_shards`.

Needs apache-beam, which the `beam` extra installs (`make test` installs it); skipped
without it.
"""

import hashlib
import os

import pytest

from kerasnmt.data.shards import read_shards, write_shards
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

pytest.importorskip("apache_beam")
from kerasnmt.data.beam_shards import write_shards_with_beam  # noqa: E402 (needs apache_beam)


def _digests(directory):
    return {
        name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
        for name in sorted(os.listdir(directory))
    }


def test_direct_runner_writes_the_same_shards_as_write_shards(tmp_path):
    sources = [" ".join("abc"[(i * j) % 3] for j in range(1, i % 6 + 2)) for i in range(50)]
    targets = [" ".join("xy"[(i + j) % 2] for j in range(i % 4 + 1)) for i in range(50)]
    (tmp_path / "train.src").write_text("".join(s + "\n" for s in sources))
    (tmp_path / "train.tgt").write_text("".join(t + "\n" for t in targets))
    preprocessor = TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(),
        ["<blank>", "<s>", "</s>", "a", "b", "c"], ["<blank>", "<s>", "</s>", "x", "y"],
    )
    arguments = (str(tmp_path / "train.src"), str(tmp_path / "train.tgt"), preprocessor)
    write_shards(*arguments, str(tmp_path / "local"), num_shards=5, seed=3)
    index = write_shards_with_beam(
        *arguments, str(tmp_path / "beam"), num_shards=5, seed=3,
        pipeline_args=["--runner=DirectRunner", "--direct_num_workers=2"],
    )
    assert _digests(tmp_path / "beam") == _digests(tmp_path / "local")
    lengths = sorted(int(f["length"]) for f, _ in read_shards(index).as_numpy_iterator())
    assert lengths == sorted(i % 6 + 1 for i in range(50))
