import base64
import unicodedata

import keras
import keras_hub
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt.layers import SentencePieceTokenizer
from tests.layer_test_helper import run_layer_test
from tests.layers import tiny_sentencepiece
from tests.saved_model_process import run_without_keras

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


def test_is_a_keras_hub_tokenizer_with_the_models_vocabulary(subword_model):
    """Its vocabulary, sizes and ids are those of the sentencepiece library on the model."""
    processor = sentencepiece.SentencePieceProcessor(model_proto=subword_model)
    tokenizer = SentencePieceTokenizer(subword_model)
    assert isinstance(tokenizer, keras_hub.tokenizers.Tokenizer)
    assert tokenizer.compute_dtype == "string"
    size = processor.vocab_size()
    assert tokenizer.vocabulary_size() == size == 60
    pieces_by_id = [processor.id_to_piece(i) for i in range(size)]
    assert tokenizer.get_vocabulary() == pieces_by_id
    assert [tokenizer.id_to_token(i) for i in range(size)] == pieces_by_id
    assert [tokenizer.token_to_id(piece) for piece in pieces_by_id] == list(range(size))
    assert tokenizer.token_to_id("▁zebra") == processor.unk_id()
    eager = tokenizer.tokenize(["a dog", "the cat"])
    assert isinstance(eager, tf.RaggedTensor)  # tensors eagerly, not keras-hub's lists
    ids = [[tokenizer.token_to_id(piece) for piece in row] for row in eager.to_list()]
    assert ids == processor.encode(["a dog", "the cat"])  # bytes pieces too
    for bad_id in (-1, size):
        with pytest.raises(ValueError, match=rf"id {bad_id} is not in \[0, 59\]"):
            tokenizer.id_to_token(bad_id)


def test_keras_hubs_start_end_packer_packs_its_pieces(word_model):
    """keras-hub's packer in `tf.data`, its start and end pieces read from the tokenizer;
    the packed pieces go back to the model's ids and to the text."""
    processor = sentencepiece.SentencePieceProcessor(model_proto=word_model)
    tokenizer = SentencePieceTokenizer(word_model)
    start = tokenizer.id_to_token(processor.bos_id())
    end = tokenizer.id_to_token(processor.eos_id())
    packer = keras_hub.layers.StartEndPacker(sequence_length=5, start_value=start,
                                             end_value=end, pad_value="")
    text = ["he can", "good day today bat", ""]
    dataset = tf.data.Dataset.from_tensor_slices(text).batch(3).map(tokenizer).map(packer)
    packed = next(iter(dataset))
    assert [start, end] == ["<s>", "</s>"] and packed.shape == (3, 5)
    ids = [[tokenizer.token_to_id(piece) for piece in row if piece] for row in packed.numpy()]
    assert ids == [[processor.bos_id()] + row[:3] + [processor.eos_id()]
                   for row in processor.encode(text)]
    assert tokenizer.detokenize(packed).numpy().tolist() == [b"he can", b"good day today", b""]


def test_round_trip_through_the_keras_config(word_model):
    tokenizer = SentencePieceTokenizer(word_model)
    revived = SentencePieceTokenizer.from_config(tokenizer.get_config())
    assert isinstance(revived, keras_hub.tokenizers.Tokenizer)
    assert revived.get_vocabulary() == tokenizer.get_vocabulary()
    text = ["I like it", "door open"]
    assert revived.detokenize(revived(text)).numpy().tolist() == [t.encode() for t in text]


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_sampling_alpha_samples_segmentations_in_training_only(model_type):
    model = tiny_sentencepiece.train(model_type, 60, tuple(SUBWORD_TEXT * 10))
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    tokenizer = SentencePieceTokenizer(model, sampling_alpha=0.3)
    sentence = "the children are playing outside"
    best = [piece.encode() for piece in processor.encode(sentence, out_type=str)]
    # Without training=True (evaluation, translation, an export): the best segmentation.
    assert tokenizer([sentence]).to_list() == [best]
    assert tokenizer([sentence], training=False).to_list() == [best]

    draws = tokenizer([sentence] * 500, training=True).to_list()
    assert all(b"".join(row).decode().replace("▁", " ").strip() == sentence for row in draws)
    assert len({tuple(row) for row in draws}) > 10
    # The same distribution as SentencePiece's own sampling (a peer's output): the mean
    # number of pieces of 500 draws each, within 6 standard errors of their difference.
    counts = np.array([len(row) for row in draws])
    library = np.array([
        len(processor.encode(sentence, out_type=str, enable_sampling=True, alpha=0.3,
                             nbest_size=-1))
        for _ in range(500)
    ])
    assert counts.mean() > len(best)
    standard_error = np.sqrt(counts.var() / 500 + library.var() / 500)
    assert abs(counts.mean() - library.mean()) < 6 * standard_error


