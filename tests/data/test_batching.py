"""Length filter, bucketing and batch sizes, on numeric examples whose answer is known."""

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.batching import (
    batch_sequence_dataset,
    bucket_batch_size,
    filter_examples_by_length,
    filter_irregular_batches,
)


def _example(source_tokens, target_tokens):
    """A preprocessed example with ids that encode the lengths (source ids all 3)."""
    return (
        {"ids": tf.fill([source_tokens], 3), "length": source_tokens},
        {
            "ids": tf.concat([[1], tf.fill([target_tokens], 4)], 0),
            "ids_out": tf.concat([tf.fill([target_tokens], 4), [2]], 0),
            "length": target_tokens + 1,
        },
    )


def _examples(lengths):
    sources, targets = zip(*lengths)
    dataset = tf.data.Dataset.from_tensor_slices((list(sources), list(targets)))
    return dataset.map(_example)


def _lengths(dataset):
    return [
        (int(features["length"]), int(labels["length"]) - 1) for features, labels in dataset
    ]


def test_length_filter_boundaries():
    pairs = [(0, 1), (1, 0), (1, 1), (3, 3), (4, 3), (3, 4), (4, 4), (5, 1)]
    kept = _examples(pairs).apply(
        filter_examples_by_length(maximum_features_length=4, maximum_labels_length=3)
    )
    # 0 < source <= 4 and 0 < target tokens + 1 <= 3 (a target counts its </s>, as in
    # OpenNMT-tf): at most 2 target tokens, and an empty target (length 1) is kept.
    assert _lengths(kept) == [(1, 0), (1, 1)]
    unlimited = _examples(pairs).apply(filter_examples_by_length())
    assert _lengths(unlimited) == [(1, 0), (1, 1), (3, 3), (4, 3), (3, 4), (4, 4), (5, 1)]


def test_length_filter_rejects_zero_maximum():
    with pytest.raises(ValueError, match="maximum_labels_length"):
        filter_examples_by_length(maximum_labels_length=0)


def test_token_batches_of_the_reference_note():
    # batch_size=100 tokens, width 1: length 5 -> 100 // 5 = 20 examples; with a
    # multiple of 8, 20 // 8 * 8 = 16.
    assert bucket_batch_size(4, 100, 1) == 20
    assert bucket_batch_size(4, 100, 1, batch_size_multiple=8) == 16
    # 48 examples of source 5 and target 3 (length max(5, 3 + 1) = 5), then 48 of source
    # 2 and target 4 (length max(2, 4 + 1) = 5: a target counts its </s>): all in bucket
    # 4, in windows of 20 (16 with the multiple 8) in arrival order; the third window
    # holds 8 + 12 of both kinds, so its sources are padded to 5.
    examples = _examples([(5, 3)] * 48 + [(2, 4)] * 48)
    batches = examples.apply(batch_sequence_dataset(100, "tokens", length_bucket_width=1))
    sizes = [(int(f["ids"].shape[1]), int(f["length"].shape[0])) for f, _ in batches]
    assert sorted(sizes) == [(2, 16), (2, 20), (5, 20), (5, 20), (5, 20)]
    batches = examples.apply(
        batch_sequence_dataset(100, "tokens", batch_size_multiple=8, length_bucket_width=1)
    )
    sizes = [(int(f["ids"].shape[1]), int(f["length"].shape[0])) for f, _ in batches]
    assert sorted(sizes) == [(2, 16), (2, 16), (2, 16), (5, 16), (5, 16), (5, 16)]


def test_token_batch_size_never_below_the_multiple():
    # 100 // 30 = 3 examples, rounded down to a multiple of 8 is 0: take 8.
    assert bucket_batch_size(29, 100, 1, batch_size_multiple=8) == 8
    examples = _examples([(30, 30)] * 10)
    batches = examples.apply(
        batch_sequence_dataset(100, "tokens", batch_size_multiple=8, length_bucket_width=1)
    )
    assert [int(f["length"].shape[0]) for f, _ in batches] == [8, 2]


