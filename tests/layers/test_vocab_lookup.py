import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.vocabulary import VocabularyError, save_vocabulary
from kerasnmt.layers import VocabLookup, WhitespaceTokenizer
from tests.layer_test_helper import run_layer_test
from tests.layers.reference_corpus import (
    CAN,
    CAT,
    FEATURES,
    HE,
    LABELS,
    MOZHET,
    ON,
    SOURCE_VOCABULARY,
    SPECIALS,
    TARGET_VOCABULARY,
)


def split(lines):
    return [line.split() for line in lines]


def test_hand_sorted_vocabularies_match_the_corpus():
    for lines, vocabulary in ((FEATURES, SOURCE_VOCABULARY), (LABELS, TARGET_VOCABULARY)):
        corpus_tokens = {token for tokens in split(lines) for token in tokens}
        assert vocabulary == SPECIALS + sorted(corpus_tokens)
    assert SOURCE_VOCABULARY.index("▁he") == HE and SOURCE_VOCABULARY.index("▁can") == CAN
    assert TARGET_VOCABULARY.index("▁он") == ON and TARGET_VOCABULARY.index("▁может") == MOZHET


def test_reference_features_he_can(tmp_path):
    path = tmp_path / "source_vocabulary.txt"
    save_vocabulary(SOURCE_VOCABULARY, path)
    run_layer_test(
        VocabLookup, {"vocabulary": str(path)}, tf.constant(["▁he", "▁can"]),
        expected_output={"ids": np.array([HE, CAN]), "length": np.array(2)},
        is_preprocessing=True,
    )


def test_reference_labels_on_mozhet():
    outputs = run_layer_test(
        VocabLookup, {"vocabulary": TARGET_VOCABULARY, "side": "target"},
        tf.constant(["▁он", "▁может"]),
        expected_output={
            "ids": np.array([1, ON, MOZHET]),
            "ids_out": np.array([ON, MOZHET, 2]),
            "length": np.array(3),
        },
        is_preprocessing=True,
    )
    assert all(value.dtype == tf.int32 for value in outputs.values())


def test_ragged_batch_gives_padded_ids_and_unknown_id():
    tokens = WhitespaceTokenizer()(["▁he ▁can", "▁cat ▁zebra", "", "   "])
    unknown = len(SOURCE_VOCABULARY)
    run_layer_test(
        VocabLookup, {"vocabulary": SOURCE_VOCABULARY}, tokens,
        expected_output={
            "ids": np.array([[HE, CAN], [CAT, unknown], [0, 0], [0, 0]]),
            "length": np.array([2, 2, 0, 0]),
        },
        is_preprocessing=True,
    )


def test_padded_target_batch():
    tokens = tf.constant([["▁он", "▁может", "▁это"], ["▁кот", "", ""], ["", "", ""]])
    kot, eto = TARGET_VOCABULARY.index("▁кот"), TARGET_VOCABULARY.index("▁это")
    run_layer_test(
        VocabLookup, {"vocabulary": TARGET_VOCABULARY, "side": "target"}, tokens,
        expected_output={
            "ids": np.array([[1, ON, MOZHET, eto], [1, kot, 0, 0], [1, 0, 0, 0]]),
            "ids_out": np.array([[ON, MOZHET, eto, 2], [kot, 2, 0, 0], [2, 0, 0, 0]]),
            "length": np.array([4, 2, 1]),
        },
        is_preprocessing=True,
    )


def test_empty_sentence():
    source = VocabLookup(SOURCE_VOCABULARY)([])
    assert source["ids"].numpy().tolist() == [] and int(source["length"]) == 0
    target = VocabLookup(TARGET_VOCABULARY, side="target")(tf.constant([], tf.string))
    assert target["ids"].numpy().tolist() == [1]
    assert target["ids_out"].numpy().tolist() == [2]
    assert int(target["length"]) == 1


def test_maximum_length_truncates_before_the_special_tokens():
    source = VocabLookup(SOURCE_VOCABULARY, maximum_length=np.int64(1))
    assert source.get_config()["maximum_length"] == 1
    assert source(["▁he", "▁can"])["ids"].numpy().tolist() == [HE]
    batch = source([["▁he", "▁can"], ["▁cat", ""]])
    assert batch["ids"].numpy().tolist() == [[HE], [CAT]]
    assert batch["length"].numpy().tolist() == [1, 1]
    target = VocabLookup(TARGET_VOCABULARY, side="target", maximum_length=1)(["▁он", "▁может"])
    assert target["ids"].numpy().tolist() == [1, ON]
    assert target["ids_out"].numpy().tolist() == [ON, 2]
    assert int(target["length"]) == 2


def test_vocabulary_size_and_get_vocabulary():
    lookup = VocabLookup(TARGET_VOCABULARY, side="target")
    assert lookup.vocabulary_size == 28
    assert lookup.get_vocabulary() == TARGET_VOCABULARY
    assert lookup.get_config()["vocabulary"] == TARGET_VOCABULARY


def test_invert_stops_at_end_and_drops_start_and_padding():
    lookup = VocabLookup(TARGET_VOCABULARY, side="target")
    unknown = len(TARGET_VOCABULARY)
    one = lookup.invert([1, ON, unknown, MOZHET, 2, ON, 0])
    assert [t.decode() for t in one.numpy()] == ["▁он", "<unk>", "▁может"]
    batch = tf.constant(
        [[1, ON, MOZHET, 2, ON], [ON, 0, 0, 0, 0], [2, ON, 0, 0, 0], [0, 0, 0, 0, 0]]
    )
    expected = [["▁он", "▁может"], ["▁он"], [], []]
    expected = [[t.encode() for t in row] for row in expected]
    assert lookup.invert(batch).to_list() == expected
    assert lookup.invert(tf.RaggedTensor.from_tensor(batch, padding=0)).to_list() == expected
    assert tf.function(lookup.invert)(batch).to_list() == expected
    dataset = tf.data.Dataset.from_tensor_slices(batch).map(lookup.invert)
    assert [row.tolist() for row in dataset.as_numpy_iterator()] == expected


def test_invert_inverts_the_lookup_after_a_keras_round_trip():
    lookup = VocabLookup(TARGET_VOCABULARY, side="target")
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(lookup))
    tokens = WhitespaceTokenizer()(LABELS)
    assert revived.invert(lookup(tokens)["ids"]).to_list() == tokens.to_list()


def test_bad_vocabularies_and_arguments_are_refused(tmp_path):
    with pytest.raises(VocabularyError, match="must start with <blank>, <s>, </s>"):
        VocabLookup(["▁a", "▁b"])
    with pytest.raises(VocabularyError, match=r"line 5: duplicate token '▁a'"):
        VocabLookup(SPECIALS + ["▁a", "▁a"])
    (tmp_path / "v.txt").write_bytes("<blank>\n<s>\n</s>\n\n".encode())
    with pytest.raises(VocabularyError, match=r"v\.txt, line 4: token '' is empty"):
        VocabLookup(tmp_path / "v.txt")
    with pytest.raises(ValueError, match="side must be one of"):
        VocabLookup(SPECIALS, side="labels")
    with pytest.raises(ValueError, match="maximum_length must be a positive integer"):
        VocabLookup(SPECIALS, maximum_length=0)
    with pytest.raises(ValueError, match="maximum_length must be a positive integer"):
        VocabLookup(SPECIALS, maximum_length=2.5)
    with pytest.raises(ValueError, match=r"1-D tokens .* or \[B, L\] tokens"):
        VocabLookup(SPECIALS)([[["▁a"]]])
