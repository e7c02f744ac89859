import numpy as np
import pytest

from kerasnmt.layers import TransformerEncoder
from tests.layer_test_helper import run_layer_test


def _inputs():
    rng = np.random.default_rng(2)
    return rng.normal(size=[2, 5, 8]).astype("float32"), np.array(
        [[1] * 5, [1] * 3 + [0] * 2], dtype=bool
    )


@pytest.mark.parametrize("maximum_relative_position", [None, 4])
def test_run_layer_test(maximum_relative_position):
    run_layer_test(
        TransformerEncoder,
        dict(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
             maximum_relative_position=maximum_relative_position),
        _inputs(),
        atol=1e-5,
    )


def test_stack_formula():
    """Scaled embeddings (+ positions when absolute), the layers in order, a final norm."""
    encoder = TransformerEncoder(num_layers=2, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 dropout=0.0, attention_dropout=0.0, ffn_dropout=0.0)
    x, mask = _inputs()
    outputs = encoder(x, mask)
    y = encoder.position_encoding(x * np.sqrt(8.0))
    for layer in encoder.transformer_layers:
        y = layer(y, mask)
    np.testing.assert_allclose(outputs, encoder.output_norm(y), atol=1e-5)


def test_relative_positions_replace_absolute_ones():
    encoder = TransformerEncoder(num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16,
                                 maximum_relative_position=4, pre_norm=False)
    assert encoder.position_encoding is None and encoder.output_norm is None
