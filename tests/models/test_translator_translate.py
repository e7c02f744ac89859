"""Translator.decode (numeric) and Translator.translate (text), against independent answers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.data.vocabulary import END_OF_SENTENCE_ID, START_OF_SENTENCE_ID
from kerasnmt.decoding import BeamSampler, hypothesis_texts, source_width_buckets
from kerasnmt.decoding.widths import width_of
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
from tests.models.translator_fixtures import (
    corpus,
    fit_until_reproduced,
    forbid_outside,
    tiny_translator,
)

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(71)

SOURCE_IDS = np.array([[3, 4, 5, 6, 7], [8, 9, 0, 0, 0], [10, 3, 9, 0, 0]], np.int32)
SOURCE_LENGTH = np.array([5, 2, 3], np.int32)


def _teacher_forced_log_probs(translator, source_ids, source_length, hypotheses, limits):
    """Each hypothesis' log-probability under the full (non-incremental) model: the sum of
    its tokens' log-softmax, plus that of </s> unless it was cut at its sentence's limit."""
    ids, lengths = hypotheses["ids"].numpy(), hypotheses["lengths"].numpy()
    batch_size, n_best, _ = ids.shape
    expected = np.zeros([batch_size, n_best])
    for k in range(n_best):
        width = lengths[:, k].max() + 1
        target_ids = np.zeros([batch_size, width], np.int32)
        target_out = np.zeros([batch_size, width], np.int32)
        for i, n in enumerate(lengths[:, k]):
            target_ids[i, : n + 1] = [START_OF_SENTENCE_ID] + ids[i, k, :n].tolist()
            target_out[i, : n + 1] = ids[i, k, :n].tolist() + [END_OF_SENTENCE_ID]
        logits = translator(
            {"source_ids": source_ids, "source_length": source_length, "target_ids": target_ids}
        )["logits"].numpy().astype(np.float64)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        for i, n in enumerate(lengths[:, k]):
            scored = n if n == limits[i] else n + 1
            expected[i, k] = sum(log_probs[i, t, target_out[i, t]] for t in range(scored))
    return expected


@pytest.mark.parametrize("beam_size, options", [
    (1, {}), (3, {}), (3, {"share_embeddings": "target", "use_output_bias": False}),
], ids=["greedy", "beam_3", "beam_3-no_output_bias"])
def test_decode_log_probs_equal_the_full_model_score_and_lengths_stop_at_the_limit(beam_size,
                                                                                   options):
    translator = tiny_translator(seed=1, **options)
    sampler = BeamSampler(beam_size=beam_size, n_best=beam_size, length_penalty=0.6)
    hypotheses = translator.decode(SOURCE_IDS, SOURCE_LENGTH, sampler)
    limits = 2 * SOURCE_LENGTH + 10  # the default length_ratio=2, length_offset=10
    steps = 2 * SOURCE_IDS.shape[1] + 10 + 1
    assert hypotheses["ids"].shape == (3, beam_size, steps)
    assert hypotheses["alignment"].shape == (3, beam_size, steps, 5)
    lengths = hypotheses["lengths"].numpy()
    assert (lengths <= limits[:, None]).all()
    # An untrained model rarely emits </s>: some hypotheses run to their sentence's limit.
    assert (lengths == limits[:, None]).any()
    expected = _teacher_forced_log_probs(
        translator, SOURCE_IDS, SOURCE_LENGTH, hypotheses, limits
    )
    np.testing.assert_allclose(hypotheses["log_probs"], expected, atol=1e-4)
    # Attention rows of real tokens are distributions over the real source positions only.
    alignment = hypotheses["alignment"].numpy()
    for i in range(3):
        for k in range(beam_size):
            rows = alignment[i, k, : lengths[i, k]]
            np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
            assert not rows[:, SOURCE_LENGTH[i]:].any()
            assert not alignment[i, k, lengths[i, k]:].any()


def test_decode_runs_every_step_on_every_hypothesis_in_its_loops():
    """Every step, the first included, decodes every hypothesis in the loops (XLA,
    compacted from 3 sentences to 2, then 1: the decoder step traced once a loop); the
    results are the full model's scores."""
    translator = tiny_translator(seed=1)
    rows, decode_step = [], translator.decoder.decode_step

    def counted_decode_step(inputs, *arguments, **options):
        rows.append(inputs.shape[0])
        return decode_step(inputs, *arguments, **options)

    translator.decoder.decode_step = counted_decode_step
    sampler = BeamSampler(beam_size=3, length_penalty=0.6, compact_batch=True)
    decode = tf.function(lambda ids, length: translator.decode(ids, length, sampler),
                         jit_compile=True)
    hypotheses = decode(SOURCE_IDS, SOURCE_LENGTH)
    assert rows == [9, 6, 3]
    expected = _teacher_forced_log_probs(translator, SOURCE_IDS, SOURCE_LENGTH, hypotheses,
                                         2 * SOURCE_LENGTH + 10)
    np.testing.assert_allclose(hypotheses["log_probs"], expected, atol=1e-4)