def test_sampling_alpha_survives_the_config_and_is_checked(word_model):
    tokenizer = SentencePieceTokenizer(word_model, sampling_alpha=0.1)
    assert SentencePieceTokenizer.from_config(tokenizer.get_config()).sampling_alpha == 0.1
    for alpha in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=f"sampling_alpha must be in \\(0, 1\\) or None, got {alpha}"):
            SentencePieceTokenizer(word_model, sampling_alpha=alpha)


# Characters the training text (SUBWORD_TEXT, lowercase ASCII and "I") never shows: an
# umlaut, CJK, emoji (one with a skin-tone modifier), uppercase ASCII, combining marks
# with no precomposed form, and one with a precomposed form (which NFKC composes).
UNSEEN_TEXT = ["Zoë lives in 東京", "🙂 👍🏽", "the QX-7 door", "q\u0303 and ŋ\u0301", "cafe\u0301",
               "Ωmega ≠ omega"]


@pytest.fixture(scope="module")
def byte_fallback_model():
    return tiny_sentencepiece.train("unigram", 320, tuple(SUBWORD_TEXT * 10), byte_fallback=True,
                                    hard_vocab_limit=False)


def normalized(text):
    """What SentencePiece's default normalization (nmt_nfkc) makes of these strings."""
    return unicodedata.normalize("NFKC", text)


def test_byte_fallback_round_trips_unseen_characters(byte_fallback_model):
    """Eagerly, in a batch and in `tf.data`, unseen characters come out as the byte pieces
    of their UTF-8 and come back whole (NFKC-normalized: "e" + U+0301 becomes "é")."""
    tokenizer = SentencePieceTokenizer(byte_fallback_model)
    assert tokenizer.byte_fallback
    assert not SentencePieceTokenizer(tiny_sentencepiece.train()).byte_fallback
    expected = [normalized(text).encode() for text in UNSEEN_TEXT]
    assert expected[4] == "café".encode() and expected[3] == "q\u0303 and ŋ\u0301".encode()
    pieces = tokenizer(UNSEEN_TEXT)
    assert tokenizer.detokenize(pieces).numpy().tolist() == expected
    assert tokenizer.detokenize(pieces.to_tensor()).numpy().tolist() == expected
    # "東" is E6 9D B1, "京" E4 BA AC: six byte pieces after the "▁" of the word.
    east = [f"<0x{byte:02X}>".encode() for byte in "東京".encode()]
    row = pieces[0].numpy().tolist()
    assert row[-6:] == east and row[-7] == "▁".encode()
    dataset = tf.data.Dataset.from_tensor_slices(UNSEEN_TEXT).map(tokenizer)
    assert list(dataset.map(tokenizer.detokenize).as_numpy_iterator()) == expected
    batched = tf.data.Dataset.from_tensor_slices(UNSEEN_TEXT).batch(4).map(tokenizer)
    assert [text for batch in batched.map(tokenizer.detokenize).as_numpy_iterator()
            for text in batch.tolist()] == expected
    # No piece is unknown to the model: every character is its own piece or its bytes.
    processor = sentencepiece.SentencePieceProcessor(model_proto=byte_fallback_model)
    assert processor.unk_id() not in [i for row in processor.encode(UNSEEN_TEXT) for i in row]


def test_byte_fallback_round_trips_in_a_saved_model_without_kerasnmt(byte_fallback_model,
                                                                    tmp_path):
    """The SentencePiece op alone (no Keras, kerasnmt or tensorflow_text import) encodes
    the byte pieces and decodes them back."""
    tokenizer = SentencePieceTokenizer(byte_fallback_model)
    archive = keras.export.ExportArchive()
    archive.track(tokenizer)

    def round_trip(source):
        pieces = tokenizer(source)
        return {"text": tokenizer.detokenize(pieces), "pieces": pieces.to_tensor("")}

    archive.add_endpoint("serving_default", round_trip, [tf.TensorSpec([None], tf.string)])
    archive.write_out(str(tmp_path / "export"), verbose=False)
    outputs = run_without_keras(tmp_path / "export", UNSEEN_TEXT, "serving_default", tmp_path,
                                sentencepiece=True)
    texts = [base64.b64decode(text).decode() for text in outputs["text"]]
    assert texts == [normalized(text) for text in UNSEEN_TEXT]
    pieces = [[base64.b64decode(piece) for piece in row if piece] for row in outputs["pieces"]]
    assert pieces == tokenizer(UNSEEN_TEXT).to_list()