def test_buckets_group_by_the_longer_side():
    # Width 5: bucket 0 holds lengths 1-5, bucket 1 6-10, bucket 2 11-15, the length being
    # max(source, target + 1): (1, 5), (6, 1), (5, 5) and (7, 7) go to bucket 1 (the
    # first three make a batch of 3), (2, 10) to bucket 2, (3, 3) to bucket 0.
    lengths = [(1, 5), (6, 1), (5, 5), (2, 10), (3, 3), (7, 7)]
    batches = _examples(lengths).apply(batch_sequence_dataset(3, length_bucket_width=5))
    got = sorted(
        sorted(zip(f["length"].numpy().tolist(), (l["length"].numpy() - 1).tolist()))
        for f, l in batches
    )
    assert got == [[(1, 5), (5, 5), (6, 1)], [(2, 10)], [(3, 3)], [(7, 7)]]


def test_token_windows_use_the_bucket_boundary():
    # Width 5, 60 tokens: bucket 0 (lengths 1-5) -> 12 examples, bucket 1 -> 6.
    lengths = [(1, 1)] * 12 + [(6, 6)] * 6
    batches = _examples(lengths).apply(batch_sequence_dataset(60, "tokens", length_bucket_width=5))
    assert sorted(int(f["length"].shape[0]) for f, _ in batches) == [6, 12]


def test_padding_to_the_batch_or_to_the_bucket_boundary():
    lengths = [(2, 3), (1, 1)]
    (features, labels), = list(_examples(lengths).apply(batch_sequence_dataset(2, length_bucket_width=4)))
    assert features["ids"].numpy().tolist() == [[3, 3], [3, 0]]
    assert labels["ids"].numpy().tolist() == [[1, 4, 4, 4], [1, 4, 0, 0]]
    (features, labels), = list(
        _examples(lengths).apply(
            batch_sequence_dataset(2, length_bucket_width=4, pad_to_bucket_boundary=True)
        )
    )
    # Bucket 0 of width 4 (lengths max(source, target + 1) of 1-4): sources and target
    # ids (<s> or </s> included) to 4 positions.
    assert features["ids"].numpy().tolist() == [[3, 3, 0, 0], [3, 0, 0, 0]]
    assert labels["ids"].numpy().tolist() == [[1, 4, 4, 4], [1, 4, 0, 0]]
    assert labels["ids_out"].numpy().tolist() == [[4, 4, 4, 2], [4, 2, 0, 0]]
    assert features["length"].numpy().tolist() == [2, 1]


def test_pad_to_bucket_boundary_pads_alignments_and_tokens():
    def with_extras(features, labels):
        labels = dict(labels)
        source, target = features["length"], labels["length"] - 1
        labels["alignment"] = tf.eye(target, source)
        labels["tokens"] = tf.fill([target], "t")
        return features, labels

    (features, labels), = list(
        _examples([(3, 2)]).map(with_extras).apply(
            batch_sequence_dataset(4, length_bucket_width=4, pad_to_bucket_boundary=True)
        )
    )
    # Length max(3, 2 + 1) = 3, bucket 0 of width 4: target tokens (and the alignment's
    # rows) padded to 4 - 1 = 3, sources to 4.
    assert labels["alignment"].shape == (1, 3, 4)
    np.testing.assert_array_equal(labels["alignment"][0, :2, :3], np.eye(2, 3))
    assert labels["alignment"].numpy().sum() == 2
    assert labels["tokens"].numpy().tolist() == [[b"t", b"t", b""]]


def test_examples_without_bucketing_keep_arrival_order():
    batches = _examples([(1, 1), (9, 9), (2, 2)]).apply(batch_sequence_dataset(2))
    assert [f["length"].numpy().tolist() for f, _ in batches] == [[1, 9], [2]]


def test_bad_batching_options():
    with pytest.raises(ValueError, match="length_bucket_width"):
        batch_sequence_dataset(100, "tokens")
    with pytest.raises(ValueError, match="batch_type"):
        batch_sequence_dataset(100, "sentences", length_bucket_width=1)
    with pytest.raises(ValueError, match="pad_to_bucket_boundary"):
        batch_sequence_dataset(100, pad_to_bucket_boundary=True)


def test_filter_irregular_batches():
    batches = _examples([(1, 1)] * 10).apply(batch_sequence_dataset(4, length_bucket_width=1))
    assert [int(f["length"].shape[0]) for f, _ in batches] == [4, 4, 2]
    kept = batches.apply(filter_irregular_batches(4))
    assert [int(f["length"].shape[0]) for f, _ in kept] == [4, 4]
    assert len(list(batches.apply(filter_irregular_batches(1)))) == 3
