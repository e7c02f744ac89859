"""Batches planned from the lengths stored beside the shards: every example once an epoch,
the token budget kept, little padding, an exact resume, bad shards named before reading."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.batch_plan import padding_fraction, plan_batches
from kerasnmt.data.shard_batches import shard_batches
from kerasnmt.data.shards import ShardsError, check_shards_preprocessor, write_shards
from kerasnmt.data.training_pipeline import training_dataset
from kerasnmt.data.vocabulary_builder import build_vocabulary
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
from tests.data.test_shards import NUM_LINES, _text_examples, corpus, preprocessor  # noqa: F401


@pytest.fixture(scope="module")
def shards(corpus, preprocessor, tmp_path_factory):  # noqa: F811
    directory = tmp_path_factory.mktemp("shards")
    return write_shards(corpus["en"], corpus["de"], preprocessor, str(directory), num_shards=4, seed=7)


def _pairs(batches):
    """`(source ids, target ids)` of every example of `batches`, padding cut."""
    pairs = []
    for features, labels in batches:
        for i in range(len(features["ids"])):
            source = features["ids"][i][: features["length"][i]]
            target = labels["ids_out"][i][: labels["length"][i]]
            pairs.append((tuple(source), tuple(target)))
    return pairs


def _lists(batches):
    if isinstance(batches, tf.data.Dataset):
        batches = batches.as_numpy_iterator()
    return [tf.nest.map_structure(lambda value: value.tolist(), batch) for batch in batches]


@pytest.mark.parametrize("seed", range(5))
def test_a_plan_holds_each_example_once_within_the_budget_in_sorted_runs(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 30, size=(300, 2))
    budget, multiple = 128, 4
    batches = plan_batches(lengths, budget, batch_size_multiple=multiple, rng=rng)
    assert sorted(np.concatenate(batches).tolist()) == list(range(300))
    # The length OpenNMT-tf counts: a target's tokens and its </s>.
    longest = np.maximum(lengths[:, 0], lengths[:, 1] + 1)
    runs = sorted((longest[batch].min(), longest[batch].max()) for batch in batches)
    for batch in batches:
        tokens = len(batch) * longest[batch].max()
        assert len(batch) % multiple == 0 or batch is batches[-1] or len(batch) < multiple
        assert tokens <= budget or len(batch) == multiple
    # Sorted runs: the batches' length ranges do not interleave.
    for (_, high), (low, _) in zip(runs, runs[1:]):
        assert high <= low
    # Greedy: no batch could take the next example of its run within the budget.
    brute_force = []
    order = np.lexsort((lengths[:, 1], lengths[:, 0], longest))
    start = 0
    while start < len(order):
        size = 1
        while start + size < len(order) and (size + 1) * longest[order[start + size]] <= budget:
            size += 1
        size = max(size // multiple * multiple, multiple)
        brute_force.append(size)
        start += size
    assert sorted(len(batch) for batch in batches) == sorted(brute_force)


def test_one_epoch_holds_exactly_the_text_examples_that_pass_the_limits(
        corpus, preprocessor, shards):  # noqa: F811
    limits = dict(maximum_features_length=14, maximum_labels_length=16)
    text = training_dataset(corpus["en"], corpus["de"], preprocessor, batch_size=300,
                            batch_type="tokens", sample_buffer_size=0, repeat=False, **limits)
    planned = training_dataset(shards=shards, batch_size=300, batch_type="tokens",
                               sample_buffer_size=-1, seed=3, repeat=False, **limits)
    batches = _lists(planned.as_numpy_iterator())
    expected = sorted(_pairs(_lists(text.as_numpy_iterator())))
    assert sorted(_pairs(batches)) == expected
    assert len(expected) < NUM_LINES  # the limits dropped some
    for features, labels in batches:
        longest = max(max(features["length"]), max(labels["length"]) - 1)
        assert len(features["ids"]) * longest <= 300


def test_padding_is_what_the_plan_says_and_far_below_unsorted_batches(shards):
    planned = _lists(shard_batches(shards, batch_size=400, seed=1, repeat=False))

    def padded_share(batches):
        padded = real = 0
        for features, labels in batches:
            for ids, count in ((features["ids"], features["length"]),
                               (labels["ids_out"], labels["length"])):
                padded += np.size(ids)
                real += sum(count)
        return 1 - real / padded

    lengths = np.array([[len(source), len(target) - 1] for source, target in _pairs(planned)])
    offsets = np.cumsum([0] + [len(features["ids"]) for features, _ in planned])
    plan = [np.arange(a, b) for a, b in zip(offsets, offsets[1:])]
    assert padded_share(planned) == pytest.approx(padding_fraction(lengths, plan))
    # The same batch sizes drawn without sorting pad three times as much.
    shuffled = np.random.default_rng(0).permutation(len(lengths))
    unsorted = [shuffled[a:b] for a, b in zip(offsets, offsets[1:])]
    assert padded_share(planned) < padding_fraction(lengths, unsorted) / 3


def test_resuming_at_a_batch_index_continues_the_same_stream_across_epochs(shards):
    options = dict(batch_size=500, batch_type="tokens", sample_buffer_size=100, seed=5)
    first_epoch = len(list(shard_batches(shards, repeat=False, **options)))
    stream = _lists(shard_batches(shards, **options).take(first_epoch + 6))
    # The second epoch is another shuffle of the same examples.
    assert sorted(_pairs(stream[:first_epoch])) == sorted(_pairs(stream[first_epoch:] + _lists(
        shard_batches(shards, start_batch=first_epoch + 6, **options).take(first_epoch - 6))))
    assert _pairs(stream[:first_epoch]) != _pairs(stream[first_epoch:])
    for start in (3, first_epoch - 1, first_epoch + 2):
        resumed = _lists(shard_batches(shards, start_batch=start, **options).take(4))
        assert resumed == stream[start : start + 4]


def test_weighted_corpora_are_sampled_by_batch_and_resume_exactly(corpus, preprocessor, tmp_path):  # noqa: F811
    indexes = [
        write_shards(corpus["en"], corpus["de"], preprocessor, str(tmp_path / name),
                     num_shards=shards, seed=seed)
        for name, shards, seed in (("a", 3, 9), ("b", 2, 1))
    ]
    options = dict(batch_size=200, batch_type="tokens", seed=2, train_files_weights=[1, 3])
    stream = _lists(shard_batches(indexes, **options).take(12))
    assert _lists(shard_batches(indexes, start_batch=7, **options).take(5)) == stream[7:]


def test_pad_to_bucket_boundary_and_replicas_shape_the_batches(shards):
    batches = _lists(shard_batches(shards, batch_size=100, num_replicas=2, pad_to_bucket_boundary=True,
                                   length_bucket_width=8, repeat=False))
    for features, labels in batches:
        assert len(features["ids"]) % 2 == 0
        width = len(features["ids"][0])
        # Target ids (tokens and </s>) are counted in the bucket's length, so padded alike.
        assert width % 8 == 0 and len(labels["ids_out"][0]) == width
        assert len(features["ids"]) * width <= 200 or len(features["ids"]) == 2


def test_bad_shards_are_named_before_the_first_batch(corpus, preprocessor, tmp_path):  # noqa: F811
    directory = tmp_path / "s"
    index = write_shards(corpus["en"], corpus["de"], preprocessor, str(directory), num_shards=2)
    shard = directory / "train-00001-of-00002.tfrecord"
    content = shard.read_bytes()
    shard.write_bytes(content[:-100])
    with pytest.raises(ShardsError, match=r"train-00001-of-00002\.tfrecord: \d+ bytes, but the "
                                          r"index .* recorded \d+ \(a truncated"):
        shard_batches(index, batch_size=100)
    shard.write_bytes(content)
    lengths = directory / "train-00000-of-00002.lengths.npy"
    os.rename(lengths, tmp_path / "aside.npy")
    with pytest.raises(ShardsError, match=r"train-00000-of-00002\.lengths\.npy is missing"):
        shard_batches(index, batch_size=100)
    os.rename(tmp_path / "aside.npy", lengths)
    with pytest.raises(ShardsError, match=r"no training example in .*train\.index\.json: every "
                                          r"example needs 0 < source length <= "
                                          r"maximum_features_length=1"):
        shard_batches(index, batch_size=100, maximum_features_length=1, maximum_labels_length=1)
    other = TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(),
                                    build_vocabulary([corpus["de"]]), build_vocabulary([corpus["de"]]))
    with pytest.raises(ShardsError, match=r"train\.index\.json: these shards were written with "
                                          r"other tokenizers or vocabularies"):
        shard_batches(index, batch_size=100,
                      preprocessor_check=lambda index: check_shards_preprocessor(index, other))
    shard_batches(index, batch_size=100,
                  preprocessor_check=lambda index: check_shards_preprocessor(index, preprocessor))
    with open(index, encoding="utf-8") as file:
        old = json.load(file)
    old["format"] = "kerasnmt-shards-1"
    with open(index, "w", encoding="utf-8") as file:
        json.dump(old, file)
    with pytest.raises(ShardsError, match=r"format 'kerasnmt-shards-1', but this version of "
                                          r"kerasnmt reads 'kerasnmt-shards-2': write the shards "
                                          r"again with kerasnmt prepare"):
        shard_batches(index, batch_size=100)