def test_decode_is_the_same_with_wider_source_padding():
    translator = tiny_translator(seed=2)
    sampler = BeamSampler(beam_size=2, n_best=2, length_penalty=0.6, max_length=30)
    expected = translator.decode(SOURCE_IDS, SOURCE_LENGTH, sampler)
    wider = np.pad(SOURCE_IDS, [[0, 0], [0, 11]])  # 16 columns: longer buffers
    graph = tf.function(lambda ids, length: translator.decode(ids, length, sampler))
    for outputs in (translator.decode(wider, SOURCE_LENGTH, sampler),
                    graph(wider, SOURCE_LENGTH)):
        # Limits 20, 14, 16 < 30, and the buffers now hold the sampler's 30 steps.
        assert outputs["ids"].shape[-1] == 30
        np.testing.assert_array_equal(outputs["lengths"], expected["lengths"])
        np.testing.assert_array_equal(outputs["ids"][..., :21], expected["ids"])
        assert not outputs["ids"].numpy()[..., 21:].any()
        np.testing.assert_allclose(outputs["log_probs"], expected["log_probs"], atol=1e-4)
        np.testing.assert_allclose(outputs["scores"], expected["scores"], atol=1e-4)
        np.testing.assert_allclose(
            outputs["alignment"][:, :, :21, :5], expected["alignment"], atol=1e-5
        )


