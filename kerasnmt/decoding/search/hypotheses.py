"""Gathering the hypotheses' rows, and the results read back from the search's tables.

Row `b * beam_size + k` holds hypothesis `k` of example `b`.

Examples:
    >>> import tensorflow as tf
    >>> example_rows(tf.constant([2, 0]), beam_size=3).numpy().tolist()
    [6, 7, 8, 0, 1, 2]
"""

import tensorflow as tf

from kerasnmt.decoding.gather_tree import gather_tree


def example_rows(examples, beam_size):
    """The rows `[B' * beam_size]` of examples `[B']`: `b * beam_size + k`."""
    return tf.reshape(examples[:, tf.newaxis] * beam_size + tf.range(beam_size), [-1])


def gather_rows_or_examples(tensor, examples, rows, old_rows):
    """`tensor` gathered at `rows` (`example_rows(examples)`) when its leading dimension
    is statically `old_rows` (one per hypothesis), else at `examples` (one per example or
    slot)."""
    indices = rows if old_rows is not None and tensor.shape[0] == old_rows else examples
    return tf.ensure_shape(tf.gather(tensor, indices),
                           [indices.shape[0]] + tensor.shape.as_list()[1:])


def steps_first(table):
    """`[rows, T, ...] -> [T, rows, ...]` (`None` stays `None`)."""
    if table is None:
        return None
    return tf.transpose(table, [1, 0] + list(range(2, table.shape.rank)))


def finalize(rule, step_ids, parent_ids, num_steps, scores, log_probs, attention, end_id,
             batch_size):
    """The search's outputs (see `BeamSampler`) from its tables `[T, rows]` of tokens,
    parent slots and attention `[T, rows, S]` (or `None`), and its last `scores` and
    `log_probs` `[rows]` (`rule.final_values`), `rule.table_slots` rows an example: the
    paths of `rule.final_beams` rebuilt by `gather_tree`."""
    final_scores = tf.reshape(scores, [-1, rule.table_slots])
    final_beams = rule.final_beams(final_scores, batch_size)
    ids, lengths, alignment = gather_tree(
        step_ids, parent_ids, rule.table_slots, num_steps, end_id,
        final_beams=final_beams, step_values=attention,
    )
    log_probs = tf.reshape(log_probs, [-1, rule.table_slots])
    outputs = {
        "ids": ids,
        "lengths": lengths,
        "log_probs": tf.gather(log_probs, final_beams, batch_dims=1),
        "scores": tf.gather(final_scores, final_beams, batch_dims=1),
    }
    if alignment is not None:
        outputs["alignment"] = alignment
    return outputs
