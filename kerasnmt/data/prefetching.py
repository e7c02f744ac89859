"""The prefetch that ends each of kerasnmt's `tf.data` pipelines, with autotuning off.

With autotuning on (tf.data's default), an iterator runs a model thread that tunes the
pipeline at growing intervals, up to one a minute. Destroying the iterator cancels that
thread and waits for it. In TensorFlow 2.21 the thread can miss the cancellation: the
callback that wakes it runs before its `CancellationManager` reports cancelled, so it can
go back to sleep for the rest of its interval. The destruction then blocks for up to 60 s,
holding the GIL. Keras' `fit` leaves its iterator in a reference cycle, so the block lands
in some later garbage collection, anywhere in the program; the more the cores are busy, the
more often the race is lost.

Without autotuning there is no model thread. `num_parallel_calls=tf.data.AUTOTUNE` then
runs as many calls as the runner's thread pool has threads (one a core by default, at most
16), and a `tf.data.AUTOTUNE` prefetch buffer still grows while its consumer finds it
empty (tf.data's own prefetch autotuner, which needs no thread).
"""

import tensorflow as tf


def prefetch_without_autotuning(dataset, buffer_size):
    """`dataset.prefetch(buffer_size)`, with tf.data's autotuning model thread off.

    Args:
        dataset: a `tf.data.Dataset`.
        buffer_size: elements prepared ahead, or `tf.data.AUTOTUNE`.

    Returns:
        The prefetched `tf.data.Dataset`, the same elements in the same order.

    Examples:
        >>> import tensorflow as tf
        >>> squares = tf.data.Dataset.range(4).map(
        ...     lambda x: x * x, num_parallel_calls=tf.data.AUTOTUNE)
        >>> prefetched = prefetch_without_autotuning(squares, tf.data.AUTOTUNE)
        >>> [int(x) for x in prefetched], prefetched.options().autotune.enabled
        ([0, 1, 4, 9], False)
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(buffer_size).with_options(options)
