"""The search rules used on their own, step by step, against values computed by hand."""

import math

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding.search import BeamRanking, Greedy, SetAsideRanking, TopKSampling
from kerasnmt.decoding.search.rule_choice import choose_rule

END = 0


def test_beam_ranking_two_steps_with_a_length_penalty_by_hand():
    """Beam 2, alpha 1: the first step extends the only live hypothesis (length 1, divisor
    1); at the second (length 2, divisor 7 / 6) the first hypothesis ends (0.7 * 0.8) and
    the second goes on (0.2 * 0.5), ahead of the first one's other words (0.7 * 0.1)."""
    rule = BeamRanking(beam_size=2, length_penalty=1.0)
    hypotheses = rule.first_hypotheses(tf.constant([1, 1]), num_examples=1)
    probs = tf.constant([[0.1, 0.2, 0.7], [0.1, 0.2, 0.7]])
    hypotheses, word_ids, beam_ids, _ = rule.advance(
        hypotheses, tf.math.log(probs), None, tf.constant(END), step=tf.constant(0))
    assert word_ids.numpy().tolist() == [2, 1] and beam_ids.numpy().tolist() == [0, 0]
    np.testing.assert_allclose(hypotheses["log_probs"], np.log([0.7, 0.2]), rtol=1e-6)
    np.testing.assert_allclose(hypotheses["scores"], np.log([0.7, 0.2]), rtol=1e-6)

    probs = tf.constant([[0.8, 0.1, 0.1], [0.1, 0.5, 0.4]])
    hypotheses, word_ids, beam_ids, _ = rule.advance(
        hypotheses, tf.math.log(probs), None, tf.constant(END), step=tf.constant(1))
    assert word_ids.numpy().tolist() == [END, 1] and beam_ids.numpy().tolist() == [0, 1]
    expected = [math.log(0.7 * 0.8), math.log(0.2 * 0.5)]
    np.testing.assert_allclose(hypotheses["log_probs"], expected, rtol=1e-6)
    np.testing.assert_allclose(hypotheses["scores"], np.divide(expected, 7 / 6), rtol=1e-6)
    assert hypotheses["finished"].numpy().tolist() == [True, False]
    assert hypotheses["lengths"].numpy().tolist() == [2, 2]
    assert rule.examples_done(hypotheses).numpy().tolist() == [False]
    assert BeamRanking(beam_size=2, early_exit=True).examples_done(
        hypotheses).numpy().tolist() == [True]


def test_a_finished_hypothesis_emits_end_and_keeps_its_log_prob():
    rule = Greedy(min_length=0)
    hypotheses = rule.first_hypotheses(tf.constant([1]), num_examples=1)
    hypotheses["finished"] = tf.constant([True])
    hypotheses["log_probs"] = hypotheses["scores"] = tf.constant([-1.5])
    hypotheses["lengths"] = tf.constant([3])
    hypotheses, word_ids, _, _ = rule.advance(
        hypotheses, tf.constant([[0.0, 9.0, 1.0]]), None, tf.constant(END), tf.constant(4))
    assert word_ids.numpy().tolist() == [END]
    assert hypotheses["log_probs"].numpy().tolist() == [-1.5]
    assert hypotheses["lengths"].numpy().tolist() == [3]


def test_greedy_takes_the_best_word_and_forbids_end_before_min_length():
    rule = Greedy(min_length=1, length_penalty=1.0)
    logits = tf.math.log([[0.6, 0.3, 0.1]])
    hypotheses = rule.first_hypotheses(tf.constant([1]), num_examples=1)
    next_hypotheses, word_ids, _, _ = rule.advance(hypotheses, logits, None,
                                                   tf.constant(END), tf.constant(0))
    assert word_ids.numpy().tolist() == [1]  # </s> gets -1e7 at step 0
    np.testing.assert_allclose(next_hypotheses["log_probs"], [math.log(0.3 / 0.4)],
                               rtol=1e-6)

    hypotheses["log_probs"] = hypotheses["scores"] = tf.constant([-2.0])
    hypotheses["lengths"] = tf.constant([2])
    next_hypotheses, word_ids, _, _ = rule.advance(hypotheses, logits, None,
                                                   tf.constant(END), tf.constant(2))
    assert word_ids.numpy().tolist() == [END]
    expected = -2.0 + math.log(0.6)
    np.testing.assert_allclose(next_hypotheses["log_probs"], [expected], rtol=1e-6)
    np.testing.assert_allclose(next_hypotheses["scores"], [expected / (8 / 6)], rtol=1e-6)


