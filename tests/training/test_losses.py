import math

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training import Perplexity, cross_entropy_sequence_loss, guided_alignment_cost
from kerasnmt.training.losses import token_cross_entropy

PROBABILITIES = np.array(
    [[[0.5, 0.25, 0.25], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]]], dtype="float32"
)  # [1, 3, 3]


def test_cross_entropy_sums_unpadded_tokens():
    loss, tokens = cross_entropy_sequence_loss(np.log(PROBABILITIES), [[0, 1, 2]], [2])
    assert float(tokens) == 2.0
    assert math.isclose(float(loss), -math.log(0.5) - math.log(0.6), rel_tol=1e-6)


def test_label_smoothing_by_hand():
    """V = 3, smoothing 0.1: 0.9 on the label and 0.05 on each other id."""
    logits = np.log(PROBABILITIES)
    loss, _ = cross_entropy_sequence_loss(logits, [[0, 1, 2]], [1], 0.1, training=True)
    expected = -(0.9 * math.log(0.5) + 0.05 * math.log(0.25) + 0.05 * math.log(0.25))
    assert math.isclose(float(loss), expected, rel_tol=1e-6)
    # Not in evaluation.
    loss, _ = cross_entropy_sequence_loss(logits, [[0, 1, 2]], [1], 0.1, training=False)
    assert math.isclose(float(loss), -math.log(0.5), rel_tol=1e-6)


ATTENTION = np.array(
    [
        [[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]],  # 2 constrained steps, the third is padding
        [[0.1, 0.9], [0.5, 0.5], [0.5, 0.5]],  # 1 constrained step
    ],
    dtype="float32",
)
ALIGNMENT = np.array(
    [[[1, 0], [0, 1], [1, 0]], [[0, 1], [1, 0], [1, 0]]], dtype="float32"
)


def test_guided_alignment_ce_by_hand():
    cost = guided_alignment_cost(ATTENTION, ALIGNMENT, [2, 1], "ce", weight=2.0)
    expected = 2.0 * -(math.log(0.5) + math.log(0.75) + math.log(0.9)) / 3
    assert math.isclose(float(cost), expected, rel_tol=1e-6)


def test_guided_alignment_ce_renormalizes_and_clips_like_keras():
    attention = np.array([[[0.2, 0.2], [0.0, 1.0]]], "float32")
    alignment = np.array([[[1, 0], [1, 0]]], "float32")
    cost = guided_alignment_cost(attention, alignment, [2], "ce")
    expected = -(math.log(0.5) + math.log(1e-7)) / 2
    assert math.isclose(float(cost), expected, rel_tol=1e-5)


def test_guided_alignment_mse_by_hand():
    cost = guided_alignment_cost(ATTENTION, ALIGNMENT, [2, 1], "mse")
    expected = ((0.25 + 0.25) / 2 + (0.0625 + 0.0625) / 2 + (0.01 + 0.01) / 2) / 3
    assert math.isclose(float(cost), expected, rel_tol=1e-6)


def test_guided_alignment_type_is_checked():
    with pytest.raises(ValueError, match="guided_alignment_type"):
        guided_alignment_cost(ATTENTION, ALIGNMENT, [2, 1], "kl")


def test_perplexity_is_exp_of_weighted_mean():
    metric = Perplexity()
    metric.update_state([[1.0, 2.0], [3.0, 8.0]], sample_weight=[[1, 1], [1, 0]])
    assert math.isclose(float(metric.result()), math.exp(2.0), rel_tol=1e-6)


def _softmax(logits):
    exponentials = np.exp(logits - logits.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)


def test_token_cross_entropy_values_and_gradient_are_the_formulas():
    """loss = -sum_v q_v log p_v, nll = -log p_label; d/dlogits: p - q and p - one_hot."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype("float32") * 3
    labels = np.array([[0, 4, 2], [1, 1, 3]])
    smoothing = 0.2
    one_hot = np.eye(5, dtype="float32")[labels]
    target = one_hot * (1 - smoothing) + (1 - one_hot) * smoothing / 4
    probabilities = _softmax(logits.astype("float64"))
    loss_weights = rng.uniform(size=(2, 3)).astype("float32")
    nll_weights = rng.uniform(size=(2, 3)).astype("float32")
    variable = tf.Variable(logits)
    with tf.GradientTape() as tape:
        loss, nll = token_cross_entropy(variable, labels, smoothing)
        total = tf.reduce_sum(loss * loss_weights) + tf.reduce_sum(nll * nll_weights)
    gradient = tape.gradient(total, variable).numpy()

    np.testing.assert_allclose(loss, -(target * np.log(probabilities)).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(nll, -(one_hot * np.log(probabilities)).sum(-1), rtol=1e-5)
    expected = (probabilities - target) * loss_weights[..., None] + (
        probabilities - one_hot
    ) * nll_weights[..., None]
    np.testing.assert_allclose(gradient, expected, atol=1e-6)


def test_token_cross_entropy_gradient_matches_finite_differences():
    logits = np.array([[2.0, -1.0, 0.5, 0.0], [0.1, 0.2, -3.0, 1.5]], "float32")
    theoretical, numerical = tf.test.compute_gradient(
        lambda x: token_cross_entropy(x, [3, 0], 0.1)[0], [logits], delta=1e-2
    )
    np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-3)
