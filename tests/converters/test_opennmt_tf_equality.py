"""A converted OpenNMT-tf model scores and translates as OpenNMT-tf 2.32 itself did.

OpenNMT-tf's own outputs on 20 held-out pairs are committed with the fixture
(`tests/fixtures/opennmt_tf/README.md`): `onmt-main score` negative log-likelihoods,
greedy and beam-4 translations with their log-probabilities. Each model is converted
once per module, and restored as `kerasnmt translate --config` restores it.
"""

import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt.data.vocabulary import UNKNOWN_TOKEN
from kerasnmt.decoding import BeamSampler
from tests.converters.opennmt_tf_fixtures import (
    FIXTURE,
    convert,
    heldout,
    reference,
    restored,
    target_log_probability,
    token_log_probabilities,
)

pytestmark = pytest.mark.heavy(13)

MODELS = ("relative", "absolute")


@pytest.fixture(scope="module", params=MODELS)
def converted(request, tmp_path_factory):
    model = request.param
    conversion = convert(model, tmp_path_factory.mktemp(model) / "run")
    translator, config = restored(conversion.run_config)
    return model, translator, config


def _translations(model, translator, config, beam_size):
    """The best hypothesis of each held-out source, decoded together (eagerly: one batch,
    no tracing) with the configuration's decoding options: `{"text", "tokens",
    "log_prob"}`."""
    params = config["params"]
    sampler = BeamSampler(beam_size=beam_size, length_penalty=params["length_penalty"],
                          max_length=params["maximum_decoding_length"])
    sources = translator.preprocessor(tf.constant(heldout(model, "en")))
    results = translator.decode(sources["ids"], sources["length"], sampler,
                                length_ratio=params["decoding_length_ratio"],
                                length_offset=params["decoding_length_offset"])
    # The out-of-vocabulary id follows the tokens; OpenNMT-tf writes it <unk>.
    vocabulary = list(translator.preprocessor.target_vocabulary) + [UNKNOWN_TOKEN]
    texts = translator.preprocessor.detokenize_target(results["ids"][:, 0]).numpy()
    return [{"text": text.decode("utf-8"),
             "tokens": [vocabulary[token] for token in ids[:length]],
             "log_prob": float(log_prob)}
            for text, ids, length, log_prob in zip(
                texts, results["ids"][:, 0].numpy(), results["lengths"][:, 0].numpy(),
                results["log_probs"][:, 0].numpy())]


def _gnmt_score(log_probability, length, alpha):
    """OpenNMT-tf's and kerasnmt's ranking score of a finished hypothesis: its
    log-probability over `((5 + length) / 6) ** alpha`, `length` counting `</s>`."""
    return log_probability / ((5.0 + length) / 6.0) ** alpha


def _target_tokens(model, text):
    """The target tokens of a detokenized OpenNMT-tf translation."""
    if model == "absolute":
        return text.split()
    return sentencepiece.SentencePieceProcessor(
        model_file=str(FIXTURE / model / "sp.model")).encode(text, out_type=str)


def test_teacher_forced_log_probabilities_equal_onmt_main_score(converted):
    model, translator, _ = converted
    sources, targets = heldout(model, "en"), heldout(model, "de")
    for source, target, (nll, tokens, token_nlls) in zip(sources, targets,
                                                         reference(model, "score.txt")):
        log_probabilities = token_log_probabilities(translator, source, target)
        assert len(log_probabilities) == len(tokens.split()) + 1  # the same tokens, and </s>
        assert sum(log_probabilities) == pytest.approx(-float(nll), abs=1e-4), (model, target)
        # OpenNMT-tf's token-level figures leave out </s>'s.
        assert [-value for value in log_probabilities[:-1]] == pytest.approx(
            [float(value) for value in token_nlls.split()], abs=1e-4)


def test_greedy_translations_equal_onmt_main_infer_token_for_token(converted):
    model, translator, config = converted
    for hypothesis, (log_probability, text) in zip(
            _translations(model, translator, config, 1), reference(model, "greedy.txt")):
        assert hypothesis["text"] == text
        assert list(hypothesis["tokens"]) == _target_tokens(model, text), text
        # OpenNMT-tf's greedy figure is that of its own ids: equal, so are the ids.
        assert hypothesis["log_prob"] == pytest.approx(float(log_probability), abs=1e-4)


def test_beam_translations_equal_onmt_main_or_outscore_its_bookkeeping_bug(converted):
    model, translator, config = converted
    alpha = config["params"]["length_penalty"]
    sources = heldout(model, "en")
    for source, hypothesis, (log_probability, text) in zip(
            sources, _translations(model, translator, config, 4), reference(model, "beam4.txt")):
        if hypothesis["text"] == text:
            assert hypothesis["log_prob"] == pytest.approx(float(log_probability), abs=1e-4)
            continue
        # OpenNMT-tf's beam bookkeeping bug: the log-probability it returns is not that of
        # the ids it returns, so it may rank a worse hypothesis first.
        true_log_probability, length = target_log_probability(translator, source, text)
        assert true_log_probability != pytest.approx(float(log_probability), abs=1e-4), (
            f"{text!r}: OpenNMT-tf's own figure is right, and kerasnmt chose "
            f"{hypothesis['text']!r}")
        kerasnmt_length = len(hypothesis["tokens"]) + 1
        assert _gnmt_score(hypothesis["log_prob"], kerasnmt_length, alpha) >= _gnmt_score(
            true_log_probability, length, alpha) - 1e-5
