"""`tf.math.top_k` over a large last dimension, reading each row once by chunks.

Examples:
    >>> import tensorflow as tf
    >>> values = tf.range(64.0)[tf.newaxis] % 10  # 9 at 9, 19, ..., 59: ties
    >>> top_values, indices = top_k_by_chunks(values, 2)
    >>> top_values.numpy().tolist(), indices.numpy().tolist()
    ([[9.0, 9.0]], [[9, 19]])
"""

import math

import tensorflow as tf


def top_k_by_chunks(values, k):
    """`tf.math.top_k(values, k)` for `[N, V]` values with `k` much smaller than `V`: the
    same values, indices and tie order, but each row is read once by a vectorized maximum
    over chunks, and only the `k` chunks with the largest maxima (which hold the row's `k`
    best values) are ranked."""
    vocab_size = values.shape[-1]
    chunk_size = 64  # measured fastest on CPU, with and without XLA, for V in the thousands
    while chunk_size > 8 and 2 * k * chunk_size > vocab_size:
        chunk_size //= 2
    if 2 * k * chunk_size > vocab_size:
        return tf.math.top_k(values, k)
    num_chunks = math.ceil(vocab_size / chunk_size)
    padded = tf.pad(values, [[0, 0], [0, num_chunks * chunk_size - vocab_size]],
                    constant_values=float("-inf"))
    chunks = tf.reshape(padded, [-1, num_chunks, chunk_size])
    _, best_chunks = tf.math.top_k(tf.reduce_max(chunks, axis=2), k)
    best_chunks = tf.sort(best_chunks, axis=1)  # in index order: ties resolve as in top_k
    candidates = tf.reshape(tf.gather(chunks, best_chunks, batch_dims=1), [-1, k * chunk_size])
    indices = best_chunks[:, :, tf.newaxis] * chunk_size + tf.range(chunk_size)
    top_values, positions = tf.math.top_k(candidates, k)
    return top_values, tf.gather(tf.reshape(indices, [-1, k * chunk_size]), positions,
                                 batch_dims=1)
