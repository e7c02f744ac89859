import numpy as np
import pytest

from kerasnmt.layers import TransformerEncoderLayer
from tests.layer_test_helper import run_layer_test

INIT = dict(num_units=8, num_heads=2, ffn_inner_dim=16, dropout=0.1, attention_dropout=0.1,
            ffn_dropout=0.1, maximum_relative_position=3)


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=[2, 5, 8]).astype("float32"), np.array(
        [[1] * 5, [1] * 3 + [0] * 2], dtype=bool
    )


@pytest.mark.parametrize("pre_norm", [True, False])
def test_run_layer_test(pre_norm):
    run_layer_test(TransformerEncoderLayer, dict(INIT, pre_norm=pre_norm), _inputs(), atol=1e-5)


def test_pre_norm_block_formula():
    """Pre-norm: y = x + attn(ln(x)); z = y + ffn(ln(y)), checked from the sublayers."""
    layer = TransformerEncoderLayer(**dict(INIT, dropout=0.0, attention_dropout=0.0, ffn_dropout=0.0))
    x, mask = _inputs()
    outputs = layer(x, mask).numpy()
    y = x + layer.self_attention(layer.self_attention_norm(x), attention_mask=mask).numpy()
    z = y + layer.ffn(layer.ffn_norm(y)).numpy()
    np.testing.assert_allclose(outputs, z, atol=1e-5)


def test_post_norm_block_formula():
    layer = TransformerEncoderLayer(**dict(INIT, dropout=0.0, attention_dropout=0.0, ffn_dropout=0.0,
                                           pre_norm=False))
    x, mask = _inputs()
    outputs = layer(x, mask).numpy()
    y = layer.self_attention_norm(x + layer.self_attention(x, attention_mask=mask)).numpy()
    z = layer.ffn_norm(y + layer.ffn(y)).numpy()
    np.testing.assert_allclose(outputs, z, atol=1e-5)


def test_padding_does_not_change_real_positions():
    layer = TransformerEncoderLayer(**INIT)
    x, mask = _inputs()
    changed = x.copy()
    changed[1, 3:] = 100.0
    np.testing.assert_allclose(layer(x, mask)[1, :3], layer(changed, mask)[1, :3], atol=1e-5)


def test_num_units_must_divide_into_heads():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        TransformerEncoderLayer(num_units=10, num_heads=3, ffn_inner_dim=4)