def test_source_eos_encodes_each_source_with_end_of_sentence_after_its_tokens():
    """A model with `source_eos` computes what the same weights compute on sources given
    `</s>` explicitly (and one more length): the logits, the attention over the `S + 1`
    positions and the guided alignment cost in training (a reference alignment gives
    `</s>` nothing); in decoding, the same hypotheses, with alignments over the source
    tokens only (the `</s>` column left out)."""
    marked = tiny_translator(seed=4, source_eos=True, guided_alignment_type="ce")
    config = marked.get_config()
    config["backbone"]["config"]["source_eos"] = False
    plain = type(marked).from_config(config)
    plain.set_weights(marked.get_weights())
    explicit_ids = np.pad(SOURCE_IDS, [[0, 0], [0, 1]])
    explicit_ids[np.arange(3), SOURCE_LENGTH] = END_OF_SENTENCE_ID
    target_ids = np.array([[1, 3, 4], [1, 5, 0], [1, 6, 7]], np.int32)
    x = {"source_ids": SOURCE_IDS, "source_length": SOURCE_LENGTH, "target_ids": target_ids}
    explicit_x = dict(x, source_ids=explicit_ids, source_length=SOURCE_LENGTH + 1)
    y = {"ids_out": np.array([[3, 4, 2], [5, 2, 0], [6, 7, 2]], np.int32),
         "length": np.array([3, 2, 3], np.int32),
         "alignment": np.eye(2, 5, dtype=np.float32)[np.newaxis].repeat(3, 0)}

    outputs, expected = marked(x), plain(explicit_x)
    np.testing.assert_allclose(outputs["logits"], expected["logits"], atol=1e-5)
    np.testing.assert_allclose(outputs["attention"], expected["attention"], atol=1e-6)
    np.testing.assert_allclose(marked.compute_loss(x, y, outputs),
                               plain.compute_loss(explicit_x, y, expected), rtol=1e-6)
    assert not np.allclose(outputs["logits"], plain(x)["logits"], atol=1e-3)

    sampler = BeamSampler(beam_size=2, n_best=2, max_length=12)
    limits = {"length_ratio": 0.0, "length_offset": 12}  # the same limit for both lengths
    hypotheses = marked.decode(SOURCE_IDS, SOURCE_LENGTH, sampler, **limits)
    reference = plain.decode(explicit_ids, SOURCE_LENGTH + 1, sampler, **limits)
    np.testing.assert_array_equal(hypotheses["ids"], reference["ids"])
    np.testing.assert_allclose(hypotheses["log_probs"], reference["log_probs"], atol=1e-4)
    tokens = np.arange(5) < SOURCE_LENGTH[:, None, None, None]
    np.testing.assert_allclose(hypotheses["alignment"],
                               reference["alignment"].numpy()[..., :5] * tokens, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
def test_decode_reads_an_int8_output_layer_as_the_layer_computes_it():
    """After Keras' int8 quantization the output layer holds int8 values and a scale per
    column; decoding's projection must undo the scale as the layer's own call does (which
    also rounds its inputs to int8: hence the 2% tolerance, where a raw int8 kernel is off
    by two orders of magnitude)."""
    translator = tiny_translator(seed=1)
    translator.quantize("int8")
    assert translator.output_layer.quantization_mode == "int8"
    hypotheses = translator.decode(SOURCE_IDS, SOURCE_LENGTH, BeamSampler(beam_size=1))
    expected = _teacher_forced_log_probs(
        translator, SOURCE_IDS, SOURCE_LENGTH, hypotheses, 2 * SOURCE_LENGTH + 10)
    np.testing.assert_allclose(hypotheses["log_probs"], expected, rtol=0.02)


def test_decode_respects_the_sampler_max_length_and_the_length_arguments():
    translator = tiny_translator(seed=1)
    outputs = translator.decode(SOURCE_IDS, SOURCE_LENGTH, BeamSampler(beam_size=1, max_length=7))
    assert outputs["ids"].shape[-1] == 7 and outputs["lengths"].numpy().max() <= 7
    outputs = translator.decode(
        SOURCE_IDS, SOURCE_LENGTH, BeamSampler(beam_size=1), length_ratio=0.5, length_offset=1
    )
    limits = np.floor(0.5 * SOURCE_LENGTH).astype(int) + 1  # 3, 2, 2
    assert outputs["ids"].shape[-1] == 4
    assert (outputs["lengths"].numpy()[:, 0] <= limits).all()
    with pytest.raises(ValueError, match="length_offset must be an int >= 1"):
        translator.decode(SOURCE_IDS, SOURCE_LENGTH, BeamSampler(), length_offset=0)


@pytest.fixture(scope="module")
def trained():
    """A tiny Translator fitted on the 20-pair corpus until every target token has a
    teacher-forced probability above 0.9. Then a hypothesis that leaves a target (at least
    one token of probability below 0.1, log 0.1 = -2.3) scores below the target (above
    7 * log 0.9 = -0.74 for its at most 7 tokens, length penalty divisors in [1, 1.52]):
    greedy and beam search both reproduce the corpus."""
    sources, targets = corpus(20)
    translator = tiny_translator(num_units=32, num_heads=4, ffn_inner_dim=64)
    # Without XLA (test_translator.py trains with it): half the setup.
    translator.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=False)
    fit_until_reproduced(translator, sources, targets, batch_size=20, length_bucket_width=8,
                         pad_to_bucket_boundary=True, epochs=300)
    return translator, sources, targets


