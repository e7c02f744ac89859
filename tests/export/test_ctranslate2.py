"""The CTranslate2 export (`kerasnmt[ctranslate2]`, which `make test` installs): CTranslate2
computes what kerasnmt computes.

The references are kerasnmt's own results: teacher-forced log-probabilities of untrained
models of each architecture option, and `Translator.translate` of a model trained here for
a few steps (its distributions far from one-hot, so that the searches have choices to
make), on another draw of sentences than it was trained on.
"""

import collections
import json
import os
import pathlib
import sys

import ctranslate2
import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.export.ctranslate2 import (
    OPTIONS_FILE,
    SENTENCEPIECE_FILES,
    export_ctranslate2,
    read_translate_options,
    tokenizers,
    translate_batch_options,
)
from kerasnmt.data import train_sentencepiece
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import (
    SentencePieceTokenizer,
    TranslationPreprocessor,
    WhitespaceTokenizer,
)
from kerasnmt.models import Translator
from tests.models.translator_fixtures import SPECIALS, corpus, tiny_translator

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(91)

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART_DATA = REPOSITORY / "examples" / "quickstart" / "data"
MAX_LENGTH = 30
LENGTH_PENALTY = 0.6
# An unknown source word, and a sentence longer than twice the relative position clipping
# distance (4).
SENTENCES = list(corpus(30, seed=7)[0]) + ["a b z c", "h h h h h h h h h h h"]


def _translate_with_ctranslate2(path, sentences, n_best=False, **overrides):
    """CTranslate2's best hypothesis (tokens, score) of each sentence (with `n_best`, the
    list of its hypotheses), its sentences batched by source length so that each gets
    kerasnmt's decoding length limit."""
    model = ctranslate2.Translator(str(path))
    options = read_translate_options(path)
    tokenize, _ = tokenizers(path)
    by_length = collections.defaultdict(list)
    for index, sentence in enumerate(sentences):
        by_length[len(tokenize(sentence))].append(index)
    results = [None] * len(sentences)
    for length, indices in by_length.items():
        arguments = dict(translate_batch_options(options, length), **overrides)
        batch = model.translate_batch([tokenize(sentences[i]) for i in indices],
                                      return_scores=True, **arguments)
        for index, result in zip(indices, batch):
            hypotheses = list(zip(result.hypotheses, result.scores))
            results[index] = hypotheses if n_best else hypotheses[0]
    return results


def _teacher_forced_log_probs(translator, sources, targets):
    """kerasnmt's log-probability of each target token and `</s>`, one list a sentence."""
    features, labels = translator.preprocessor(tf.constant(sources), tf.constant(targets))
    logits = translator({"source_ids": features["ids"], "source_length": features["length"],
                         "target_ids": labels["ids"]})["logits"]
    log_probs = tf.gather(tf.nn.log_softmax(logits), labels["ids_out"], batch_dims=2).numpy()
    return [row[:n].tolist() for row, n in zip(log_probs, labels["length"].numpy())]


@pytest.mark.parametrize("options", [
    {},
    {"maximum_relative_position": None, "pre_norm": False, "ffn_activation": "gelu",
     "num_layers": (2, 1)},
    {"shared_vocabulary": True, "share_embeddings": "all", "ffn_activation": "silu",
     "num_layers": 2},
    {"share_embeddings": "target", "ffn_activation": "tanh",
     "maximum_relative_position": None},
    {"ffn_activation": "sigmoid", "pre_norm": False},
    {"shared_vocabulary": True, "share_embeddings": "all", "maximum_relative_position": None,
     "pre_norm": False, "source_eos": True, "use_output_bias": False,
     "query_key_value_init_gain": 0.5**0.5},
], ids=["relative-pre_norm-relu", "sinusoidal-post_norm-gelu-2_1_layers",
        "shared_all-silu-2_layers", "shared_target-tanh-sinusoidal", "sigmoid-post_norm",
        "fairseq-like-source_eos"])
