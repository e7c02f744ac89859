"""Inference batches grouped by length, and outputs put back in input order."""

import pytest
import tensorflow as tf

from kerasnmt.data.inference_pipeline import in_original_order, inference_dataset
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

VOCABULARY = ["<blank>", "<s>", "</s>", "a", "b"]


@pytest.fixture(scope="module")
def preprocessor():
    return TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), VOCABULARY, VOCABULARY
    )


# Sentence i has length LENGTHS[i]; its first token tells "a" (even i) from "b" (odd i).
LENGTHS = [3, 1, 4, 1, 5, 0, 2, 6, 5, 3, 5, 2]
SENTENCES = [" ".join(["ab"[i % 2]] * n) for i, n in enumerate(LENGTHS)]


def _fake_translation(batch):
    """Stands in for a model: "translates" each sentence to its length and first id."""
    return [f"{length}:{ids[0] if length else '-'}" for length, ids in
            zip(batch["length"].numpy().tolist(), batch["ids"].numpy().tolist())]


def test_batches_group_lengths_and_outputs_come_back_in_order(tmp_path, preprocessor):
    path = tmp_path / "test.src"
    path.write_text("".join(sentence + "\n" for sentence in SENTENCES))
    batches = list(inference_dataset(str(path), preprocessor, batch_size=3, length_bucket_width=2))
    # Buckets of width 2: {0, 1, 2}, {3, 4}, {5, 6}; inside a batch the lengths differ
    # by less than the width, and the batches are not in input order.
    for batch in batches:
        lengths = batch["length"].numpy()
        assert max(lengths) - min(lengths) < 2 or max(lengths) <= 2
    indices = [batch["index"].numpy().tolist() for batch in batches]
    assert sorted(sum(indices, [])) == list(range(len(SENTENCES)))
    assert sum(indices, []) != list(range(len(SENTENCES)))
    outputs = in_original_order(
        (batch["index"].numpy(), _fake_translation(batch)) for batch in batches
    )
    expected = [f"{n}:{3 + i % 2 if n else '-'}" for i, n in enumerate(LENGTHS)]
    assert list(outputs) == expected


def test_token_batches_and_in_order_batches(preprocessor):
    sentences = tf.data.Dataset.from_tensor_slices(SENTENCES)
    batches = list(
        inference_dataset(sentences, preprocessor, batch_size=10, batch_type="tokens",
                          length_bucket_width=1)
    )
    # Width 1: one length a batch (the empty sentence joins length 1), at most
    # 10 // length sentences.
    for batch in batches:
        lengths = {max(length, 1) for length in batch["length"].numpy().tolist()}
        assert len(lengths) == 1
        assert int(batch["length"].shape[0]) <= 10 // lengths.pop()
    assert sorted(sum((b["index"].numpy().tolist() for b in batches), [])) == list(range(12))
    plain = list(inference_dataset(sentences, preprocessor, batch_size=5, length_bucket_width=None))
    assert [b["index"].numpy().tolist() for b in plain] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]


def test_in_original_order_streams_and_checks():
    arrivals = [([3, 1], ["d", "b"]), ([0], ["a"]), ([2, 4], ["c", "e"])]
    stream = in_original_order(iter(arrivals))
    assert next(stream) == "a" and next(stream) == "b"
    assert list(stream) == ["c", "d", "e"]
    with pytest.raises(ValueError, match="index 1 arrived twice"):
        list(in_original_order([([0, 1], "ab"), ([1], "b")]))
    with pytest.raises(ValueError, match="example 1 never arrived"):
        list(in_original_order([([0, 2], "ac")]))
