"""Translator.decode (numeric) and Translator.translate (text), against independent answers."""

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.data.vocabulary import END_OF_SENTENCE_ID, START_OF_SENTENCE_ID
from kerasnmt.layers import BeamSampler
from tests.models.translator_fixtures import tiny_translator

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


@pytest.mark.parametrize("beam_size", [1, 3])
def test_decode_log_probs_equal_the_full_model_score_and_lengths_stop_at_the_limit(beam_size):
    translator = tiny_translator(seed=1)
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


def test_decode_is_the_same_with_wider_source_padding_and_under_xla():
    translator = tiny_translator(seed=2)
    sampler = BeamSampler(beam_size=2, n_best=2, length_penalty=0.6, max_length=30)
    expected = translator.decode(SOURCE_IDS, SOURCE_LENGTH, sampler)
    wider = np.pad(SOURCE_IDS, [[0, 0], [0, 11]])  # 16 columns: longer buffers
    compiled = tf.function(
        lambda ids, length: translator.decode(ids, length, sampler), jit_compile=True
    )
    for outputs in (translator.decode(wider, SOURCE_LENGTH, sampler), compiled(wider, SOURCE_LENGTH)):
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