def test_teacher_forced_log_probs_equal_kerasnmt(options, tmp_path):
    """Every token's log-probability (`score_batch`) equals kerasnmt's, for untrained
    models of each option the export maps: relative or sinusoidal positions, pre-norm or
    post-norm, each activation, shared embeddings, unequal encoder and decoder depths,
    `</s>` after each source (`add_source_eos`), no output bias. Unknown words map to the unknown id on both sides in both."""
    translator = tiny_translator(seed=5, **options)
    sources, targets = corpus(8, seed=5)
    sources = list(sources) + ["a b c d e f g h a b c d", "a z b"]
    targets = list(targets) + ["D C B A H G F E D C B A", "B Z A"]
    if options.get("shared_vocabulary"):
        targets = [target.lower() for target in targets]
    path = export_ctranslate2(translator, tmp_path / "ct2")
    expected = _teacher_forced_log_probs(translator, sources, targets)

    results = ctranslate2.Translator(str(path)).score_batch(
        [source.split() for source in sources], [target.split() for target in targets])
    for result, reference in zip(results, expected):
        np.testing.assert_allclose(result.log_probs, reference, atol=1e-4)


@pytest.fixture(scope="module", params=[
    ({}, 20),
    ({"maximum_relative_position": None, "share_embeddings": "target"}, 20),
    ({"maximum_relative_position": None, "share_embeddings": "target", "pre_norm": False,
      "source_eos": True, "use_output_bias": False}, 80),
], ids=["relative", "sinusoidal-shared_target", "fairseq-like-source_eos"])
def trained(request, tmp_path_factory):
    """A tiny model trained for a few steps, and its float32 export: with relative
    positions; with sinusoidal positions and the output layer shared with the target
    embeddings (as examples/multi30k_tiny); and as fairseq's models are (post-norm, `</s>`
    after each source, no output bias: 80 steps, where 20 leave most translations empty)."""
    options, steps = request.param
    sources, targets = corpus(40)
    translator = tiny_translator(seed=1, **options)
    translator.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=False)
    translator.fit(sources, targets, batch_size=20, length_bucket_width=None, epochs=1,
                   steps_per_epoch=steps, verbose=0)
    path = export_ctranslate2(translator, tmp_path_factory.mktemp("trained") / "ct2",
                              sampler=BeamSampler(max_length=MAX_LENGTH))
    return translator, path


def _kerasnmt_best(translator, sampler):
    return [n_best[0] for n_best in translator.translate(
        SENTENCES, sampler=sampler, return_details=True, jit_compile=False)]


def test_greedy_translations_equal_kerasnmt_token_for_token(trained):
    """Greedy search: the same tokens and cumulative log-probabilities (CTranslate2's score
    without length penalty), and the same text through `tokenizers`."""
    translator, path = trained
    sampler = BeamSampler(beam_size=1, max_length=MAX_LENGTH)
    expected = _kerasnmt_best(translator, sampler)
    results = _translate_with_ctranslate2(path, SENTENCES, beam_size=1)
    assert [tokens for tokens, _ in results] == [best["tokens"] for best in expected]
    np.testing.assert_allclose([score for _, score in results],
                               [best["log_prob"] for best in expected], atol=1e-4)
    # Some translations repeat a token until their limit: the limits are kerasnmt's.
    options = read_translate_options(path)
    tokenize, detokenize = tokenizers(path)
    limits = [translate_batch_options(options, len(tokenize(sentence)))["max_decoding_length"]
              for sentence in SENTENCES]
    assert any(len(tokens) == limit for (tokens, _), limit in zip(results, limits))
    assert [detokenize(tokens) for tokens, _ in results] == translator.translate(
        SENTENCES, sampler=sampler, jit_compile=False)


def test_sources_longer_than_the_maximum_are_cut_alike(trained, tmp_path):
    """kerasnmt keeps a source's first `maximum_source_length` tokens (then `</s>` with
    `source_eos`); CTranslate2 cuts to `max_input_length` after adding `</s>`, so the export
    leaves room for it: both translate the cut sources alike."""
    translator, _ = trained
    sampler = BeamSampler(beam_size=1, max_length=MAX_LENGTH)
    path = export_ctranslate2(translator, tmp_path / "ct2", sampler=sampler,
                              maximum_source_length=3)
    sentences = ["a b c d e f", "h g f e d c b", "c c c c", "b a"]
    expected = [n_best[0]["tokens"] for n_best in translator.translate(
        sentences, sampler=sampler, maximum_source_length=3, return_details=True,
        jit_compile=False)]
    cut = [n_best[0]["tokens"] for n_best in translator.translate(
        [" ".join(sentence.split()[:3]) for sentence in sentences], sampler=sampler,
        return_details=True, jit_compile=False)]
    assert expected == cut
    results = _translate_with_ctranslate2(path, sentences, beam_size=1)
    assert [tokens for tokens, _ in results] == expected


