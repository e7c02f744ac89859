"""TensorBoard's scalar summaries of a training run, written with core TensorFlow.

Examples:
    >>> import tempfile
    >>> summaries = TrainingSummaries(tempfile.mkdtemp(), every=100)
    >>> summaries.every
    100
"""

import keras
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from kerasnmt.training.optimizer_step import optimizer_step

# TensorBoard's scalar summaries, written with core TensorFlow (`tf.summary.scalar` needs the
# tensorboard package, which TensorFlow no longer installs).
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


def write_scalar(name, value, step):
    """Writes a TensorBoard scalar to the default summary writer."""
    tf.summary.write(name, tf.constant(float(value), tf.float32), step=step,
                     metadata=_SCALAR_METADATA)


class TrainingSummaries(keras.callbacks.Callback):
    """Writes the loss and metrics of the steps since the last summary, and the learning
    rate, to TensorBoard every `every` steps, at the optimizer step (so a resumed run
    continues the curves).

    Keras' batch logs are means since the epoch began (an epoch is `eval.steps` steps):
    a summary is instead the mean over its own window, taken from the metrics' running
    totals (each `keras.metrics.Mean` keeps `total` and `count`), as OpenNMT-tf logs the
    current loss. The batches of a window that an epoch boundary (a metrics reset) cuts
    are carried over.
    """

    def __init__(self, directory, every):
        super().__init__()
        self.writer = tf.summary.create_file_writer(directory)
        self.every = every
        self._last_step = None
        # name -> (total, count) to subtract from a metric's totals to get the window's:
        # its totals at the last summary, less what an epoch's end left unwritten.
        self._offsets = {}
        self._scratch = {}  # name -> a copy of the metric, to compute a window's result

    def on_epoch_end(self, epoch, logs=None):
        # Keras resets the totals to zero as the next epoch begins.
        for metric in self._mean_metrics():
            total, count = _totals(metric)
            offset = self._offsets.get(metric.name, (0.0, 0.0))
            self._offsets[metric.name] = (offset[0] - total, offset[1] - count)

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
        if step == 0 or step % self.every or step == self._last_step:
            return  # (0: the first batches of an accumulated update)
        self._last_step = step
        values = dict(logs or {})
        for metric in self._mean_metrics():
            total, count = _totals(metric)
            offset = self._offsets.get(metric.name, (0.0, 0.0))
            self._offsets[metric.name] = (total, count)
            if count - offset[1] > 0:
                values[metric.name] = self._result_of(metric, total - offset[0],
                                                      count - offset[1])
        with self.writer.as_default():
            for name, value in values.items():
                write_scalar(name, value, step)
            learning_rate = self.model.optimizer.learning_rate
            write_scalar("learning_rate", keras.ops.convert_to_numpy(learning_rate), step)
        self.writer.flush()

    def on_train_end(self, logs=None):
        self.writer.flush()

    def _mean_metrics(self):
        return [metric for metric in self.model.metrics
                if isinstance(metric, keras.metrics.Mean)]

    def _result_of(self, metric, total, count):
        """What `metric` would report with these totals (its own `result`, e.g. `exp` for
        perplexity)."""
        if metric.name not in self._scratch:
            self._scratch[metric.name] = metric.__class__.from_config(metric.get_config())
        scratch = self._scratch[metric.name]
        scratch.total.assign(total)
        scratch.count.assign(count)
        return float(keras.ops.convert_to_numpy(scratch.result()))


def _totals(metric):
    return (float(keras.ops.convert_to_numpy(metric.total)),
            float(keras.ops.convert_to_numpy(metric.count)))
