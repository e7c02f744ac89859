"""keras-hub tokenizers in kerasnmt's preprocessing: the ids of kerasnmt's own tokenizer, a
Translator trained with one, and its SavedModel run where keras-hub cannot be imported."""

import base64
import io
import json

import keras
import keras_hub
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt.export import SERVING_SIGNATURE, export_translator
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import SentencePieceTokenizer, TranslationPreprocessor
from kerasnmt.models import Translator
from tests.models.translator_fixtures import corpus
from tests.saved_model_process import run_without_keras

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(18)

SOURCES, TARGETS = corpus(size=40, seed=1)


def sentencepiece_model(**special_ids):
    """A word model of the corpus (its pieces are "▁" + each word)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(list(SOURCES) + list(TARGETS)), model_writer=model,
        model_type="word", vocab_size=20, hard_vocab_limit=False, minloglevel=2,
        **special_ids,
    )
    return model.getvalue()


@pytest.fixture(scope="module")
def opennmt_model():
    """Trained with OpenNMT-tf's special tokens at 0, 1, 2."""
    return sentencepiece_model(pad_id=0, pad_piece="<blank>", bos_id=1, eos_id=2, unk_id=3)


def keras_hub_tokenizer(model):
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=model, dtype="string")


def test_a_keras_hub_sentencepiece_tokenizer_gives_the_ids_of_kerasnmts(opennmt_model):
    """Its own vocabulary is used; eagerly, in a batch and in `tf.data`, the ids and the
    detokenized text are those of kerasnmt's `SentencePieceTokenizer` with that vocabulary."""
    tokenizer = keras_hub_tokenizer(opennmt_model)
    hub = TranslationPreprocessor(tokenizer, tokenizer)
    vocabulary = tokenizer.get_vocabulary()
    assert hub.source_vocabulary == vocabulary
    ours = TranslationPreprocessor(SentencePieceTokenizer(opennmt_model),
                                   SentencePieceTokenizer(opennmt_model), vocabulary, vocabulary)
    sentences = ["a b c", "h", "", "a z"]  # "z": an unknown word
    for source, target in [(sentences[0], "C B A"), (sentences, ["C B A", "H", "", "Z A"])]:
        for expected, got in zip(ours(source, target), hub(source, target)):
            for key in expected:
                np.testing.assert_array_equal(got[key], expected[key])
    dataset = tf.data.Dataset.from_tensor_slices(sentences).map(hub).padded_batch(4)
    np.testing.assert_array_equal(next(iter(dataset))["ids"], ours(sentences)["ids"])
    ids = [[1, 9, 5, 2, 0], [1, 4, 2, 0, 0]]
    assert hub.detokenize_target(ids).numpy().tolist() == ours.detokenize_target(ids).numpy().tolist()


def test_a_keras_hub_tokenizer_travels_in_the_preprocessors_config():
    """keras-hub keeps a WordPiece vocabulary out of its config (an asset file);
    `TranslationPreprocessor.get_config` embeds it."""
    vocabulary = ["<blank>", "<s>", "</s>", "[UNK]", "a", "b", "##c"]
    tokenizer = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=vocabulary, dtype="string")
    config = TranslationPreprocessor(tokenizer, tokenizer).get_config()
    rebuilt = TranslationPreprocessor.from_config(config)
    assert rebuilt(["a bc", "b"])["ids"].numpy().tolist() == [[4, 5, 6], [5, 0, 0]]
    assert rebuilt.detokenize_target([[1, 4, 5, 6, 2]]).numpy().tolist() == [b"a bc"]


def test_a_byte_pair_tokenizer_gives_ids_in_its_own_order_and_travels_in_the_config():
    """A byte-pair vocabulary is a dict, here not in id order: the ids are its values, and
    the vocabulary and merges (absent from keras-hub's own config) are embedded."""
    vocabulary = {"Ġb": 8, "<blank>": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4, "Ġ": 5,
                  "ab": 6, "Ġab": 7}
    tokenizer = keras_hub.tokenizers.BytePairTokenizer(
        vocabulary=vocabulary, merges=["a b", "Ġ ab", "Ġ b"], dtype="string")
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer)
    assert preprocessor.source_vocabulary[:3] == ["<blank>", "<s>", "</s>"]
    assert preprocessor.source_vocabulary[8] == "Ġb"
    config = json.loads(json.dumps(preprocessor.get_config()))
    rebuilt = TranslationPreprocessor.from_config(config)
    for layer in (preprocessor, rebuilt):
        assert layer(["ab ab b", "a"])["ids"].numpy().tolist() == [[6, 7, 8], [3, 0, 0]]
        assert layer.detokenize_target([[1, 6, 7, 8, 2]]).numpy().tolist() == [b"ab ab b"]


def test_a_vocabulary_without_the_special_tokens_is_refused_naming_the_token():
    """SentencePiece's default numbering (`<unk>`, `<s>`, `</s>`) has no `<blank>`."""
    tokenizer = keras_hub_tokenizer(sentencepiece_model())
    with pytest.raises(ValueError, match="vocabulary of the source tokenizer .* needs '<blank>' "
                                         "at id 0 .* but it has no such token"):
        TranslationPreprocessor(tokenizer, tokenizer)


def test_a_keras_hub_tokenizer_that_returns_ids_is_refused(opennmt_model):
    tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto=opennmt_model)
    with pytest.raises(ValueError, match='returns int32 ids; build it with dtype="string"'):
        TranslationPreprocessor(tokenizer, tokenizer)


def test_a_translator_trains_with_it_and_its_saved_model_runs_without_keras_hub(
    opennmt_model, tmp_path
):
    """Trained, exported, run in a process where keras-hub (and Keras, kerasnmt) cannot
    be imported; and saved to a `.keras` file that holds the SentencePiece model."""
    keras.utils.set_random_seed(5)
    tokenizer = keras_hub_tokenizer(opennmt_model)
    translator = Translator(TranslationPreprocessor(tokenizer, tokenizer), num_layers=1,
                            num_units=16, num_heads=2, ffn_inner_dim=32,
                            maximum_relative_position=4, share_embeddings="all")
    translator.compile(optimizer=keras.optimizers.Adam(0.01))
    history = translator.fit(SOURCES, TARGETS, batch_size=20, length_bucket_width=None,
                             epochs=10, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]

    sampler = BeamSampler(beam_size=2, length_penalty=0.6, max_length=10)
    export_translator(translator, tmp_path / "export", sampler=sampler,
                      maximum_source_length=8, jit_compile=False)
    sentences = ["a b c", "d e f g"]
    outputs = run_without_keras(tmp_path / "export", sentences, SERVING_SIGNATURE, tmp_path,
                                sentencepiece=True)
    expected = translator.translate(sentences, sampler=sampler, jit_compile=False)
    assert all(expected)  # words, detokenized by keras-hub's SentencePiece in both
    assert [base64.b64decode(text).decode() for text in outputs["translation"]] == expected

    translator.save(tmp_path / "translator.keras")
    reloaded = keras.saving.load_model(tmp_path / "translator.keras")
    assert reloaded.translate(sentences, sampler=sampler, jit_compile=False) == expected