def test_beam_search_without_length_penalty_equals_kerasnmt(trained):
    """Beam 4 without penalties: the best hypothesis of both is the first to finish at the
    top of the beam. (Not guaranteed on every input: kerasnmt, as OpenNMT-tf, keeps
    finished hypotheses in the beam, where they take slots CTranslate2 gives to unfinished
    ones; on these sentences that never changes the result.)"""
    translator, path = trained
    expected = _kerasnmt_best(translator, BeamSampler(beam_size=4, max_length=MAX_LENGTH))
    results = _translate_with_ctranslate2(path, SENTENCES, beam_size=4, length_penalty=0)
    assert [tokens for tokens, _ in results] == [best["tokens"] for best in expected]
    np.testing.assert_allclose([score for _, score in results],
                               [best["log_prob"] for best in expected], atol=1e-4)


def test_beam_search_with_the_power_length_penalty_equals_kerasnmt(trained):
    """Beam 4, length penalty 0.6 with `length_normalization="power"` and frozen finished
    scores: kerasnmt's score is then CTranslate2's, `log_prob / length ** alpha` with
    `</s>` counted, so both return the same best hypotheses, except where their searches
    end differently: CTranslate2 stops once `beam_size` hypotheses have finished, kerasnmt
    (without `early_exit`) once every hypothesis in its beam has, so where they differ
    kerasnmt's choice scores at least as well as CTranslate2's. Their scores differ only
    for a hypothesis cut at its sentence's decoding limit below the sampler's `max_length`:
    kerasnmt forces `</s>` there and counts it (with probability 1), CTranslate2 does not
    (neither counts one at `max_length`)."""
    translator, path = trained
    sampler = BeamSampler(beam_size=4, length_penalty=LENGTH_PENALTY, max_length=MAX_LENGTH,
                          length_normalization="power", freeze_finished_scores=True)
    expected = _kerasnmt_best(translator, sampler)
    results = _translate_with_ctranslate2(path, SENTENCES, beam_size=4,
                                          length_penalty=LENGTH_PENALTY)
    differing = [index for index, ((tokens, _), best) in enumerate(zip(results, expected))
                 if tokens != best["tokens"]]
    # Searches that end differently rarely pick different hypotheses (one sentence of 32
    # with the model one fixture trains on a machine without AVX-512, none with it).
    assert len(differing) <= 1
    for index in differing:
        assert expected[index]["score"] >= results[index][1] - 1e-4
    options = read_translate_options(path)
    tokenize, _ = tokenizers(path)
    for sentence, (tokens, score), best in zip(SENTENCES, results, expected):
        if tokens != best["tokens"]:
            continue
        limit = translate_batch_options(options, len(tokenize(sentence)))["max_decoding_length"]
        ctranslate2_length = len(tokens) + (len(tokens) < limit)
        kerasnmt_length = len(tokens) + (len(tokens) < MAX_LENGTH)
        assert score == pytest.approx(best["log_prob"] / ctranslate2_length ** LENGTH_PENALTY,
                                      abs=1e-4)
        assert best["score"] == pytest.approx(
            best["log_prob"] / kerasnmt_length ** LENGTH_PENALTY, abs=1e-4)
    assert any(best["score"] != best["log_prob"] for best in expected)


