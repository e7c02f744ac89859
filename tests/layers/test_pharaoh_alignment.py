import re

import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.layers import PharaohAlignment
from tests.layer_test_helper import run_layer_test

# "▁bat ▁in ▁bad" -> "▁лету чая ▁мы шь ▁в ▁крова ти": one source token to several targets.
BAT_LINE = "0-0 0-1 0-2 0-3 1-4 2-5 2-6"
BAT_MATRIX = [  # [target 7, source 3]
    [1, 0, 0],
    [1, 0, 0],
    [1, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [0, 0, 1],
]
# Three source tokens, two target tokens, sources 0 and 1 both on target 0 (many to one).
MANY_TO_ONE_LINE = "0-0 1-0 2-1"
MANY_TO_ONE_MATRIX = [[1, 1, 0], [0, 0, 1]]


def test_reference_example_is_the_identity():
    run_layer_test(
        PharaohAlignment, {}, (tf.constant("0-0 1-1 2-2"), tf.constant(3), tf.constant(3)),
        expected_output=np.eye(3, dtype=np.float32), is_preprocessing=True,
    )


def test_one_to_many_non_square():
    matrix = PharaohAlignment()(BAT_LINE, 3, 7)
    assert matrix.dtype == tf.float32 and matrix.shape == (7, 3)
    np.testing.assert_array_equal(matrix.numpy(), BAT_MATRIX)


def test_batch_is_zero_padded_to_the_longest_lengths():
    padded_many_to_one = np.zeros([7, 3])
    padded_many_to_one[:2, :3] = MANY_TO_ONE_MATRIX
    run_layer_test(
        PharaohAlignment, {},
        (tf.constant([MANY_TO_ONE_LINE, BAT_LINE, "", "  \t"]), tf.constant([3, 3, 2, 1]),
         tf.constant([2, 7, 4, 1])),
        expected_output=np.stack([padded_many_to_one, BAT_MATRIX, np.zeros([7, 3]),
                                  np.zeros([7, 3])]),
        is_preprocessing=True,
    )


def test_empty_and_whitespace_only_lines_are_all_zero():
    layer = PharaohAlignment()
    for line in ["", "   ", "\t"]:
        matrix = layer(line, 2, 3)
        assert matrix.shape == (3, 2) and not np.any(matrix.numpy())
    assert layer(tf.constant([], tf.string), 2, 3).shape == (0, 0, 0)


def test_repeated_pair_and_scalar_lengths_for_a_batch():
    matrices = PharaohAlignment()(["1-0 1-0", "0-1"], 2, 2).numpy()
    np.testing.assert_array_equal(matrices, [[[0, 1], [0, 0]], [[0, 0], [1, 0]]])


def error_pattern(line, source_length, target_length):
    return re.escape(
        "invalid Pharaoh alignment: expected space-separated source-target pairs of "
        f"non-negative integers with source < source_length={source_length} and "
        f"target < target_length={target_length}, got line: {line}"
    ) + r"(?:'|\])"  # the end of the data that Assert prints, eagerly or in a graph


@pytest.mark.parametrize(
    "line",
    ["0-x", "1", "0--1", "-1-0", "0-0 1", "0-0,1-1", "0_0", "a-b", "0-1-2", "1-0 3-0", "0-3"],
)
def test_malformed_or_out_of_range_pairs_name_the_line_and_lengths(line):
    with pytest.raises(tf.errors.InvalidArgumentError, match=error_pattern(line, 3, 3)):
        PharaohAlignment()(line, 3, 3)


def test_errors_in_graph_and_dataset_name_the_first_bad_line():
    layer = PharaohAlignment()
    lines = tf.constant(["0-0", "0-0 4-1", "x"])
    source_length, target_length = tf.constant([1, 4, 1]), tf.constant([1, 2, 1])
    pattern = error_pattern("0-0 4-1", 4, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
        tf.function(layer)(lines, source_length, target_length)
    dataset = tf.data.Dataset.from_tensor_slices((lines, source_length, target_length))
    outputs = iter(dataset.map(layer))
    np.testing.assert_array_equal(next(outputs).numpy(), [[1.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
        next(outputs)


def test_negative_length_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match=error_pattern("", -1, 2)):
        PharaohAlignment()("", -1, 2)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="string scalar or a 1-D batch"):
        PharaohAlignment()([["0-0"]], 1, 1)
    with pytest.raises(ValueError, match="a length must be a scalar or match lines"):
        PharaohAlignment()("0-0", [1, 1], 1)
