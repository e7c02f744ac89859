"""Perplexity: the exponential of the mean token cross-entropy."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasnmt")
class Perplexity(keras.metrics.Mean):
    """`exp` of the (weighted) mean of the token negative log-likelihoods it is given.

    Args:
        name: the metric name.
        **kwargs: passed to `keras.metrics.Mean`.

    Examples:
        >>> metric = Perplexity()
        >>> metric.update_state([1.0, 3.0, 9.0], sample_weight=[1.0, 1.0, 0.0])
        >>> round(float(metric.result()), 4)  # exp(2)
        7.3891
    """

    def __init__(self, name="perplexity", **kwargs):
        super().__init__(name=name, **kwargs)

    def result(self):
        return ops.exp(super().result())