def test_set_aside_beam_search_equals_ctranslate2s_search(trained):
    """Beam 4, length penalty 0.6, `length_normalization="power"` and
    `finished_hypotheses="set_aside"`: kerasnmt runs CTranslate2's own search, so both
    return the same 4-best list of every sentence with the same scores, but where a
    hypothesis reaches the sentence's decoding length limit: there CTranslate2 ends the
    search at its last step with the `beam_size` best candidates, while kerasnmt forces
    `</s>` one step later on the hypotheses of its beam (and counts it in their length),
    so each may keep a hypothesis of `limit` tokens the other did not. (OpenNMT-tf's
    search, `finished_hypotheses="in_beam"`, gives 9 equal 4-best lists of 32 on the
    fairseq-like fixture, 30 with this one.)"""
    translator, path = trained
    options = read_translate_options(path)
    tokenize, _ = tokenizers(path)
    limits = [translate_batch_options(options, len(tokenize(sentence)))["max_decoding_length"]
              for sentence in SENTENCES]
    sampler = BeamSampler(beam_size=4, n_best=4, length_penalty=LENGTH_PENALTY,
                          max_length=MAX_LENGTH, length_normalization="power",
                          finished_hypotheses="set_aside")
    expected = translator.translate(SENTENCES, sampler=sampler, return_details=True,
                                    jit_compile=False)
    results = _translate_with_ctranslate2(path, SENTENCES, n_best=True, beam_size=4,
                                          num_hypotheses=4, length_penalty=LENGTH_PENALTY)
    def shown(tokens):  # kerasnmt's details leave out <s> and <blank>, as its text does
        return [token for token in tokens if token not in ("<s>", "<blank>")]

    equal = 0
    for limit, hypotheses, n_best in zip(limits, results, expected):
        if [shown(tokens) for tokens, _ in hypotheses] != [best["tokens"] for best in n_best]:
            assert any(len(tokens) == limit for tokens, _ in hypotheses) or any(
                len(best["tokens"]) == limit for best in n_best)
            continue
        equal += 1
        for (tokens, score), best in zip(hypotheses, n_best):
            length = len(tokens) + 1 if len(tokens) < limit else limit
            assert best["log_prob"] == pytest.approx(score * length ** LENGTH_PENALTY,
                                                     abs=1e-4)
            if len(tokens) < limit:
                assert best["score"] == pytest.approx(score, abs=1e-4)
    assert equal >= len(SENTENCES) - 2
    assert any(best["score"] != best["log_prob"] for n_best in expected for best in n_best)


def test_beam_search_with_length_penalty_differs_only_by_its_length_normalization(trained):
    """Beam 4, length penalty 0.6, kerasnmt's default (GNMT) normalization: the two
    length penalties are different functions. kerasnmt ranks every step's candidates by
    OpenNMT-tf's GNMT score `log_prob / ((5 + length) / 6) ** alpha`, `length` counting
    `</s>` (plus one once finished, OpenNMT-tf's rule; a sentence's length limit forces
    `</s>`, so only a hypothesis cut at the sampler's `max_length` counts neither);
    CTranslate2 ranks by `log_prob`
    and divides a finished hypothesis by `length ** alpha` (`</s>` counted) at the end.
    Both scores are checked against these formulas on the model's own log-probabilities;
    where the translations differ, each runtime's choice is the better one by its own
    formula (so the difference is the formula, not the model), or kerasnmt's is the better
    by both formulas (CTranslate2's search ended first, see the test above)."""
    translator, path = trained
    expected = _kerasnmt_best(translator, BeamSampler(beam_size=4, length_penalty=LENGTH_PENALTY,
                                                      max_length=MAX_LENGTH))
    results = _translate_with_ctranslate2(path, SENTENCES, beam_size=4,
                                          length_penalty=LENGTH_PENALTY)
    model = ctranslate2.Translator(str(path))
    options = read_translate_options(path)
    tokenize, _ = tokenizers(path)

    differences = search_ended_first = 0
    for sentence, best, (tokens, score) in zip(SENTENCES, expected, results):
        source = tokenize(sentence)
        limit = translate_batch_options(options, len(source))["max_decoding_length"]

        def log_prob(hypothesis):  # with </s> unless the hypothesis was cut at the limit
            log_probs = model.score_batch([source], [hypothesis])[0].log_probs
            return sum(log_probs if len(hypothesis) < limit else log_probs[:-1])

        def kerasnmt_score(hypothesis):  # finished, unless cut at the sampler's max_length
            length = len(hypothesis) + 2 * (len(hypothesis) < MAX_LENGTH)
            return log_prob(hypothesis) / ((5 + length) / 6) ** LENGTH_PENALTY

        def ctranslate2_score(hypothesis):
            length = len(hypothesis) + (len(hypothesis) < limit)
            return log_prob(hypothesis) / length ** LENGTH_PENALTY

        assert log_prob(best["tokens"]) == pytest.approx(best["log_prob"], abs=1e-4)
        assert kerasnmt_score(best["tokens"]) == pytest.approx(best["score"], abs=1e-4)
        assert ctranslate2_score(tokens) == pytest.approx(score, abs=1e-4)
        if tokens != best["tokens"]:
            differences += 1
            assert kerasnmt_score(best["tokens"]) > kerasnmt_score(tokens)
            # Else kerasnmt's is the better by both: CTranslate2's search ended first.
            search_ended_first += ctranslate2_score(tokens) <= ctranslate2_score(best["tokens"])
    # CTranslate2's normalization favours longer translations: some differ here.
    assert 0 < differences < len(SENTENCES)
    assert search_ended_first <= 1


