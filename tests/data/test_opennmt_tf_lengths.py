"""kerasnmt keeps the examples OpenNMT-tf 2.32 keeps, and the text pipeline batches them as
OpenNMT-tf does, on a small parallel file.

`tests/fixtures/opennmt_tf/lengths/opennmt_batches.json` holds the batches that
OpenNMT-tf's own `make_training_dataset` made of `src.txt`/`tgt.txt` (one pass, no
shuffle) for several option sets (`lengths_pipeline.py` regenerates it). The file has
targets of exactly `maximum_labels_length` tokens (OpenNMT-tf counts their `</s>` and
drops them), an empty source (dropped) and an empty target (kept, its length is 1).
"""

import json
from pathlib import Path

import pytest

from kerasnmt.data.batch_plan import kept_examples
from kerasnmt.data.shard_batches import shard_batches
from kerasnmt.data.shards import shard_lengths, load_shards_index, write_shards
from kerasnmt.data.training_pipeline import training_dataset
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "opennmt_tf" / "lengths"
SOURCE, TARGET = str(FIXTURE / "src.txt"), str(FIXTURE / "tgt.txt")
CASES = json.loads((FIXTURE / "opennmt_batches.json").read_text(encoding="utf-8"))["cases"]
LIMITS = ("maximum_features_length", "maximum_labels_length")


def _case_id(case):
    return "-".join(f"{key}={value}" for key, value in case["options"].items())


@pytest.fixture(scope="module")
def vocabulary():
    return (FIXTURE / "vocab.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def preprocessor(vocabulary):
    return TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary)


@pytest.fixture(scope="module")
def shards(preprocessor, tmp_path_factory):
    directory = tmp_path_factory.mktemp("shards")
    return write_shards(SOURCE, TARGET, preprocessor, str(directory), num_shards=2, seed=None)


def _texts(batches, vocabulary):
    """Each batch's `(source, target)` lines, read back from the ids."""
    texts = []
    for features, labels in batches:
        pairs = []
        for i in range(len(features["length"])):
            source = features["ids"][i][: features["length"][i]]
            # The labels' ids start with <s>, and their "length" counts it.
            target = labels["ids"][i][1 : labels["length"][i]]
            pairs.append((
                " ".join(vocabulary[int(id_)] for id_ in source),
                " ".join(vocabulary[int(id_)] for id_ in target),
            ))
        texts.append(pairs)
    return texts


def _opennmt_texts(case):
    return [list(zip(batch["sources"], batch["targets"])) for batch in case["batches"]]


def test_the_fixture_holds_the_boundary_cases():
    sources = (FIXTURE / "src.txt").read_text(encoding="utf-8").splitlines()
    targets = (FIXTURE / "tgt.txt").read_text(encoding="utf-8").splitlines()
    kept = {pair for batch in _opennmt_texts(CASES[0]) for pair in batch}
    limit = CASES[0]["options"]["maximum_labels_length"]
    at_limit = [(s, t) for s, t in zip(sources, targets)
                if len(t.split()) == limit and 0 < len(s.split()) <= 7]
    # Targets of maximum_labels_length tokens exist, and OpenNMT-tf drops every one.
    assert at_limit and not kept & set(at_limit)
    assert any(len(t.split()) == limit - 1 for _, t in kept)
    # Without limits, the empty sources are dropped and the empty target kept.
    unlimited = {pair for batch in _opennmt_texts(CASES[-1]) for pair in batch}
    assert len(unlimited) == len(sources) - sum(not s for s in sources)
    assert any(not t for _, t in unlimited)
    # OpenNMT-tf's target length is its tokens + 1.
    for batch in CASES[-1]["batches"]:
        for target, length in zip(batch["targets"], batch["target_lengths"]):
            assert length == len(target.split()) + 1


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_text_pipeline_keeps_and_batches_as_opennmt_tf(case, preprocessor, vocabulary):
    dataset = training_dataset(
        SOURCE, TARGET, preprocessor, sample_buffer_size=0, repeat=False, **case["options"]
    )
    batches = [(features, labels) for features, labels in dataset.as_numpy_iterator()]
    # The same batches, of the same examples, in the same order.
    assert _texts(batches, vocabulary) == _opennmt_texts(case)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_shard_pipeline_keeps_the_examples_opennmt_tf_keeps(case, shards, vocabulary):
    limits = {key: case["options"].get(key) for key in LIMITS}
    expected = sorted(pair for batch in _opennmt_texts(case) for pair in batch)
    options = dict(batch_size=case["options"]["batch_size"], batch_type=case["options"]["batch_type"])
    batches = list(shard_batches(shards, sample_buffer_size=0, repeat=False, **limits, **options)
                   .as_numpy_iterator())
    assert sorted(pair for batch in _texts(batches, vocabulary) for pair in batch) == expected
    lengths = shard_lengths(load_shards_index(shards))
    assert sum(len(kept_examples(part, *limits.values())) for part in lengths) == len(expected)


@pytest.mark.parametrize("case", [case for case in CASES if case["options"]["batch_type"] == "tokens"],
                         ids=_case_id)
def test_shard_batches_keep_opennmt_tf_token_budget(case, shards, vocabulary):
    # The shard pipeline cuts sorted windows rather than OpenNMT-tf's buckets, but counts
    # a batch's tokens as OpenNMT-tf does: examples times the longest length, a target's
    # length being OpenNMT-tf's labels length (its tokens and </s>).
    options = case["options"]
    lengths = {}
    for batch in case["batches"]:
        for source, target, source_length, target_length in zip(
                batch["sources"], batch["targets"], batch["source_lengths"], batch["target_lengths"]):
            lengths[source, target] = max(source_length, target_length)
    multiple = options.get("batch_size_multiple", 1)
    batches = shard_batches(shards, batch_size=options["batch_size"], batch_type="tokens",
                            batch_size_multiple=multiple, sample_buffer_size=0, repeat=False,
                            **{key: options.get(key) for key in LIMITS})
    texts = _texts(list(batches.as_numpy_iterator()), vocabulary)
    assert sum(len(pairs) for pairs in texts) == len(lengths)
    for pairs in texts:
        longest = max(lengths[pair] for pair in pairs)
        assert len(pairs) * longest <= options["batch_size"] or len(pairs) == multiple
