import math

import numpy as np
import pytest

from kerasnmt.training import Perplexity, cross_entropy_sequence_loss, guided_alignment_cost

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