def test_int8_quantization_translates_every_sentence(trained, tmp_path):
    translator, _ = trained
    path = export_ctranslate2(translator, tmp_path / "int8", quantization="int8",
                              sampler=BeamSampler(max_length=MAX_LENGTH))
    model = ctranslate2.Translator(str(path))
    assert model.compute_type == "int8_float32"
    results = _translate_with_ctranslate2(path, SENTENCES)
    assert len(results) == len(SENTENCES)
    # The right number of lines, each within the limit (an int8 model may end a sentence
    # at once where the float one does not: an empty translation is a translation).
    assert all(len(tokens) <= MAX_LENGTH for tokens, _ in results)
    assert sum(len(tokens) > 0 for tokens, _ in results) >= len(SENTENCES) - 1
    assert os.path.getsize(path / "model.bin") < os.path.getsize(
        trained[1] / "model.bin")


def test_the_decoding_options_are_written_as_translate_batch_arguments(tmp_path):
    translator = tiny_translator()
    sampler = BeamSampler(beam_size=3, length_penalty=0.2, coverage_penalty=0.1, n_best=2,
                          max_length=40, min_length=2)
    path = export_ctranslate2(translator, tmp_path / "ct2", sampler=sampler,
                              maximum_source_length=12, length_ratio=1.5, length_offset=4,
                              replace_unknown_target=True)
    assert read_translate_options(path) == {
        "translate_batch": {
            "beam_size": 3, "length_penalty": 0.2, "coverage_penalty": 0.1,
            "num_hypotheses": 2, "sampling_topk": 1, "sampling_temperature": 1.0,
            "max_input_length": 12, "max_decoding_length": 40, "min_decoding_length": 2,
            "replace_unknowns": True,
        },
        "maximum_source_length": 12,
        "decoding_length_ratio": 1.5,
        "decoding_length_offset": 4,
        "source_tokenizer": {"type": "whitespace"},
        "target_tokenizer": {"type": "whitespace"},
    }
    options = read_translate_options(path)
    # floor(1.5 * 7) + 4; 20 tokens are cut to 12 first: floor(1.5 * 12) + 4.
    assert translate_batch_options(options, 7)["max_decoding_length"] == 14
    assert translate_batch_options(options, 20)["max_decoding_length"] == 22
    assert translate_batch_options(options, 0)["max_decoding_length"] == 4
    (path / OPTIONS_FILE).write_text(json.dumps(dict(options, target_tokenizer={
        "type": "MosesTokenizer"})))
    with pytest.raises(ValueError, match="the target tokenizer is a MosesTokenizer: tokenize "
                                         "as it does"):
        tokenizers(path)
    config = json.loads((path / "config.json").read_text())
    assert (config["add_source_bos"], config["add_source_eos"]) == (False, False)
    assert (config["unk_token"], config["decoder_start_token"]) == ("<unk>", "<s>")
    assert json.loads((path / "source_vocabulary.json").read_text()) == (
        translator.preprocessor.source_vocabulary + ["<unk>"])


