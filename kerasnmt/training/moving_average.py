"""An exponential moving average of the weights during training (OpenNMT-tf's
`moving_average_decay`)."""

import contextlib

import keras
import tensorflow as tf

from kerasnmt.training.optimizer_step import optimizer_step


class MovingAverage(keras.callbacks.Callback):
    """Keeps an exponential moving average of a model's trainable weights while it trains.

    As OpenNMT-tf (`tf.train.ExponentialMovingAverage` with `num_updates` the optimizer
    step): the first weight update of a `fit` starts each average at its weight; after
    update `t` (the optimizer step, which a resumed run continues) each average becomes
    `d * average + (1 - d) * weight` with `d = min(decay, (1 + t) / (10 + t))`, so that
    early averages do not hold on to the initial weights. Batches that only accumulate
    gradients change nothing.

    `swapped_in()` puts the averages in the model for the time of a `with` block (give it
    to `CheckpointCallback(saved_weights=...)` so that checkpoints hold them, as
    OpenNMT-tf's do); when training ends the model keeps them.

    Args:
        decay: the decay of the average, in (0, 1), e.g. 0.9999.

    Examples:
        >>> MovingAverage(decay=0.9999).decay
        0.9999
    """

    def __init__(self, decay):
        super().__init__()
        if not 0 < decay < 1:
            raise ValueError(f"MovingAverage: decay must be in (0, 1), got {decay}")
        self.decay = decay
        self._averages = None
        self._last_step = None

    def on_train_begin(self, logs=None):
        self._averages = None
        self._last_step = None

    def on_train_batch_begin(self, batch, logs=None):
        if self._last_step is None:  # after on_train_begin restored a checkpoint, if any
            self._last_step = optimizer_step(self.model)

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
        if step == self._last_step:
            return
        self._last_step = step
        weights = self.model.trainable_weights
        if self._averages is None:
            self._averages = [tf.Variable(tf.convert_to_tensor(weight), trainable=False)
                              for weight in weights]
            return
        decay = min(self.decay, (1 + step) / (10 + step))
        _update_averages(self._averages, [weight.value for weight in weights],
                         tf.constant(decay, tf.float32))

    @contextlib.contextmanager
    def swapped_in(self):
        """Within the block, the model's trainable weights are their averages (unchanged
        before the first update)."""
        if self._averages is None:
            yield
            return
        weights = self.model.trainable_weights
        current = [tf.identity(tf.convert_to_tensor(weight)) for weight in weights]
        for weight, average in zip(weights, self._averages):
            weight.assign(average)
        try:
            yield
        finally:
            for weight, value in zip(weights, current):
                weight.assign(value)

    def on_train_end(self, logs=None):
        if self._averages is not None:
            for weight, average in zip(self.model.trainable_weights, self._averages):
                weight.assign(average)


@tf.function
def _update_averages(averages, weights, decay):
    for average, weight in zip(averages, weights):
        average.assign_sub((1.0 - decay) * (average - tf.cast(weight, average.dtype)))