def test_top_k_sampling_draws_among_the_top_k_reproducibly():
    rule = TopKSampling(beam_size=3, top_k=2, temperature=0.5, seed=4)
    logits = tf.math.log([[0.05, 0.1, 0.15, 0.3, 0.4]] * 3)
    for step in range(5):
        draws = []
        for _ in range(2):
            hypotheses = rule.first_hypotheses(tf.constant([1, 1, 1]), num_examples=1)
            _, word_ids, _, _ = rule.advance(hypotheses, logits, None, tf.constant(END),
                                             tf.constant(step), seed=rule.base_seed(),
                                             seed_step=tf.constant(step))
            draws.append(word_ids.numpy().tolist())
        assert draws[0] == draws[1] and set(draws[0]) <= {3, 4}


def test_an_unknown_length_normalization_is_refused():
    with pytest.raises(ValueError, match=r"BeamRanking: length_normalization must be one of"):
        BeamRanking(beam_size=2, length_normalization="average")


def test_forcing_end_changes_the_end_column_only():
    """A finished row's </s> logit becomes FORCED_END_LOGIT, so that its log-softmax gives
    </s> a log-probability of exactly 0; before min_length every row's </s> logit loses
    1e7 (OpenNMT-tf's); the other logits are left as they were; without an end id (-1, a
    keras-hub sampler without a stop token) nothing changes."""
    from kerasnmt.decoding.search.scoring import FORCED_END_LOGIT, force_or_forbid_end

    logits = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    finished = tf.constant([True, False])
    forced = force_or_forbid_end(logits, tf.constant(5), finished, tf.constant(END), 0)
    np.testing.assert_array_equal(forced, [[FORCED_END_LOGIT, 2, 3], [0.5, -1, 4]])
    assert tf.nn.log_softmax(forced)[0, END].numpy() == 0.0

    penalized = np.float32([1.0, 0.5]) + np.float32(-1e7)  # in float32, as the logits
    forbidden = force_or_forbid_end(logits, tf.constant(1), finished, tf.constant(END), 3)
    np.testing.assert_array_equal(forbidden, [[penalized[0], 2, 3], [penalized[1], -1, 4]])
    after_min_length = force_or_forbid_end(logits, tf.constant(3), finished, tf.constant(END), 3)
    np.testing.assert_array_equal(after_min_length, forced)

    per_row_steps = force_or_forbid_end(logits, tf.constant([5, 1]), finished,
                                        tf.constant(END), 3)
    np.testing.assert_array_equal(per_row_steps,
                                  [[FORCED_END_LOGIT, 2, 3], [penalized[1], -1, 4]])

    no_end = force_or_forbid_end(logits, tf.constant(5), finished, tf.constant(-1), 3)
    np.testing.assert_array_equal(no_end, logits)


def test_choose_rule_picks_the_rule_of_the_options_and_passes_them_on():
    options = dict(n_best=2, min_length=1, length_penalty=0.6, freeze_finished_scores=False,
                   early_exit=True)
    beam = choose_rule(4, **options)
    assert type(beam) is BeamRanking and beam.beam_size == 4 and beam.n_best == 2
    assert beam.length_penalty == 0.6 and beam.min_length == 1 and beam.early_exit
    greedy = choose_rule(1, n_best=1, coverage_penalty=0.2)
    assert type(greedy) is Greedy and greedy.beam_size == 1 and greedy.coverage_penalty == 0.2
    sampling = choose_rule(1, top_k=0, temperature=0.7, seed=5, **options)
    assert type(sampling) is TopKSampling and sampling.beam_size == 1
    assert (sampling.top_k, sampling.temperature, sampling.seed) == (0, 0.7, 5)
    # The set-aside rule's scores are always frozen, whatever the option says.
    set_aside = choose_rule(3, finished_hypotheses="set_aside", max_length=7,
                            **dict(options, early_exit=False))
    assert type(set_aside) is SetAsideRanking and set_aside.max_length == 7
    assert set_aside.freeze_finished_scores and set_aside.length_penalty == 0.6