def test_translate_reproduces_the_training_corpus_greedy_and_beam_4(trained):
    """Greedy and beam 4 in graph mode, beam 4 through decoding slots compiled with XLA
    (one compilation: XLA and graph mode agree in test_beam_sampler.py)."""
    translator, sources, targets = trained
    for sampler, jit_compile in ((BeamSampler(beam_size=1), False),
                                 (BeamSampler(beam_size=4, length_penalty=0.6), False),
                                 (BeamSampler(beam_size=4, length_penalty=0.6,
                                              compact_batch=True), True)):
        assert translator.translate(sources, sampler=sampler,
                                    jit_compile=jit_compile) == list(targets)


def test_translate_restores_input_order_across_batches_and_widths(trained):
    """Sorted-by-length batches of 3 (some padded), two source widths, outputs in input order:
    each sentence's translation equals its translation alone."""
    translator, sources, targets = trained
    sentences = list(sources[:7]) + ["a b c d e f g h " * 2 + "a"]  # 17 tokens: width 32
    sampler = BeamSampler(beam_size=1)
    together = translator.translate(sentences, sampler=sampler, batch_size=3, jit_compile=False)
    alone = translator.translate(sentences, sampler=sampler, batch_size=1, jit_compile=False)
    assert together == alone
    assert together[:7] == list(targets[:7])


def test_translate_traces_the_decode_of_each_width_once_across_requests(trained):
    """A request with a longer source traces a batch search over more widths; the decode
    of each width it shares with the earlier requests is not traced again."""
    translator, sources, _ = trained
    sampler = BeamSampler(beam_size=2, length_penalty=0.6)
    long_sentence = "a b c d e f g h " * 2 + "a"  # 17 tokens: widths 8, 16 and 32
    traced_before = set(getattr(translator, "_translate_functions", {}))
    short = translator.translate(sources[:3], sampler=sampler, jit_compile=False)
    decodes = [function for key, function in translator._translate_functions.items()
               if key[0] == "decode" and key not in traced_before]
    assert len(decodes) == 1
    decode = decodes[0]
    assert decode.experimental_get_tracing_count() == 1  # [32, 8]
    translator.translate([long_sentence], sampler=sampler, jit_compile=False)
    assert decode.experimental_get_tracing_count() == 3  # and [32, 16], [32, 32]
    assert translator.translate(sources[:3], sampler=sampler, jit_compile=False) == short
    assert decode.experimental_get_tracing_count() == 3


def test_a_length_limit_fixed_as_opennmt_tf_s_traces_one_decode_for_every_width(trained):
    """With `length_ratio` 0 and an offset beyond `max_length` (a converted OpenNMT-tf
    model), every width decodes `max_length` steps: one trace serves all widths, and the
    translations are those of a limit that gives each width its own trace (the same
    `max_length` steps, reached by the ratio)."""
    translator, sources, _ = trained
    sampler = BeamSampler(beam_size=2, length_penalty=0.6, max_length=12)
    requests = [sources[:3], ["a b c d e f g h " * 2 + "a"]]  # widths 8; 8, 16 and 32

    def translations_and_traces(length_ratio, length_offset):
        traced_before = set(getattr(translator, "_translate_functions", {}))
        translations = [translator.translate(request, sampler=sampler, jit_compile=False,
                                             length_ratio=length_ratio,
                                             length_offset=length_offset)
                        for request in requests]
        decode, = [function for key, function in translator._translate_functions.items()
                   if key[0] == "decode" and key not in traced_before]
        return translations, decode.experimental_get_tracing_count()

    fixed, traces = translations_and_traces(0.0, 20)
    assert traces == 1
    # Ratio 2, offset 8: a width of 1 decodes 11 steps, so each width has its own trace,
    # and every sentence here (2 tokens or more) has the same limit, 12 tokens.
    assert min(len(source.split()) for source in sources[:3]) >= 2
    assert translations_and_traces(2.0, 8) == (fixed, 3)


