"""Back-tracks beam search paths through a table of parent beams, in pure TensorFlow."""

import tensorflow as tf


def gather_tree(step_ids, parent_ids, beam_size, num_steps, end_id, final_beams=None,
                step_values=None):
    """Follows parent pointers back from the last step to rebuild each hypothesis.

    At step `t` of a beam search, slot `k` of example `b` (row `b * beam_size + k`) chose
    token `step_ids[t, row]` and continued the hypothesis held at step `t - 1` by slot
    `parent_ids[t, row]` of the same example. This function starts from the slots
    `final_beams` at step `num_steps - 1` and walks back to step 0 with a reverse
    `tf.while_loop` (only core ops: no TensorFlow Addons, no custom op; XLA-compilable).
    Tokens from the first `end_id` on, and steps from `num_steps` on, become 0 (padding).

    Args:
        step_ids: int32 `[T, B * beam_size]`, the token chosen at each step by each slot.
        parent_ids: int32 `[T, B * beam_size]`, for each step and slot, the slot (in
            `[0, beam_size)`) of the same example whose hypothesis it extended.
        beam_size: the number of slots per example.
        num_steps: int32 scalar in `[1, T]`, the number of steps decoded; later rows of the
            tables are ignored.
        end_id: the end-of-sentence id (Python int or int32 scalar).
        final_beams: int32 `[B, N]`, the slots at the last step to back-track from, in the
            order to return them; all `beam_size` slots in order when omitted.
        step_values: optional `[T, B * beam_size, ...]` values recorded at each step for each
            slot (attention vectors), gathered along the same paths.

    Returns:
        A tuple `(ids, lengths, values)`: int32 `[B, N, T]` tokens (before the first
        `end_id`, 0 after), int32 `[B, N]` lengths (tokens before the first `end_id`, at most
        `num_steps`), and the values along each path as `[B, N, T, ...]` with zeros where the
        ids are padding (`None` when `step_values` is `None`).

    Examples:
        >>> step_ids = [[4, 3], [2, 5], [6, 2]]    # steps 0..2, beams 0..1 of one example
        >>> parent_ids = [[0, 0], [0, 1], [1, 0]]  # at step 2, beam 0 extends beam 1
        >>> ids, lengths, _ = gather_tree(step_ids, parent_ids, beam_size=2, num_steps=3, end_id=2)
        >>> ids.numpy().tolist()
        [[[3, 5, 6], [4, 0, 0]]]
        >>> lengths.numpy().tolist()
        [[3, 1]]
    """
    step_ids = tf.convert_to_tensor(step_ids, tf.int32)
    parent_ids = tf.convert_to_tensor(parent_ids, tf.int32)
    num_steps = tf.convert_to_tensor(num_steps, tf.int32)
    end_id = tf.convert_to_tensor(end_id, tf.int32)
    if step_ids.shape.rank != 2 or parent_ids.shape.rank != 2:
        raise ValueError(
            f"gather_tree expects step_ids and parent_ids of shape [T, B * beam_size], got "
            f"{step_ids.shape} and {parent_ids.shape}"
        )
    max_time = step_ids.shape[0] if step_ids.shape[0] is not None else tf.shape(step_ids)[0]
    num_rows = tf.shape(step_ids)[1]
    batch_size = num_rows // beam_size
    if final_beams is None:
        final_beams = tf.tile(tf.range(beam_size)[tf.newaxis], [batch_size, 1])
    final_beams = tf.convert_to_tensor(final_beams, tf.int32)
    num_hypotheses = tf.shape(final_beams)[1]
    first_rows = tf.range(batch_size)[:, tf.newaxis] * beam_size
    last_rows = tf.reshape(first_rows + final_beams, [-1])
    row_offsets = (last_rows // beam_size) * beam_size

    # path_rows[t, n]: the row of step t on the path of hypothesis n. Steps from num_steps
    # on are never written; TensorArray.stack reads them as zeros (masked below).
    def write_step(t, rows, path_rows):
        path_rows = path_rows.write(t, rows)
        return t - 1, row_offsets + tf.gather(parent_ids[t], rows), path_rows

    path_rows = tf.TensorArray(tf.int32, size=max_time, element_shape=last_rows.shape)
    _, _, path_rows = tf.while_loop(
        lambda t, rows, path_rows: t >= 0,
        write_step,
        (tf.maximum(num_steps, 1) - 1, last_rows, path_rows),
    )
    path_rows = path_rows.stack()
    ids = tf.gather(step_ids, path_rows, batch_dims=1)
    time = tf.range(max_time)[:, tf.newaxis]
    before_end = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, end_id), tf.int32), axis=0), 0)
    valid = tf.logical_and(before_end, time < num_steps)
    ids = tf.where(valid, ids, 0)
    lengths = tf.reduce_sum(tf.cast(valid, tf.int32), axis=0)
    output_shape = tf.stack([batch_size, num_hypotheses, max_time])
    ids = tf.reshape(tf.transpose(ids), output_shape)
    lengths = tf.reshape(lengths, output_shape[:2])
    values = None
    if step_values is not None:
        step_values = tf.convert_to_tensor(step_values)
        values = tf.gather(step_values, path_rows, batch_dims=1)
        rank = values.shape.rank
        mask = tf.reshape(valid, [max_time, -1] + [1] * (rank - 2))
        values = tf.where(mask, values, tf.zeros((), values.dtype))
        values = tf.transpose(values, [1, 0] + list(range(2, rank)))
        values = tf.reshape(values, tf.concat([output_shape, tf.shape(values)[2:]], 0))
    return ids, lengths, values
