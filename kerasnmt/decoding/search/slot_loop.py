"""The slot loop (`num_slots`): the examples stream through a fixed batch of slots.

A slot decodes one example at a time; when it is done (as with `compact_batch`), its
results stay in the output tables at the example's place and the slot takes the next
example (its hypotheses, step and `initial_state` rows reset). Once no example waits and
at most `ceil(num_slots / 4)` slots are busy, a second loop goes on with that many slots.
The search ends when every example is done.

Examples:
    >>> import tensorflow as tf
    >>> from kerasnmt.decoding.search import Greedy
    >>> def step_fn(ids, step, state, examples):  # example e: word 2 e + 1 times, then </s>
    ...     return tf.one_hot(tf.where(step <= examples, 2, 0), 3) * 5.0, None, state
    >>> loop = SlotLoop(Greedy(), step_fn, tf.constant([1, 1, 1]), end_id=tf.constant(0),
    ...                 max_length=4)
    >>> outputs = loop.search(num_slots=2)
    >>> outputs["lengths"].numpy().tolist()
    [[1], [2], [3]]
"""

import tensorflow as tf

from kerasnmt.decoding.search.hypotheses import (
    example_rows,
    finalize,
    gather_rows_or_examples,
    steps_first,
)
from kerasnmt.decoding.search.step_function import call_step_fn


# The loop's values that are not per slot (or per row of a slot): its counters and output
# tables. Every other value (the rule's hypotheses, the state) follows its slot.
_NOT_PER_SLOT = ("iteration", "next_example", "step_ids", "parent_ids", "final_scores",
                 "final_log_probs", "attention")