def test_translate_details_are_the_n_best_list(trained):
    translator, sources, targets = trained
    sampler = BeamSampler(beam_size=3, n_best=3, length_penalty=0.6, freeze_finished_scores=True)
    details = translator.translate(sources[:4], sampler=sampler, return_details=True,
                                   jit_compile=False)
    assert len(details) == 4
    for source, target, n_best in zip(sources[:4], targets[:4], details):
        assert len(n_best) == 3
        assert n_best[0]["text"] == target and n_best[0]["tokens"] == target.split()
        scores = [h["score"] for h in n_best]
        assert scores == sorted(scores, reverse=True)
        for h in n_best:
            assert h["text"] == " ".join(h["tokens"])
            # Length penalty 0.6 of (5 + tokens + </s>) / 6 (frozen when </s> is emitted).
            penalty = ((5.0 + len(h["tokens"]) + 1) / 6.0) ** 0.6
            assert h["score"] == pytest.approx(h["log_prob"] / penalty, abs=1e-5)
            assert h["alignment"].shape == (len(h["tokens"]), len(source.split()))
            np.testing.assert_allclose(h["alignment"].sum(-1), 1.0, atol=1e-5)


def test_replace_unknown_target_takes_the_most_attended_source_token():
    """An untrained model emits the unknown id (11) often: each <unk> becomes the source
    token of its highest alignment weight, every other token stays."""
    translator = tiny_translator(seed=0)
    sentences = ["a b c", "e f g h a b c d e f", "d"]
    arguments = dict(sampler=BeamSampler(beam_size=2, n_best=2), return_details=True,
                     jit_compile=False)
    plain = translator.translate(sentences, **arguments)
    replaced = translator.translate(sentences, replace_unknown_target=True, **arguments)
    unknowns = 0
    for sentence, plain_n_best, replaced_n_best in zip(sentences, plain, replaced):
        source = sentence.split()
        for before, after in zip(plain_n_best, replaced_n_best):
            expected = [
                source[int(np.argmax(weights))] if token == "<unk>" else token
                for token, weights in zip(before["tokens"], before["alignment"])
            ]
            assert after["tokens"] == expected and after["text"] == " ".join(expected)
            unknowns += before["tokens"].count("<unk>")
    assert unknowns > 0


def test_a_shortlist_decodes_as_a_model_that_forbids_the_other_target_tokens():
    """A batch's shortlist normalizes the probabilities over its tokens: the same search,
    scores and alignments as the model whose output bias is -1e9 outside them (a softmax
    weight of exp(-1e9) = 0); a batch whose shortlist is wider than `width` is decoded
    over the whole vocabulary."""
    translator = tiny_translator(seed=5)
    sentences = ["a b c", "c b a d", "b b"]
    sampler = BeamSampler(beam_size=3, n_best=2, length_penalty=0.6)
    # Source a b c d are ids 3-6; target A-H are 3-10 and <unk> 11. The decoding runs over
    # positions in [0, 1, 2, 6, 7, 8, 9, 10, 11]: from 3 on, position and id differ.
    shortlist = LexicalShortlist({3: [7, 9], 4: [8], 5: [11], 6: [10]}, always=[6], width=16)
    allowed = shortlist.target_ids([[3, 4, 5, 6]]).numpy()
    arguments = dict(sampler=sampler, return_details=True, jit_compile=False)
    plain = translator.translate(sentences, **arguments)
    restricted = translator.translate(sentences, shortlist=shortlist, **arguments)
    assert set(np.concatenate([h["tokens"] for n in plain for h in n])) - {
        translator.preprocessor.target_vocabulary[i] for i in allowed if i < 11} - {"<unk>"}
    too_narrow = LexicalShortlist(shortlist.candidates, [6], width=8)  # 9 ids allowed
    _assert_same_n_best(translator.translate(sentences, shortlist=too_narrow, **arguments), plain)

    forbid_outside(translator, allowed)
    _assert_same_n_best(restricted, translator.translate(sentences, **arguments))


