"""The compacting loop (`compact_batch=True`): the batch shrinks as its examples finish.

One loop runs at `B` examples while more than `ceil(B / 2)` are unfinished, then the
unfinished examples (and done ones to fill it) are gathered into a batch of
`ceil(B / 2)`, which runs while more than `ceil(B / 8)` are unfinished, and then a batch
of `ceil(B / 8)` finishes the search. A done example stands still (`PlainLoop`'s body with
`stand_still_when_done`), so each result is the one of its example decoded alone.
Each example's tables are copied out, at its original place, when it leaves a loop.

Examples:
    >>> batch_sizes(32, 32)
    [32, 16, 4]
"""

import math

import tensorflow as tf

from kerasnmt.decoding.search.hypotheses import (
    example_rows,
    finalize,
    gather_rows_or_examples,
    steps_first,
)
from kerasnmt.decoding.search.plain_loop import TABLES, PlainLoop, at_first_step


def batch_sizes(static_batch_size, batch_size):
    """The batch sizes of the successive loops: `B`, `ceil(B / 2)` and `ceil(B / 8)`
    (Python ints without repeats when `B` is static, else int32 scalars)."""
    if static_batch_size is None:
        return [batch_size, (batch_size + 1) // 2, (batch_size + 7) // 8]
    return sorted({static_batch_size, math.ceil(static_batch_size / 2),
                   math.ceil(static_batch_size / 8)}, reverse=True)


class CompactingLoop(PlainLoop):
    """`PlainLoop` in one loop per batch size of `batch_sizes` (see `batch_sizes`), each
    running while more examples are unfinished than the next size holds. The other
    arguments are `PlainLoop`'s; done examples always stand still."""

    def __init__(self, rule, step_fn, end_id, max_length, batch_sizes, attention_size=None):
        super().__init__(rule, step_fn, end_id, max_length, attention_size,
                         stand_still_when_done=True)
        self.batch_sizes = batch_sizes

    def search(self, start_ids, initial_state=None, unordered_state=None):
        """The search's outputs (see `BeamSampler`) for `start_ids` `[B]`."""
        rule, sizes, max_length = self.rule, self.batch_sizes, self.max_length
        returns_attention = self.returns_attention  # set when self.body first runs
        loop = self.first_loop(start_ids, initial_state, unordered_state)
        _check_unordered_state(loop, sizes[0], rule.beam_size)
        body = self._shared_body(loop)
        examples = tf.range(sizes[0])  # the original place of each example in the loop
        tables = None
        for index, size in enumerate(sizes):
            if index:
                unfinished_first = tf.argsort(
                    tf.cast(rule.examples_done(loop), tf.int32), stable=True
                )[:size]
                loop = _gather_examples(loop, unfinished_first, returns_attention == [True],
                                        rule, max_length)
                examples = tf.gather(examples, unfinished_first)
            later_size = sizes[index + 1] if index + 1 < len(sizes) else 0

            def cond(loop, later_size=later_size):
                unfinished = tf.reduce_sum(
                    tf.cast(tf.logical_not(rule.examples_done(loop)), tf.int32)
                )
                return tf.logical_or(at_first_step(loop), tf.logical_and(
                    unfinished > later_size, loop["step"] < max_length))

            (loop,) = tf.while_loop(
                cond, body, (loop,), maximum_iterations=max_length,
                parallel_iterations=1,
            )
            phase_tables = _final_tables(loop, self.end_id, returns_attention == [True],
                                         rule, max_length)
            if tables is None:
                tables = phase_tables
            else:
                rows = example_rows(examples, rule.table_slots)[:, tf.newaxis]
                tables = {
                    key: None if table is None
                    else tf.tensor_scatter_nd_update(table, rows, phase_tables[key])
                    for key, table in tables.items()
                }
        return finalize(
            rule, steps_first(tables["step_ids"]), steps_first(tables["parent_ids"]),
            loop["step"], tables["scores"], tables["log_probs"],
            steps_first(tables["attention"]), self.end_id, sizes[0],
        )

    def _shared_body(self, loop):
        """`self.body`, or in a graph whose batch size is unknown when tracing (a
        SavedModel's decode: every loop's tensors then have the same shapes) a body whose
        step (`advance`) is traced once, before the loops, and called by each: the graph
        holds one decoder step for all the loops instead of one each."""
        if tf.executing_eagerly() or isinstance(self.batch_sizes[0], int):
            return self.body
        specs = tf.nest.map_structure(
            tf.type_spec_from_value,
            {key: value for key, value in loop.items() if key not in TABLES})
        advance = tf.function(self.advance, autograph=False).get_concrete_function(specs)
        return lambda loop: self.body(loop, advance)


def _check_unordered_state(loop, batch_size, beam_size):
    for tensor in tf.nest.flatten(loop.get("unordered_state", [])):
        if isinstance(batch_size, int) and tensor.shape[0] not in (
            batch_size, batch_size * beam_size
        ):
            raise ValueError(
                f"BeamSampler(compact_batch=True): every unordered_state tensor must have "
                f"a leading dimension of B ({batch_size}) or B * beam_size "
                f"({batch_size * beam_size}), got shape {tensor.shape}"
            )


def _final_tables(loop, end_id, returns_attention, rule, max_length):
    """The loop's results per table row (`rule.table_slots` an example), rows first: the
    step tables of steps not decoded hold `</s>` from the row's own slot (a finished
    hypothesis staying in place)."""
    step = loop["step"]
    decoded = tf.range(max_length)[tf.newaxis, :] < step
    step_ids = tf.transpose(loop["step_ids"].stack())
    own_slots = (tf.range(tf.shape(step_ids)[0]) % rule.table_slots)[:, tf.newaxis]
    scores, log_probs = rule.final_values(loop)
    tables = {
        "step_ids": tf.where(decoded, step_ids, end_id),
        "parent_ids": tf.where(decoded, tf.transpose(loop["parent_ids"].stack()), own_slots),
        "scores": scores,
        "log_probs": log_probs,
        "attention": None,
    }
    if returns_attention:
        attention = tf.transpose(loop["attention"].stack(), [1, 0, 2])
        tables["attention"] = tf.where(decoded[:, :, tf.newaxis], attention, 0.0)
    return tables


def _gather_examples(loop, examples, returns_attention, rule, max_length):
    """The loop with only `examples` (int32 `[B']`), in that order. An unordered state
    tensor is per row when its leading dimension is statically `B * beam_size`, else
    per example."""
    num_examples = examples.shape[0]
    rows = example_rows(examples, rule.beam_size)
    num_rows = None if num_examples is None else num_examples * rule.beam_size
    table_rows = example_rows(examples, rule.table_slots)
    old_rows = loop["ids"].shape[0]

    def gather_per_row(tensor):
        return tf.ensure_shape(tf.gather(tensor, rows),
                               [num_rows] + tensor.shape.as_list()[1:])

    def gather_table(array, dtype):
        table = tf.gather(array.stack(), table_rows, axis=1)
        return tf.TensorArray(dtype, size=max_length,
                              element_shape=table_rows.shape).unstack(table)

    gathered = {"step": loop["step"]}
    for key, value in loop.items():
        if key in ("step_ids", "parent_ids"):
            gathered[key] = gather_table(value, tf.int32)
        elif key == "attention":
            gathered[key] = tf.TensorArray(tf.float32, size=max_length)
            if returns_attention:
                gathered[key] = gathered[key].unstack(
                    tf.gather(value.stack(), table_rows, axis=1))
        elif key == "state":
            gathered[key] = tf.nest.map_structure(gather_per_row, value)
        elif key == "unordered_state":
            gathered[key] = tf.nest.map_structure(
                lambda tensor: gather_rows_or_examples(tensor, examples, rows, old_rows),
                value)
        elif key != "step":
            gathered[key] = gather_per_row(value)
    return gathered