class SlotLoop:
    """Searches by `rule` over `step_fn`, the examples of `start_ids` streamed through
    slots (see `BeamSampler`'s `num_slots`).

    Args:
        rule: the `SearchRule`.
        step_fn: `step_fn(ids, step, state, examples) -> (logits, attention, new_state)`.
        start_ids: int32 `[B]`, the first input token of each example.
        end_id: the `</s>` id, an int32 scalar.
        max_length: the maximum number of steps of an example.
        initial_state: `None`, or the state of each example (leading dimension `B`).
        attention_size: `S`, the length of the attention vectors, or `None` (no
            alignment recorded).
        num_examples: decode only the first `num_examples` examples (an int32 scalar).
    """

    def __init__(self, rule, step_fn, start_ids, end_id, max_length, initial_state=None,
                 attention_size=None, num_examples=None):
        self.rule = rule
        self.step_fn = step_fn
        self.start_ids = start_ids
        self.end_id = end_id
        self.max_length = max_length
        self.attention_size = attention_size
        self.total = (start_ids.shape[0] if start_ids.shape[0] is not None
                      else tf.shape(start_ids)[0])
        self.num_examples = self.total if num_examples is None else tf.minimum(
            tf.cast(num_examples, tf.int32), self.total
        )
        self.initial_state = None if initial_state is None else tf.nest.map_structure(
            tf.convert_to_tensor, initial_state)
        self.seed = rule.base_seed()
        self.returns_attention = []  # filled when the first step runs (eager) or is traced

    def search(self, num_slots, unordered_state=None):
        """The search's outputs (see `BeamSampler`); `unordered_state` belongs to the
        slots (leading dimension `num_slots` or `num_slots * beam_size`)."""
        loop = self._first_loop(num_slots, unordered_state)
        slot_counts = sorted({num_slots, -(-num_slots // 4)}, reverse=True)
        for index, slots in enumerate(slot_counts):
            if index:
                loop = _keep_busy_slots(loop, slots, self.rule.beam_size)
            later_slots = slot_counts[index + 1] if index + 1 < len(slot_counts) else 0

            def cond(loop, later_slots=later_slots):
                busy = tf.reduce_sum(tf.cast(loop["active"], tf.int32))
                # Fewer slots once no example is left to take and few are busy.
                waiting = loop["next_example"] < self.num_examples
                return tf.logical_and(busy > 0, tf.logical_or(waiting, busy > later_slots))

            (loop,) = tf.while_loop(
                cond, self._body, (loop,), maximum_iterations=self.max_length * self.total,
                parallel_iterations=1,
            )
        kept = self.total * self.rule.table_slots
        attention = None
        if "attention" in loop and self.returns_attention == [True]:
            attention = steps_first(loop["attention"][:kept])
        return finalize(
            self.rule, steps_first(loop["step_ids"][:kept]),
            steps_first(loop["parent_ids"][:kept]), self.max_length,
            loop["final_scores"][:kept], loop["final_log_probs"][:kept], attention,
            self.end_id, self.total,
        )

    def _first_loop(self, num_slots, unordered_state):
        """The loop before the first step: slot `i` decodes example `i`. The output tables
        hold example `e`'s slots at rows `e * table_slots + k` (`rule.table_slots`); an idle
        slot writes to the rows of a spare example `B`, dropped at the end."""
        beam_size, max_length, total = self.rule.beam_size, self.max_length, self.total
        table_slots = self.rule.table_slots
        table_rows = (total + 1) * table_slots
        examples = tf.minimum(tf.range(num_slots), total - 1)
        active = tf.range(num_slots) < self.num_examples
        loop = self._restart(examples)
        loop.update(
            iteration=tf.constant(0, tf.int32),
            steps=tf.zeros([num_slots], tf.int32),
            examples=examples,
            active=active,
            next_example=tf.constant(num_slots, tf.int32),
            finished=tf.repeat(tf.logical_not(active), beam_size),
            step_ids=tf.fill([table_rows, max_length], self.end_id),
            parent_ids=tf.reshape(
                tf.tile(tf.range(table_slots)[tf.newaxis, :, tf.newaxis],
                        [total + 1, 1, max_length]),
                [table_rows, max_length]),
            final_scores=tf.zeros([table_rows]),
            final_log_probs=tf.zeros([table_rows]),
        )
        if unordered_state is not None:
            loop["unordered_state"] = tf.nest.map_structure(tf.convert_to_tensor,
                                                            unordered_state)
        if self.attention_size is not None:
            loop["attention"] = tf.zeros([table_rows, max_length, self.attention_size])
        return loop

    def _restart(self, examples):
        """The first hypotheses of `examples` (int32 `[slots]`), with their state."""
        beam_size = self.rule.beam_size
        hypotheses = self.rule.first_hypotheses(
            _tiled_examples(self.start_ids, examples, beam_size), examples.shape[0],
            self.attention_size,
        )
        if self.initial_state is not None:
            hypotheses["state"] = tf.nest.map_structure(
                lambda tensor: _tiled_examples(tensor, examples, beam_size),
                self.initial_state)
        return hypotheses

    def _body(self, loop):
        """One step of every slot, recorded at each slot's example and step; done slots
        then take the next examples."""
        beam_size = self.rule.beam_size
        logits, attention, new_state, new_unordered_state = call_step_fn(
            lambda state: self.step_fn(loop["ids"], loop["steps"], state, loop["examples"]),
            loop, loop["ids"].shape[0], self.attention_size, self.returns_attention,
            self.rule.coverage_penalty != 0,
        )
        row_steps = tf.repeat(loop["steps"], beam_size)
        hypotheses, word_ids, beam_ids, attention = self.rule.advance(
            loop, logits, attention, self.end_id, row_steps, new_state, self.seed,
            loop["iteration"],
        )
        table_slots = self.rule.table_slots
        written = example_rows(tf.where(loop["active"], loop["examples"], self.total),
                               table_slots)
        at_step = tf.stack([written, tf.repeat(loop["steps"], table_slots)], axis=1)
        final_scores, final_log_probs = self.rule.final_values(hypotheses)
        next_loop = {
            "iteration": loop["iteration"] + 1,
            "step_ids": tf.tensor_scatter_nd_update(loop["step_ids"], at_step, word_ids),
            "parent_ids": tf.tensor_scatter_nd_update(loop["parent_ids"], at_step, beam_ids),
            "final_scores": tf.tensor_scatter_nd_update(
                loop["final_scores"], written[:, tf.newaxis], final_scores),
            "final_log_probs": tf.tensor_scatter_nd_update(
                loop["final_log_probs"], written[:, tf.newaxis], final_log_probs),
        }
        if "attention" in loop:
            next_loop["attention"] = loop["attention"] if attention is None else (
                tf.tensor_scatter_nd_update(loop["attention"], at_step, attention))
        if "unordered_state" in loop:
            next_loop["unordered_state"] = new_unordered_state
        next_loop.update(self._take_next_examples(loop, hypotheses))
        return (next_loop,)

    def _take_next_examples(self, loop, hypotheses):
        """The slots' hypotheses and examples after a step: done slots take the next
        examples; with none left, they become idle (finished rows)."""
        beam_size = self.rule.beam_size
        steps = loop["steps"] + 1
        done = tf.logical_and(loop["active"], tf.logical_or(
            self.rule.examples_done(hypotheses), steps >= self.max_length))
        order = tf.cumsum(tf.cast(done, tf.int32), exclusive=True)
        new_examples = loop["next_example"] + order
        refilled = tf.logical_and(done, new_examples < self.num_examples)
        examples = tf.where(refilled, new_examples, loop["examples"])
        refilled_rows = tf.repeat(refilled, beam_size)
        idle_rows = tf.repeat(tf.logical_and(done, tf.logical_not(refilled)), beam_size)
        restart = self._restart(examples)
        next_loop = {
            key: tf.nest.map_structure(
                lambda new, first: tf.where(_per_row(refilled_rows, new), first, new),
                value, restart[key],
            )
            for key, value in hypotheses.items()
        }
        next_loop["finished"] = tf.logical_or(next_loop["finished"], idle_rows)
        active = tf.logical_and(loop["active"], tf.logical_or(tf.logical_not(done), refilled))
        next_loop.update(
            steps=tf.where(tf.logical_and(active, tf.logical_not(refilled)), steps, 0),
            examples=examples,
            active=active,
            next_example=loop["next_example"] + tf.reduce_sum(tf.cast(done, tf.int32)),
        )
        return next_loop


def _tiled_examples(tensor, examples, beam_size):
    """The rows of `examples` from a per-example `tensor`."""
    return tf.repeat(tf.gather(tensor, examples), beam_size, axis=0)


def _per_row(mask, tensor):
    """A `[rows]` mask broadcast over a tensor's dimensions."""
    return tf.reshape(mask, [-1] + [1] * (tensor.shape.rank - 1))


def _keep_busy_slots(loop, num_slots, beam_size):
    """The slot loop with `num_slots` of its slots, the busy ones first (as many as fit:
    the caller ensures they all do), each with its rows of the state and unordered
    state; the output tables are the examples', kept whole."""
    slots = tf.argsort(tf.cast(loop["active"], tf.int32), direction="DESCENDING",
                       stable=True)[:num_slots]
    rows = example_rows(slots, beam_size)
    old_rows = loop["ids"].shape[0]
    return {
        key: value if key in _NOT_PER_SLOT else tf.nest.map_structure(
            lambda tensor: gather_rows_or_examples(tensor, slots, rows, old_rows), value)
        for key, value in loop.items()
    }