def _assert_same_n_best(results, expected_results):
    for n_best, expected_n_best in zip(results, expected_results, strict=True):
        assert [h["tokens"] for h in n_best] == [h["tokens"] for h in expected_n_best]
        for hypothesis, expected in zip(n_best, expected_n_best):
            for key in ("score", "log_prob", "alignment"):
                np.testing.assert_allclose(hypothesis[key], expected[key], atol=1e-5)


def test_hypothesis_texts_replace_unknown_tokens_from_real_source_positions_only():
    """A hand-made decode output: the unknown id 5 takes the most attended source token
    among the first `source_length` (the padding column has the largest weight)."""
    outputs = {
        "ids": tf.constant([[[3, 5, 5, 0]]]),
        "lengths": tf.constant([[3]]),
        "alignment": tf.constant([[[[0.1, 0.6, 0.3], [0.7, 0.2, 0.9], [0.1, 0.3, 0.95],
                                    [0.0, 0.0, 0.0]]]]),
    }
    vocabulary = ["<blank>", "<s>", "</s>", "X", "Y"]
    preprocessor = TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(),
                                           ["<blank>", "<s>", "</s>", "ein", "Haus"], vocabulary)
    texts = hypothesis_texts(preprocessor, outputs, tf.constant([2]),
                             tf.constant([["ein", "Haus", ""]]), with_alignments=True)
    assert texts["tokens"].numpy().tolist() == [[[b"X", b"ein", b"Haus"]]]
    assert texts["texts"].numpy().tolist() == [[b"X ein Haus"]]
    assert texts["token_counts"].numpy().tolist() == [[3]]
    np.testing.assert_allclose(texts["alignments"][0, 0], [[0.1, 0.6], [0.7, 0.2], [0.1, 0.3]])
    texts = hypothesis_texts(preprocessor, outputs, tf.constant([2]))
    assert texts["texts"].numpy().tolist() == [[b"X <unk> <unk>"]] and "alignments" not in texts


def test_source_width_buckets_one_a_doubling():
    assert source_width_buckets(256) == [8, 16, 32, 64, 128, 256]
    assert source_width_buckets(100) == [8, 16, 32, 64, 100]
    assert source_width_buckets(8) == [8] and source_width_buckets(5) == [5]
    buckets = source_width_buckets(256)
    assert [width_of(n, buckets) for n in (0, 1, 8, 9, 16, 17, 33, 65, 129, 200)] == [
        8, 8, 8, 16, 16, 32, 64, 128, 256, 256]


def test_decode_with_a_source_width_unknown_when_tracing():
    """A `[None, None]` signature (as a SavedModel's): one decoding loop per width bucket
    in the graph, chosen by the actual width, with the static decode's results (traced
    for the static width)."""
    translator = tiny_translator(seed=1)
    # Widths 8 (T=27), 16 (43), then the sampler's 60 steps (width 32 would need 75).
    sampler = BeamSampler(beam_size=2, n_best=2, max_length=60)
    decode = tf.function(
        lambda ids, length: translator.decode(ids, length, sampler),
        input_signature=[tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32)],
    )
    for width, steps in ((5, 27), (12, 43), (20, 60)):
        ids = np.pad(SOURCE_IDS, [[0, 0], [0, width - 5]])
        expected = tf.function(lambda ids: translator.decode(ids, SOURCE_LENGTH, sampler))(ids)
        outputs = decode(ids, SOURCE_LENGTH)
        assert outputs["ids"].shape[-1] == steps
        np.testing.assert_array_equal(outputs["lengths"], expected["lengths"])
        np.testing.assert_array_equal(
            outputs["ids"][..., : expected["ids"].shape[-1]], expected["ids"]
        )
        np.testing.assert_allclose(outputs["log_probs"], expected["log_probs"], atol=1e-4)
