"""The plain loop: the whole batch decodes until every example is done.

As in OpenNMT-tf's `dynamic_decode`, each step (`rule.advance`) records its tokens and
parent slots (and attention) in tables `[T, rows]`, from which the paths are rebuilt
once, at the end.

Examples:
    >>> import tensorflow as tf
    >>> from kerasnmt.decoding.search import Greedy
    >>> def step_fn(ids, step, state):  # prefers word 2 twice, then </s> (0)
    ...     return tf.one_hot([tf.where(step < 2, 2, 0)], 3) * 5.0, None, state
    >>> loop = PlainLoop(Greedy(), step_fn, end_id=tf.constant(0), max_length=4)
    >>> outputs = loop.search(start_ids=tf.constant([1]))
    >>> outputs["ids"].numpy().tolist(), outputs["lengths"].numpy().tolist()
    ([[[2, 2, 0, 0]]], [[2]])
"""

import tensorflow as tf

from kerasnmt.decoding.search.hypotheses import finalize
from kerasnmt.decoding.search.step_function import call_step_fn, tile_state

# The loop's tables, written at each step (TensorArrays), beside its hypotheses.
TABLES = ("step_ids", "parent_ids", "attention")


def at_first_step(loop):
    """Whether the loop is at its first step, which every search takes: tables whose rows
    are unknown when tracing cannot be stacked before a step has written them (in a batch
    of no example, or a compacted first loop of one)."""
    return tf.equal(loop["step"], 0)


class PlainLoop:
    """Searches by `rule` over `step_fn` (see `BeamSampler`), the batch decoded whole.

    Args:
        rule: the `SearchRule`.
        step_fn: `step_fn(ids, step, state) -> (logits, attention, new_state)`.
        end_id: the `</s>` id, an int32 scalar.
        max_length: the maximum number of steps.
        attention_size: `S`, the length of the attention vectors, or `None`.
        stand_still_when_done: a done example stands still: its hypotheses stay in their
            slots, emit `</s>` and keep their scores, as if its decoding had stopped.
    """

    def __init__(self, rule, step_fn, end_id, max_length, attention_size=None,
                 stand_still_when_done=False):
        self.rule = rule
        self.step_fn = step_fn
        self.end_id = end_id
        self.max_length = max_length
        self.attention_size = attention_size
        self.stand_still_when_done = stand_still_when_done
        self.seed = rule.base_seed()
        self.returns_attention = []  # filled when the first step runs (eager) or is traced

    def search(self, start_ids, initial_state=None, unordered_state=None):
        """The search's outputs (see `BeamSampler`) for `start_ids` `[B]`."""
        def cond(loop):
            return tf.logical_or(at_first_step(loop), tf.reduce_any(
                tf.logical_not(self.rule.examples_done(loop))))

        (loop,) = tf.while_loop(
            cond, self.body, (self.first_loop(start_ids, initial_state, unordered_state),),
            maximum_iterations=self.max_length, parallel_iterations=1,
        )
        attention = loop["attention"].stack() if self.returns_attention == [True] else None
        return finalize(self.rule, loop["step_ids"].stack(), loop["parent_ids"].stack(),
                        loop["step"], *self.rule.final_values(loop), attention,
                        self.end_id, tf.shape(start_ids)[0])

    def first_loop(self, start_ids, initial_state, unordered_state):
        """The loop's value before the first step: the first hypotheses of `start_ids`,
        their state tiled, the unordered state as given, and empty tables. Every step,
        the first included, is taken in the loop, so that `step_fn` is traced and
        compiled once a loop: a beam search's first step decodes every hypothesis,
        although those of an example are all the same, because one step of `beam_size`
        rows costs much less than a second compilation of the decoder step."""
        beam_size, max_length = self.rule.beam_size, self.max_length
        static_rows = (None if start_ids.shape[0] is None
                       else start_ids.shape[0] * self.rule.table_slots)
        loop = self.rule.first_hypotheses(tf.repeat(start_ids, beam_size),
                                          tf.shape(start_ids)[0], self.attention_size)
        loop.update(
            step=tf.constant(0, tf.int32),
            step_ids=tf.TensorArray(tf.int32, size=max_length, element_shape=[static_rows]),
            parent_ids=tf.TensorArray(tf.int32, size=max_length, element_shape=[static_rows]),
            attention=tf.TensorArray(tf.float32, size=max_length),
        )
        if initial_state is not None:
            loop["state"] = tf.nest.map_structure(
                lambda tensor: tile_state(tensor, start_ids.shape[0], beam_size),
                initial_state,
            )
        if unordered_state is not None:
            loop["unordered_state"] = tf.nest.map_structure(tf.convert_to_tensor,
                                                            unordered_state)
        return loop

    def body(self, loop, advance=None):
        """One step of OpenNMT-tf's `dynamic_decode` with `BeamSearch.step`, recorded in
        the tables; `advance`: `self.advance`, or a traced copy of it (`CompactingLoop`)."""
        hypotheses = {key: value for key, value in loop.items() if key not in TABLES}
        next_loop, word_ids, beam_ids, attention = (advance or self.advance)(hypotheses)
        step = loop["step"]
        next_loop.update(
            step=step + 1,
            step_ids=loop["step_ids"].write(step, word_ids),
            parent_ids=loop["parent_ids"].write(step, beam_ids),
            attention=loop["attention"] if attention is None
            else loop["attention"].write(step, attention),
        )
        return (next_loop,)

    def advance(self, hypotheses):
        """The step of `body` without its tables: `(next_hypotheses, word_ids, beam_ids,
        attention)` from the loop's value without `TABLES` (`next_hypotheses` without the
        step)."""
        logits, attention, new_state, new_unordered_state = call_step_fn(
            lambda state: self.step_fn(hypotheses["ids"], hypotheses["step"], state),
            hypotheses, hypotheses["ids"].shape[0], self.attention_size,
            self.returns_attention, self.rule.coverage_penalty != 0,
        )
        step = hypotheses["step"]
        stand_still = None
        if self.stand_still_when_done:
            stand_still = tf.repeat(self.rule.examples_done(hypotheses), self.rule.beam_size)
        next_hypotheses, word_ids, beam_ids, attention = self.rule.advance(
            hypotheses, logits, attention, self.end_id, step, new_state, self.seed, step,
            stand_still,
        )
        if "unordered_state" in hypotheses:
            next_hypotheses["unordered_state"] = new_unordered_state
        return next_hypotheses, word_ids, beam_ids, attention
