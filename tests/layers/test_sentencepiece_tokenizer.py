import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt.layers import SentencePieceTokenizer
from tests.layer_test_helper import run_layer_test
from tests.layers import tiny_sentencepiece

SUBWORD_TEXT = [
    "he can open the door", "a cat in a bad day", "today I like the good bat",
    "the children are playing outside", "two dogs run through the grass",
    "a woman is reading a book", "people are walking on the street",
    "the man opens a window", "a little girl climbs the stairs", "they watch the sunset together",
]


@pytest.fixture(scope="module")
def word_model():
    return tiny_sentencepiece.train()


@pytest.fixture(scope="module")
def subword_model():
    return tiny_sentencepiece.train("unigram", 60, tuple(SUBWORD_TEXT * 10))


def pieces(*words):
    return ["▁" + word for word in words]


def test_word_model_gives_the_reference_pieces(word_model):
    tokens = run_layer_test(
        SentencePieceTokenizer, {"model": word_model}, tf.constant("he can"),
        expected_output=np.array([p.encode() for p in pieces("he", "can")], dtype=object),
        is_preprocessing=True,
    )
    assert tokens.shape.rank == 1


def test_batch_gives_ragged_pieces_and_blank_lines_give_none(word_model):
    expected = [[p.encode() for p in pieces("I", "like", "it")], [], [],
                [p.encode() for p in pieces("door", "open")]]
    tokens = run_layer_test(
        SentencePieceTokenizer, {"model": word_model},
        tf.constant(["I like it", "", "  \t ", "  door   open "]),
        expected_output=expected, is_preprocessing=True,
    )
    assert isinstance(tokens, tf.RaggedTensor)


def test_subword_pieces_match_the_sentencepiece_library(subword_model):
    processor = sentencepiece.SentencePieceProcessor(model_proto=subword_model)
    tokenizer = SentencePieceTokenizer(subword_model)
    text = SUBWORD_TEXT + ["a dog opens the cat", "zebra"]
    expected = [[p.encode() for p in processor.encode(t, out_type=str)] for t in text]
    assert tokenizer(text).to_list() == expected
    assert any(len(row) > len(t.split()) for row, t in zip(expected, text)), "no word was split"


def test_detokenize_restores_the_normalized_text(subword_model):
    tokenizer = SentencePieceTokenizer(subword_model)
    text = SUBWORD_TEXT + ["", " \t ", "  zebra   cat "]
    expected = [t.encode() for t in SUBWORD_TEXT] + [b"", b"", b"zebra cat"]
    ragged = tokenizer(text)
    assert tokenizer.detokenize(ragged).numpy().tolist() == expected
    assert tokenizer.detokenize(ragged.to_tensor()).numpy().tolist() == expected
    assert tokenizer.detokenize(tokenizer(text[0])).numpy() == expected[0]
    in_dataset = tf.data.Dataset.from_tensor_slices(text).map(tokenizer).map(tokenizer.detokenize)
    assert list(in_dataset.as_numpy_iterator()) == expected


def test_model_from_a_file_and_embedded_in_the_config(word_model, tmp_path):
    path = tmp_path / "sp.model"
    path.write_bytes(word_model)
    tokenizer = SentencePieceTokenizer(str(path))
    from_bytes = SentencePieceTokenizer(word_model)
    assert tokenizer.get_config()["model"] == from_bytes.get_config()["model"]
    path.unlink()
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tokenizer))
    assert revived("a cat").numpy().tolist() == [p.encode() for p in pieces("a", "cat")]


def test_bad_models_are_refused(tmp_path):
    with pytest.raises(ValueError, match="the given bytes: not a SentencePiece model"):
        SentencePieceTokenizer(b"not a model")
    (tmp_path / "bad.model").write_bytes(b"\x00\x01garbage")
    with pytest.raises(ValueError, match=r"bad\.model: not a SentencePiece model"):
        SentencePieceTokenizer(tmp_path / "bad.model")
    with pytest.raises(tf.errors.NotFoundError):
        SentencePieceTokenizer(tmp_path / "missing.model")
