"""The training pipeline end to end on small hand-made corpora whose batches are known."""

import gzip
import itertools

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.training_pipeline import (
    make_training_batches,
    sampling_probabilities,
    training_dataset,
)
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(28)

SOURCE_VOCABULARY = ["<blank>", "<s>", "</s>", "a", "b", "c", "d"]
TARGET_VOCABULARY = ["<blank>", "<s>", "</s>", "x", "y", "z"]


@pytest.fixture(scope="module")
def preprocessor():
    return TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), SOURCE_VOCABULARY, TARGET_VOCABULARY
    )


def _write(path, lines):
    text = "".join(line + "\n" for line in lines)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as file:
            file.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def _corpus(tmp_path, sources, targets, prefix="train"):
    return (
        _write(tmp_path / f"{prefix}.src", sources),
        _write(tmp_path / f"{prefix}.tgt", targets),
    )


def _batches(dataset, count=None):
    batches = dataset if count is None else dataset.take(count)
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), batch) for batch in batches]


def test_batches_of_a_known_corpus(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a b", "c", "d a b", "", "a"], ["x", "y z", "z", "x", ""])
    dataset = training_dataset(
        source, target, preprocessor, batch_size=8, sample_buffer_size=0, repeat=False
    )
    batches = _batches(dataset)
    # The length is max(source, target + 1) (a target counts its </s>, as in OpenNMT-tf):
    # line 4's empty source is dropped, line 5's empty target kept (length 1); line 1 has
    # length 2, lines 2 and 3 length 3. The partial batches come out by bucket.
    assert [features["ids"] for features, _ in batches] == [[[3]], [[3, 4]], [[5, 0, 0], [6, 3, 4]]]
    assert batches[0][1] == {"ids": [[1]], "ids_out": [[2]], "length": [1]}
    assert batches[2][1] == {
        "ids": [[1, 4, 5], [1, 5, 0]],
        "ids_out": [[4, 5, 2], [5, 2, 0]],
        "length": [3, 2],
    }


def test_token_batches_of_the_reference_note(tmp_path, preprocessor):
    # 60 pairs of length 5 and 60 of length 3 (2 source tokens; 2 target tokens and
    # </s>). 100 tokens -> windows of 20 examples of length 5 and 33 of length 3; with a
    # multiple of 8, 16 and 32. The epoch ends with the partial windows (one pass, as
    # OpenNMT-tf, which repeats after batching).
    sources = ["a b c d a"] * 60 + ["a b"] * 60
    targets = ["x"] * 60 + ["y z"] * 60
    source, target = _corpus(tmp_path, sources, targets)
    expected = {
        1: [(2, 27), (2, 33), (5, 20), (5, 20), (5, 20)],
        8: [(2, 28), (2, 32), (5, 12), (5, 16), (5, 16), (5, 16)],
    }
    for multiple, sizes in expected.items():
        dataset = training_dataset(
            source, target, preprocessor, batch_size=100, batch_type="tokens",
            batch_size_multiple=multiple, sample_buffer_size=-1, seed=1, repeat=False,
        )
        got = sorted((len(f["ids"][0]), len(f["ids"])) for f, _ in _batches(dataset))
        assert got == sizes


def test_repeated_token_batches_are_all_full(tmp_path, preprocessor):
    # The corpus of the test above, repeated: a bucket's window fills across passes, so
    # no pass ends with partial batches: 20 examples of length 5, 33 of length 3, or with
    # a multiple of 8, 16 and 32.
    sources = ["a b c d a"] * 60 + ["a b"] * 60
    targets = ["x"] * 60 + ["y z"] * 60
    source, target = _corpus(tmp_path, sources, targets)
    for multiple, full in {1: {(5, 20), (2, 33)}, 8: {(5, 16), (2, 32)}}.items():
        dataset = training_dataset(
            source, target, preprocessor, batch_size=100, batch_type="tokens",
            batch_size_multiple=multiple, sample_buffer_size=-1, seed=1,
        )
        shapes = [(len(f["ids"][0]), len(f["ids"])) for f, _ in _batches(dataset, 60)]
        assert set(shapes) == full


def test_length_filter_counts_a_target_with_its_end_mark(tmp_path, preprocessor):
    source, target = _corpus(
        tmp_path, ["a", "a b", "a b c", "a", "a"], ["x", "x", "x", "x y", "x y z"]
    )
    dataset = training_dataset(
        source, target, preprocessor, batch_size=10, sample_buffer_size=0, repeat=False,
        maximum_features_length=2, maximum_labels_length=2, length_bucket_width=None,
    )
    (features, labels), = _batches(dataset)
    # Sources of at most 2 tokens, targets of at most 1 token (its length counts </s>).
    assert features["length"] == [1, 2] and labels["length"] == [2, 2]


def test_every_example_filtered_out_is_an_error(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a b c", "a b"], ["x", "y"])
    for repeat in (True, False):
        dataset = training_dataset(
            source, target, preprocessor, batch_size=4, maximum_features_length=1,
            repeat=repeat,
        )
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            next(iter(dataset))
        assert "no training batch from" in error.value.message
        assert "train.src" in error.value.message
        assert "maximum_features_length=1" in error.value.message


def test_irregular_batches_are_dropped_for_replicas(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a"] * 7, ["x"] * 7)
    dataset = training_dataset(
        source, target, preprocessor, batch_size=2, num_replicas=2, sample_buffer_size=0,
        repeat=False,
    )
    # Global batches of 4: one full batch, the 3 left over are not divisible by 2.
    assert [len(features["ids"]) for features, _ in _batches(dataset)] == [4]
    too_few = training_dataset(
        source, target, preprocessor, batch_size=4, num_replicas=2, sample_buffer_size=0,
        repeat=False,
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_replicas=2"):
        next(iter(too_few))


def test_repeat_reshuffles_every_epoch_reproducibly(tmp_path, preprocessor):
    sources = ["a " * n for n in range(1, 13)]
    source, target = _corpus(tmp_path, sources, ["x"] * 12)

    def first_epochs(seed):
        dataset = training_dataset(
            source, target, preprocessor, batch_size=1, sample_buffer_size=4, seed=seed,
            length_bucket_width=None,
        )
        return [features["length"][0] for features, _ in _batches(dataset, 36)]

    lengths = first_epochs(3)
    epochs = [lengths[0:12], lengths[12:24], lengths[24:36]]
    assert all(sorted(epoch) == list(range(1, 13)) for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) > 1
    assert first_epochs(3) == lengths


def test_alignments_become_target_by_source_matrices(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a b c", "d"], ["x y", "z"])
    alignment = _write(tmp_path / "train.align", ["0-0 2-1", ""])
    dataset = training_dataset(
        source, target, preprocessor, alignment, batch_size=2, sample_buffer_size=0,
        repeat=False, length_bucket_width=None,
    )
    (features, labels), = _batches(dataset)
    assert labels["alignment"] == [
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    ]


def test_pad_to_bucket_boundary_gives_one_shape_a_bucket(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a b c", "d", "a b c d a"], ["x y", "z", "x"])
    alignment = _write(tmp_path / "train.align", ["0-0 2-1", "0-0", "4-0"])
    dataset = training_dataset(
        source, target, preprocessor, alignment, batch_size=4, length_bucket_width=4,
        pad_to_bucket_boundary=True, sample_buffer_size=0, repeat=False,
    )
    shapes = sorted(
        (len(f["ids"][0]), len(l["ids"][0]), len(l["alignment"][0]), len(l["alignment"][0][0]),
         len(f["ids"]))
        for f, l in _batches(dataset)
    )
    # Lengths max(source, target + 1): 3, 2 and 5. Bucket 0 (lengths 1-4) pads to 4
    # source positions, 4 target ids (up to 3 tokens and <s> or </s>), a 3x4 alignment;
    # bucket 1 (5-8) to 8, 8 and 7x8.
    assert shapes == [(4, 4, 3, 4, 2), (8, 8, 7, 8, 1)]


@pytest.mark.parametrize(
    "bad_line, reason",
    [("0-0 1-x", "malformed Pharaoh alignment"), ("0-0 3-1", "out of range"),
     ("0-2", "out of range"), ("0:0", "malformed")],
)
def test_bad_alignment_lines_name_file_and_line(tmp_path, preprocessor, bad_line, reason):
    source, target = _corpus(tmp_path, ["a b c", "a b c", "d"], ["x y", "x y", "z"])
    alignment = _write(tmp_path / "train.align", ["0-0", bad_line, "0-0"])
    dataset = training_dataset(
        source, target, preprocessor, alignment, batch_size=2, sample_buffer_size=-1, seed=4,
    )
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        _batches(dataset, 3)
    assert "train.align, line 2: " in error.value.message
    assert reason in error.value.message


def test_mismatched_line_counts_are_an_error(tmp_path, preprocessor):
    source, target = _corpus(tmp_path, ["a", "b", "c"], ["x", "y"])
    with pytest.raises(ValueError, match=r"train\.src has 3 lines but .*train\.tgt has 2"):
        training_dataset(source, target, preprocessor, batch_size=2)
    alignment = _write(tmp_path / "train.align", ["0-0"])
    source, target = _corpus(tmp_path, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match=r"train\.align has 1"):
        training_dataset(source, target, preprocessor, alignment, batch_size=2)


def test_gzip_files_give_the_same_batches(tmp_path, preprocessor):
    sources = [" ".join("abcd"[(i + j) % 4] for j in range(i % 5 + 1)) for i in range(40)]
    targets = [" ".join("xyz"[(i + j) % 3] for j in range(i % 3 + 1)) for i in range(40)]
    plain = _corpus(tmp_path, sources, targets)
    packed = (
        _write(tmp_path / "train.src.gz", sources),
        _write(tmp_path / "train.tgt.gz", targets),
    )
    options = dict(batch_size=20, batch_type="tokens", sample_buffer_size=8, seed=9)
    expected = _batches(training_dataset(*plain, preprocessor, **options), 10)
    assert _batches(training_dataset(*packed, preprocessor, **options), 10) == expected


def test_weighted_corpora_are_sampled_in_proportion(tmp_path, preprocessor):
    corpus_a = _corpus(tmp_path, ["a"] * 300, ["x"] * 300, prefix="a")
    corpus_b = _corpus(tmp_path, ["b"] * 100, ["y"] * 100, prefix="b")
    assert sampling_probabilities(None, [300, 100]) == [0.75, 0.25]
    assert sampling_probabilities([1, 3], [300, 100]) == [0.5, 0.5]
    for weights, expected_share_of_a in ((None, 0.75), ([1, 3], 0.5)):
        dataset = training_dataset(
            [corpus_a[0], corpus_b[0]], [corpus_a[1], corpus_b[1]], preprocessor,
            batch_size=100, sample_buffer_size=50, seed=7, train_files_weights=weights,
        )
        ids = list(itertools.chain.from_iterable(
            features["ids"] for features, _ in _batches(dataset, 40)
        ))
        share_of_a = ids.count([3]) / len(ids)
        # 4,000 draws: the standard deviation of the share is below 0.007.
        assert abs(share_of_a - expected_share_of_a) < 0.03
        assert ids.count([3]) + ids.count([4]) == 4000


def test_weighted_corpus_filtered_to_nothing_is_an_error(tmp_path, preprocessor):
    corpus_a = _corpus(tmp_path, ["a"] * 5, ["x"] * 5, prefix="a")
    corpus_b = _corpus(tmp_path, ["b c"] * 5, ["y"] * 5, prefix="b")
    dataset = training_dataset(
        [corpus_a[0], corpus_b[0]], [corpus_a[1], corpus_b[1]], preprocessor,
        batch_size=4, maximum_features_length=1, train_files_weights=[1, 1],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"no training batch from .*b\.src"):
        _batches(dataset, 20)


def test_workers_get_disjoint_examples(tmp_path, preprocessor):
    sources = ["a " * n for n in range(1, 11)]
    source, target = _corpus(tmp_path, sources, ["x"] * 10)
    seen = []
    for worker in range(2):
        dataset = training_dataset(
            source, target, preprocessor, batch_size=10, num_shards=2, shard_index=worker,
            sample_buffer_size=-1, seed=1, repeat=False, length_bucket_width=None,
        )
        (features, _), = _batches(dataset)
        assert all((length - 1) % 2 == worker for length in features["length"])
        seen += features["length"]
    assert sorted(seen) == list(range(1, 11))


def test_truncating_preprocessor_is_refused(tmp_path):
    truncating = TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), SOURCE_VOCABULARY, TARGET_VOCABULARY,
        maximum_source_length=5,
    )
    source, target = _corpus(tmp_path, ["a"], ["x"])
    with pytest.raises(ValueError, match="maximum_source_length=5"):
        training_dataset(source, target, truncating, batch_size=2)


def test_make_training_batches_on_raw_pairs(preprocessor):
    pairs = tf.data.Dataset.from_tensor_slices(
        (["a b", "c", "d a b", "a"], ["x", "y z", "z", "y"])
    )
    batches = _batches(make_training_batches(pairs, preprocessor, batch_size=6, batch_type="tokens"))
    by_length = sorted((len(f["ids"][0]), f["ids"]) for f, _ in batches)
    # Lengths max(source, target + 1): "a b"/"x" and "a"/"y" 2, "c"/"y z" and "d a b"/"z"
    # 3. Bucket 1 (length 2): 6 tokens hold 3 examples; bucket 2 (length 3): 2.
    assert by_length == [(2, [[3, 4], [3, 0]]), (3, [[5, 0, 0], [6, 3, 4]])]
    triples = tf.data.Dataset.from_tensor_slices((["a b"], ["x"], ["1-0"]))
    (_, labels), = _batches(make_training_batches(triples, preprocessor, batch_size=1))
    assert labels["alignment"] == [[[0.0, 1.0]]]
    assert np.array(labels["ids_out"]).tolist() == [[3, 2]]


def test_sentencepiece_sampling_gives_each_pass_its_own_segmentation(tmp_path):
    from kerasnmt.layers import SentencePieceTokenizer
    from tests.layers import tiny_sentencepiece
    from tests.layers.test_sentencepiece_tokenizer import SUBWORD_TEXT

    model = tiny_sentencepiece.train("bpe", 60, tuple(SUBWORD_TEXT * 10))
    vocabulary = ["<blank>", "<s>", "</s>"] + SentencePieceTokenizer(model).get_vocabulary()[3:]

    def preprocessor_of(alpha):
        tokenizer = SentencePieceTokenizer(model, sampling_alpha=alpha)
        return TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary)

    sentence = "the children are playing outside"
    source, target = _corpus(tmp_path, [sentence], [sentence])
    sampling = preprocessor_of(0.3)

    def targets(preprocessor, alignment_file=None):
        dataset = training_dataset(source, target, preprocessor, alignment_file,
                                   batch_size=1, sample_buffer_size=0)
        return [tuple(labels["ids_out"][0]) for _, labels in _batches(dataset, 40)]

    sampled = targets(sampling)
    assert len(set(sampled)) > 5
    # make_training_batches (Translator.fit on raw strings) samples alike.
    pairs = tf.data.Dataset.from_tensor_slices(([sentence] * 40, [sentence] * 40))
    batches = _batches(make_training_batches(pairs, sampling, batch_size=1))
    assert len({tuple(labels["ids_out"][0]) for _, labels in batches}) > 5
    batches = _batches(make_training_batches(pairs, sampling, batch_size=1, training=False))
    assert len({tuple(labels["ids_out"][0]) for _, labels in batches}) == 1
    texts = {sampling.detokenize_target(tf.constant(ids)).numpy() for ids in sampled}
    assert texts == {sentence.encode()}
    # Without sampling_alpha every pass is the one best segmentation, which is also what
    # the sampling preprocessor gives outside training (evaluation, export).
    deterministic = set(targets(preprocessor_of(None)))
    assert len(deterministic) == 1
    # Alignments index the best segmentation: with them, no sampling.
    alignment = _write(tmp_path / "train.align", ["0-0"])
    assert set(targets(sampling, alignment)) == deterministic
    best = sampling(tf.constant([sentence]), tf.constant([sentence]))[1]["ids_out"]
    assert deterministic == {tuple(best[0].numpy().tolist())}
