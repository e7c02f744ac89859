import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.training import FusedAdam


def run_updates(optimizer_class, gradients, strategy=None, **options):
    """The variable after applying `gradients` one by one in a tf.function, and the op types
    of the update's graph."""
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        variable = keras.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32))
        optimizer = optimizer_class(**options)
        optimizer.build([variable])

    @tf.function
    def update(gradient):
        optimizer.apply_gradients([(gradient, variable)])

    for gradient in gradients:
        update(tf.constant(gradient, tf.float32))
    graph = update.get_concrete_function(tf.constant(gradients[0], tf.float32)).graph
    return variable.numpy(), {op.type for op in graph.get_operations()}


GRADIENTS = [[[0.1, -0.3], [2.0, 0.0]], [[-0.2, 0.4], [1.0, 0.5]], [[0.3, 0.3], [-1.0, 2.0]]]
OPTIONS = dict(learning_rate=0.01, beta_1=0.9, beta_2=0.998, epsilon=1e-7)


def test_fused_updates_equal_keras_adam():
    fused, fused_ops = run_updates(FusedAdam, GRADIENTS, **OPTIONS)
    keras_adam, keras_ops = run_updates(keras.optimizers.Adam, GRADIENTS, **OPTIONS)
    assert "ResourceApplyAdam" in fused_ops and "ResourceApplyAdam" not in keras_ops
    np.testing.assert_allclose(fused, keras_adam, rtol=1e-6, atol=1e-7)


def test_first_update_is_the_learning_rate_times_the_gradient_sign():
    # m = (1 - b1) g, v = (1 - b2) g^2, so the bias-corrected m / sqrt(v) is sign(g).
    updated, _ = run_updates(FusedAdam, GRADIENTS[:1], **dict(OPTIONS, epsilon=1e-12))
    start = np.array([[1.0, -2.0], [0.5, 3.0]])
    np.testing.assert_allclose(updated, start - 0.01 * np.sign(GRADIENTS[0]), atol=1e-6)


@pytest.mark.parametrize("case", ["amsgrad", "strategy"])
def test_keras_update_serves_amsgrad_and_strategies(case):
    options = dict(OPTIONS, amsgrad=case == "amsgrad")
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0") if case == "strategy" else None
    fused, fused_ops = run_updates(FusedAdam, GRADIENTS, strategy, **options)
    keras_adam, _ = run_updates(keras.optimizers.Adam, GRADIENTS, strategy, **options)
    assert "ResourceApplyAdam" not in fused_ops
    np.testing.assert_allclose(fused, keras_adam, rtol=1e-6, atol=1e-7)
