"""Byte fallback end to end: a tiny model trained to copy its input copies characters its
SentencePiece vocabulary never saw (spelled in byte pieces) through `kerasnmt translate`,
through the exported SavedModel run where Keras and kerasnmt cannot be imported, and through
CTranslate2."""

import base64

import ctranslate2
import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt import cli
from kerasnmt.export.ctranslate2 import (
    export_ctranslate2,
    read_translate_options,
    tokenizers,
    translate_batch_options,
)
from kerasnmt.data import train_sentencepiece
from kerasnmt.data.sentencepiece_trainer import BYTE_PIECES
from kerasnmt.export import SERVING_SIGNATURE, export_translator
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import SentencePieceTokenizer, TranslationPreprocessor
from kerasnmt.models import Translator
from tests.models.translator_fixtures import fit_until_reproduced
from tests.saved_model_process import run_without_keras

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(34)

# The SentencePiece sample: lowercase ASCII and spaces only.
VOCABULARY_TEXT = "the cat sat on the mat\na dog ran in the park\n" * 20
# The copy task: every sentence holds characters the sample never showed (an umlaut, CJK,
# an emoji, a combining mark with no precomposed form, uppercase), which the vocabulary
# spells in byte pieces; the model learns to copy those pieces.
SENTENCES = ["Zoë", "東京", "🙂", "q\u0303", "Zoë ran", "in 東京", "a 🙂", "the cat", "Ñ", "dog"]
UNSEEN = "ë東京🙂\u0303Ñ"


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory):
    """A 1-layer Translator fitted on `SENTENCES` -> `SENTENCES` until every target piece
    has a teacher-forced probability above 0.9, so greedy and beam search reproduce each
    sentence; saved as a `.keras` file."""
    directory = tmp_path_factory.mktemp("byte_fallback")
    (directory / "sample.txt").write_text(VOCABULARY_TEXT, encoding="utf-8")
    vocabulary = train_sentencepiece([directory / "sample.txt"], str(directory / "sp"), 300,
                                     model_type="char")
    assert vocabulary[3:259] == list(BYTE_PIECES)
    assert not set(UNSEEN) & set("".join(vocabulary))
    keras.utils.set_random_seed(2)
    tokenizer = SentencePieceTokenizer(str(directory / "sp.model"))
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer, str(directory / "sp.vocab"),
                                           str(directory / "sp.vocab"))
    translator = Translator(preprocessor, num_layers=1, num_units=32, num_heads=4,
                            ffn_inner_dim=64, dropout=0.0, attention_dropout=0.0,
                            ffn_dropout=0.0, maximum_relative_position=8, label_smoothing=0.0,
                            share_embeddings="all")
    translator.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=False)
    sentences = np.array(SENTENCES, dtype=object)
    features, _ = preprocessor(tf.constant(SENTENCES), tf.constant(SENTENCES))
    assert not (features["ids"].numpy() == len(vocabulary)).any()  # no unknown piece
    assert fit_until_reproduced(translator, sentences, sentences, batch_size=len(SENTENCES),
                                epochs=600), "the copy task was not learned"
    path = directory / "copy.keras"
    translator.save(path)
    return translator, path


def test_translate_copies_unseen_characters(copy_model, tmp_path, capsys):
    _, path = copy_model
    source = tmp_path / "source.txt"
    source.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    status = cli.main(["translate", "--model", str(path), "--input", str(source), "--output",
                       str(tmp_path / "out.txt"), "--no-xla"])
    err = capsys.readouterr().err
    assert status == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == SENTENCES
    assert "warning" not in err  # byte fallback: no source piece is unknown


def test_the_saved_model_copies_unseen_characters_without_kerasnmt(copy_model, tmp_path):
    """TensorFlow and the SentencePiece op alone (no Keras, kerasnmt or tensorflow_text
    import) encode the byte pieces and decode them back into the characters."""
    translator, _ = copy_model
    export_translator(translator, tmp_path / "export", sampler=BeamSampler(beam_size=2),
                      maximum_source_length=16, jit_compile=False, warmup=False)
    outputs = run_without_keras(tmp_path / "export", SENTENCES, SERVING_SIGNATURE, tmp_path,
                                sentencepiece=True)
    assert [base64.b64decode(text).decode() for text in outputs["translation"]] == SENTENCES


def test_ctranslate2_copies_unseen_characters(copy_model, tmp_path):
    """CTranslate2 decodes the byte pieces' ids; the exported SentencePiece model splits
    the text into them and joins them back."""
    translator, _ = copy_model
    path = export_ctranslate2(translator, str(tmp_path / "ct2"),
                              sampler=BeamSampler(beam_size=2))
    tokenize, detokenize = tokenizers(path)
    options = read_translate_options(path)
    model = ctranslate2.Translator(path)
    translations = []
    for sentence in SENTENCES:
        tokens = tokenize(sentence)
        assert not {"<unk>"} & set(tokens)
        result = model.translate_batch([tokens], **translate_batch_options(options, len(tokens)))
        translations.append(detokenize(result[0].hypotheses[0]))
    assert translations == SENTENCES


def test_without_byte_fallback_unseen_characters_are_reported_as_unknown(tmp_path, capsys):
    """A vocabulary built without byte fallback: `translate` counts on stderr the pieces the
    sentencepiece library itself encodes as <unk>, and says how to avoid them."""
    (tmp_path / "sample.txt").write_text(VOCABULARY_TEXT, encoding="utf-8")
    train_sentencepiece([tmp_path / "sample.txt"], str(tmp_path / "sp"), 40, model_type="char",
                        byte_fallback=False)
    keras.utils.set_random_seed(3)
    tokenizer = SentencePieceTokenizer(str(tmp_path / "sp.model"))
    assert not tokenizer.byte_fallback
    translator = Translator(
        TranslationPreprocessor(tokenizer, tokenizer, str(tmp_path / "sp.vocab"),
                                str(tmp_path / "sp.vocab")),
        num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
    translator.save(tmp_path / "plain.keras")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    unknown = [sum(i == processor.unk_id() for i in processor.encode(s)) for s in SENTENCES]
    assert unknown[SENTENCES.index("the cat")] == 0 and unknown[0] == 2  # "Z" and "ë"
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    status = cli.main(["translate", "--model", str(tmp_path / "plain.keras"), "--input",
                       str(tmp_path / "in.txt"), "--no-xla"])
    err = capsys.readouterr().err
    assert status == 0
    affected = sum(count > 0 for count in unknown)
    assert [line for line in err.splitlines() if "warning" in line] == [
        f"kerasnmt translate: warning: {sum(unknown)} source tokens in {affected} of "
        f"{len(SENTENCES)} sentences were not in the source vocabulary and read as <unk>; a "
        "SentencePiece vocabulary with byte fallback (kerasnmt build-vocab --sentencepiece, "
        "without --no-byte-fallback) spells unseen characters in bytes instead"]
