"""Keras' Adam applied with one TensorFlow operation a variable."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kerasnmt")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` whose update of each variable is TensorFlow's fused
    `ResourceApplyAdam` (what `tf.compat.v1.train.AdamOptimizer` and OpenNMT-tf's optimizers
    run) instead of Keras' ten element-wise operations: the same formula,

        m = m + (g - m) (1 - beta_1);  v = v + (g^2 - v) (1 - beta_2)
        w = w - lr sqrt(1 - beta_2^t) / (1 - beta_1^t) m / (sqrt(v) + epsilon)

    with the same variables (checkpoints are interchangeable with `keras.optimizers.Adam`'s).
    Keras' own update serves `amsgrad` and training under a `tf.distribute` strategy, whose
    variables are updated replica by replica. `kerasnmt train` uses it for
    `params.optimizer: Adam`, and `Translator.compile` by default.

    Examples:
        >>> variable = keras.Variable([1.0, 2.0])
        >>> optimizer = FusedAdam(learning_rate=0.1)
        >>> _ = optimizer.apply_gradients([(tf.constant([0.5, -0.5]), variable)])
        >>> [round(float(value), 4) for value in variable.numpy()]  # step 1: w - lr sign(g)
        [0.9, 2.1]
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or tf.distribute.has_strategy():
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable),
            m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]),
            beta1_power=beta_1**step,
            beta2_power=beta_2**step,
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )


def _handle(variable):
    """The resource handle of a TensorFlow variable or of the one a Keras variable wraps."""
    return (variable if isinstance(variable, tf.Variable) else variable._value).handle
