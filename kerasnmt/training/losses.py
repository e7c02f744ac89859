"""The sequence losses of a translation model, with OpenNMT-tf's exact definitions."""

import tensorflow as tf

# The clipping epsilon of Keras' categorical cross-entropy, which OpenNMT-tf's guided
# alignment cost uses.
_KERAS_EPSILON = 1e-7
GUIDED_ALIGNMENT_TYPES = ("ce", "mse")


def cross_entropy_sequence_loss(logits, labels, lengths, label_smoothing=0.0, training=False):
    """Summed token cross-entropy of padded sequences, and the number of tokens.

    As OpenNMT-tf's `cross_entropy_sequence_loss`: in float32; with label smoothing (training
    only) the target distribution is `1 - label_smoothing` on the label and
    `label_smoothing / (V - 1)` on every other id; positions at or after `lengths` are masked.

    Args:
        logits: `[B, T, V]` float.
        labels: `[B, T]` int ids.
        lengths: `[B]` number of real positions of each sequence.
        label_smoothing: the smoothing value.
        training: label smoothing applies only when True.

    Returns:
        `(loss_sum, num_tokens)`, float32 scalars; their ratio is the mean token loss.

    Examples:
        >>> import numpy as np
        >>> logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]], "float32"))
        >>> loss, tokens = cross_entropy_sequence_loss(logits, [[0, 2]], [1])
        >>> round(float(loss), 4), float(tokens)  # -log(0.5); the second position is padding
        (0.6931, 1.0)
    """
    logits = tf.cast(logits, tf.float32)
    labels = tf.cast(labels, tf.int32)
    log_probs = tf.nn.log_softmax(logits)
    label_nll = -tf.gather(log_probs, labels, batch_dims=2)
    if training and label_smoothing > 0:
        num_classes = tf.cast(tf.shape(logits)[-1], tf.float32)
        off_value = label_smoothing / (num_classes - 1)
        # -sum_v q_v log p_v with q = off_value everywhere but 1 - label_smoothing on the label.
        others_nll = -tf.reduce_sum(log_probs, axis=-1) - label_nll
        token_loss = (1.0 - label_smoothing) * label_nll + off_value * others_nll
    else:
        token_loss = label_nll
    weights = tf.sequence_mask(lengths, maxlen=tf.shape(labels)[1], dtype=tf.float32)
    return tf.reduce_sum(token_loss * weights), tf.reduce_sum(weights)


def guided_alignment_cost(attention, alignment, lengths, cost_type="ce", weight=1.0):
    """OpenNMT-tf's guided alignment cost between attention weights and a reference alignment.

    `ce`: `-sum(alignment * log(clip(attention / sum_s attention, 1e-7, 1 - 1e-7)))`;
    `mse`: `mean_s((alignment - attention) ** 2)`; summed over the first `lengths` target
    positions of each example and divided by `sum(lengths)`, then multiplied by `weight`.
    A translation model passes the attention of every step but the one that predicts `</s>`
    and the target lengths without `</s>`.

    Args:
        attention: `[B, T, S]` attention probabilities.
        alignment: `[B, T, S]` reference alignment (e.g. 0/1 from Pharaoh pairs).
        lengths: `[B]` target positions to constrain in each example.
        cost_type: `"ce"` or `"mse"`.
        weight: the factor applied to the cost.

    Returns:
        A float32 scalar.

    Examples:
        >>> import numpy as np
        >>> attention = np.array([[[0.5, 0.5], [0.25, 0.75]]], "float32")
        >>> alignment = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
        >>> round(float(guided_alignment_cost(attention, alignment, [2])), 4)  # -(log .5 + log .75) / 2
        0.4904

    Reference:
        [OpenNMT-tf `guided_alignment_cost`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/utils/losses.py)
    """
    if cost_type not in GUIDED_ALIGNMENT_TYPES:
        raise ValueError(
            f"guided_alignment_type must be one of {GUIDED_ALIGNMENT_TYPES}, got {cost_type!r}"
        )
    attention = tf.cast(attention, tf.float32)
    alignment = tf.cast(alignment, tf.float32)
    if cost_type == "ce":
        probabilities = attention / tf.reduce_sum(attention, axis=-1, keepdims=True)
        probabilities = tf.clip_by_value(probabilities, _KERAS_EPSILON, 1.0 - _KERAS_EPSILON)
        cost = -tf.reduce_sum(alignment * tf.math.log(probabilities), axis=-1)
    else:
        cost = tf.reduce_mean(tf.square(alignment - attention), axis=-1)
    weights = tf.sequence_mask(lengths, maxlen=tf.shape(attention)[1], dtype=tf.float32)
    normalizer = tf.cast(tf.reduce_sum(lengths), tf.float32)
    return weight * tf.reduce_sum(cost * weights) / normalizer