def test_sentencepiece_models_are_written_beside_the_model(tmp_path):
    """A joint SentencePiece vocabulary (shared embeddings): both SentencePiece models
    beside the model, `tokenizers` splits text into the preprocessor's pieces, and an
    untrained model's greedy translations (text) equal kerasnmt's."""
    train_sentencepiece([QUICKSTART_DATA / "train.en", QUICKSTART_DATA / "train.de"],
                        str(tmp_path / "sp"), 120, file_byte_budget=20000,
                        byte_fallback=False)
    # Seeded first: tf.random.set_seed clears TensorFlow's kernel cache, which destroys the
    # SentencePiece op resources of tokenizers created before it.
    keras.utils.set_random_seed(4)
    tokenizer = SentencePieceTokenizer(str(tmp_path / "sp.model"))
    vocabulary = str(tmp_path / "sp.vocab")
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary)
    translator = Translator(preprocessor, num_layers=1, num_units=16, num_heads=2,
                            ffn_inner_dim=32, maximum_relative_position=4,
                            share_embeddings="all")
    sampler = BeamSampler(beam_size=1, max_length=12)
    path = export_ctranslate2(translator, tmp_path / "ct2", sampler=sampler)
    assert sorted(os.listdir(path)) == sorted(
        ["config.json", "model.bin", "shared_vocabulary.json", OPTIONS_FILE,
         *SENTENCEPIECE_FILES.values()])
    assert (path / SENTENCEPIECE_FILES["source"]).read_bytes() == tokenizer.proto

    sentences = (QUICKSTART_DATA / "val.en").read_text(encoding="utf-8").splitlines()[:6]
    tokenize, detokenize = tokenizers(path)
    assert [tokenize(sentence) for sentence in sentences] == [
        [piece.decode() for piece in pieces] for pieces in tokenizer(sentences).to_list()]
    results = _translate_with_ctranslate2(path, sentences)
    assert [detokenize(tokens) for tokens, _ in results] == translator.translate(
        sentences, sampler=sampler, jit_compile=False)


def _listing(directory):
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
def test_unsupported_model_options_are_refused_before_anything_is_written(tmp_path,
                                                                           monkeypatch):
    """Each option CTranslate2 cannot express is named; nothing is written (not even a
    temporary directory)."""
    with_unknown_token = TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), SPECIALS + ["a"], SPECIALS + ["<unk>"])
    quantized = tiny_translator()
    quantized.quantize("int8")
    refused = {
        "ffn_activation 'elu'": tiny_translator(ffn_activation="elu"),
        "the target vocabulary holds <unk> as a token of its own \\(line 4\\)": Translator(
            with_unknown_token, num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16,
            maximum_relative_position=None),
        "layers quantized by Keras": quantized,
    }
    for message, translator in refused.items():
        with pytest.raises(ValueError, match=f"^cannot export to CTranslate2: .*{message}"):
            export_ctranslate2(translator, tmp_path / "ct2")
        assert _listing(tmp_path) == []
    with pytest.raises(TypeError, match="takes a kerasnmt Translator, got Sequential"):
        export_ctranslate2(keras.Sequential(), tmp_path / "ct2")
    monkeypatch.setitem(sys.modules, "ctranslate2.specs", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'kerasnmt\[ctranslate2\]'"):
        export_ctranslate2(tiny_translator(), tmp_path / "ct2")
    assert _listing(tmp_path) == []


def test_bad_export_arguments_are_refused_before_anything_is_written(tmp_path):
    translator = tiny_translator()
    path = tmp_path / "ct2"
    with pytest.raises(ValueError, match="unknown quantization 'int4': CTranslate2 takes one "
                                         "of int8, int8_float32, "):
        export_ctranslate2(translator, path, quantization="int4")
    assert _listing(tmp_path) == []

    path.mkdir()
    (path / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match=f"{path} exists and is not an empty directory: "
                                         "pass force=True"):
        export_ctranslate2(translator, path)
    assert _listing(tmp_path) == ["ct2", "ct2/notes.txt"]
    export_ctranslate2(translator, path, force=True)
    assert "notes.txt" not in os.listdir(path) and "model.bin" in os.listdir(path)
    assert os.listdir(tmp_path) == ["ct2"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert "model.bin" in os.listdir(export_ctranslate2(translator, empty))
