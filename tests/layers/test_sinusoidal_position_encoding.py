import math

import numpy as np
import pytest

from kerasnmt.layers import SinusoidalPositionEncoding
from tests.layer_test_helper import run_layer_test


def expected_encoding(positions, depth):
    """OpenNMT-tf's formula, one value at a time: [sin(p * w_0..), cos(p * w_0..)]."""
    half = depth // 2
    rows = []
    for p in positions:
        w = [math.exp(-i * math.log(10000.0) / (half - 1)) for i in range(half)]
        rows.append([math.sin(p * x) for x in w] + [math.cos(p * x) for x in w])
    return np.array(rows, dtype="float32")


def test_encoding_values_from_position_one():
    inputs = np.random.default_rng(0).normal(size=[2, 3, 6]).astype("float32")
    outputs = SinusoidalPositionEncoding()(inputs)
    np.testing.assert_allclose(outputs - inputs, np.stack([expected_encoding([1, 2, 3], 6)] * 2), atol=1e-6)


def test_start_index_encodes_a_later_position():
    inputs = np.zeros([1, 1, 8], "float32")
    outputs = SinusoidalPositionEncoding()(inputs, start_index=4)
    np.testing.assert_allclose(outputs[0], expected_encoding([5], 8), atol=1e-6)


def test_a_start_index_per_example():
    inputs = np.zeros([3, 2, 8], "float32")
    outputs = SinusoidalPositionEncoding()(inputs, start_index=np.array([0, 4, 9]))
    for row, start in enumerate([0, 4, 9]):
        np.testing.assert_allclose(outputs[row], expected_encoding([start + 1, start + 2], 8),
                                   atol=1e-5)


def test_odd_depth_is_refused():
    with pytest.raises(ValueError, match="even"):
        SinusoidalPositionEncoding()(np.zeros([1, 2, 5], "float32"))


def test_run_layer_test():
    run_layer_test(
        SinusoidalPositionEncoding,
        {},
        np.zeros([2, 4, 6], "float32"),
        expected_output=np.stack([expected_encoding([1, 2, 3, 4], 6)] * 2),
    )
