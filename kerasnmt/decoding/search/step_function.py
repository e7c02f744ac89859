"""Calling the user's `step_fn` and checking what it returns; tiling its first state.

Examples:
    >>> import tensorflow as tf
    >>> tile_state(tf.constant([[1], [2]]), batch_size=2, beam_size=2).numpy().tolist()
    [[1], [1], [2], [2]]
"""

import tensorflow as tf


def call_step_fn(call, loop, static_rows, attention_size, returns_attention,
                 needs_attention):
    """Runs `call(state)` (`step_fn` with the loop's ids and steps) on the loop's state,
    paired with its unordered state when it has one, and checks what it returns.

    Returns:
        `(logits, attention, new_state, new_unordered_state)` (the last `None` without
        an unordered state); `returns_attention` is set to `[attention is not None]`.
    """
    state = loop.get("state")
    if "unordered_state" in loop:
        state = ({} if state is None else state, loop["unordered_state"])
    logits, attention, new_state = check_step_outputs(
        call(state), state, static_rows, attention_size, needs_attention
    )
    returns_attention[:] = [attention is not None]
    new_unordered_state = None
    if "unordered_state" in loop:
        new_state, new_unordered_state = new_state
    return logits, attention, new_state, new_unordered_state


def check_step_outputs(outputs, state, static_rows, attention_size, needs_attention):
    """`(logits, attention, new_state)` from `step_fn`'s `outputs`, float32 and with the
    static shapes of the loop (`new_state`: those of `state`); `needs_attention` (the
    coverage penalty) refuses `None` attention."""
    if not isinstance(outputs, (tuple, list)) or len(outputs) != 3:
        raise ValueError(
            "BeamSampler: step_fn must return a tuple (logits, attention, new_state)"
        )
    logits, attention, new_state = outputs
    logits = tf.cast(logits, tf.float32)
    if logits.shape.rank != 2:
        raise ValueError(
            f"BeamSampler: step_fn must return logits of shape [B * beam_size, V], got "
            f"{logits.shape}"
        )
    logits = tf.ensure_shape(logits, [static_rows, None])
    if attention is not None:
        attention = tf.cast(attention, tf.float32)
        if attention.shape.rank != 2:
            raise ValueError(
                f"BeamSampler: step_fn must return attention of shape [B * beam_size, S] "
                f"or None, got {attention.shape}"
            )
        size = None if attention_size is None else tf.get_static_value(attention_size)
        attention = tf.ensure_shape(attention, [static_rows, size])
    elif needs_attention:
        raise ValueError("BeamSampler: coverage_penalty needs step_fn to return attention")
    if state is None:
        return logits, attention, None
    return logits, attention, _same_state_shapes(new_state, state)


def _same_state_shapes(new_state, state):
    """`new_state`, checked to have the structure and static shapes of `state`."""
    try:
        tf.nest.assert_same_structure(state, new_state)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"BeamSampler: step_fn must return a state with the structure of "
            f"initial_state: {error}"
        ) from None

    def keep_shape(new, old):
        if not new.shape.is_compatible_with(old.shape):
            raise ValueError(
                f"BeamSampler: step_fn changed a state tensor's shape from {old.shape} "
                f"to {new.shape}; the decoding loop needs static shapes (preallocate "
                f"caches to max_length)"
            )
        return tf.ensure_shape(new, old.shape)

    return tf.nest.map_structure(keep_shape, new_state, state)


def tile_state(tensor, batch_size, beam_size):
    """An `initial_state` tensor `[B, ...]` (`B` is `batch_size` when known) tiled to its
    hypotheses' rows `[B * beam_size, ...]`."""
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0 or (
        batch_size is not None and tensor.shape[0] not in (None, batch_size)
    ):
        raise ValueError(
            f"BeamSampler: every initial_state tensor must have the leading dimension "
            f"B = len(start_ids) = {batch_size}, got shape {tensor.shape}"
        )
    return tf.repeat(tensor, beam_size, axis=0)
