"""Beam search, greedy search and sampling over any step function, as a Keras layer."""

import math
import numbers

import keras
import tensorflow as tf

from kerasnmt.layers.gather_tree import gather_tree

# OpenNMT-tf adds this to the </s> logit while `step < min_length`.
END_PENALTY_BEFORE_MIN_LENGTH = -1e7
_INT32_RANGE = (-(2**31), 2**31)


@keras.saving.register_keras_serializable(package="kerasnmt")
class BeamSampler(keras.layers.Layer):
    """Decodes token sequences from a step function by beam search, greedy search or sampling.

    The search is OpenNMT-tf 2.x's `BeamSearch` (or `GreedySearch` when `beam_size=1`) and
    `BestSampler`/`RandomSampler`, step by step: each example keeps `beam_size` hypotheses,
    the first starting with cumulative log-probability 0 and the others with `-inf`; at each
    step the model's logits go through `log_softmax` (float32), finished hypotheses are forced
    to emit `</s>` with probability 1 (so they keep their log-probability), and the
    `beam_size * V` candidates of each example are ranked by

        score = (cum_log_prob + log_prob) / ((5 + length) / 6) ** length_penalty
                + coverage_penalty * sum_s log(min(accumulated_attention_s, 1))

    where `length` counts the tokens so far including the new one (it stops growing once a
    hypothesis has emitted `</s>`), accumulated attention that is still 0 counts as 1, and the
    coverage term applies only to hypotheses that finished at an earlier step (Wu et al.,
    2016). With `top_k=1` the best `beam_size` candidates are kept; otherwise `beam_size`
    candidates are drawn (with replacement) from the softmax of the best `top_k` scores (all
    of them when `top_k=0`) divided by `temperature`. Greedy decoding ranks and samples the
    plain log-probabilities. The loop stops when every hypothesis has emitted `</s>` or after
    `max_length` steps; `</s>` gets a -1e7 logit penalty during the first `min_length`
    steps. The paths are rebuilt at the end from the table of parent beams
    (`kerasnmt.layers.gather_tree.gather_tree`), so no step does work that grows with
    `max_length`; and since a row's scores rise with its logits, each step scores only
    each row's best logits (the vocabulary itself is only read to normalize).

    Three places differ from OpenNMT-tf's code, all bookkeeping fixes that change no
    ranking rule: a hypothesis carries the total of the candidate it was chosen as, so a
    finished one that moves to another slot keeps its own log-probability (OpenNMT-tf keeps
    the slot's previous value, that of another hypothesis: OpenNMT-tf issue #432; the same
    line revives a `-inf` candidate as a copy of a finished hypothesis when the beam has
    more slots than finite candidates); paths are rebuilt from the last step decoded (for
    each example OpenNMT-tf starts where its last hypothesis finished, which pairs ids with
    another slot's log-probability when finished hypotheses swapped slots later); and a
    token's alignment is the attention of the row that produced it, its parent's
    (OpenNMT-tf reads the slot's own row, another hypothesis's after a reorder). Sampled
    hypotheses are returned best first (OpenNMT-tf leaves them in drawing order).

    OpenNMT-tf's scores also have two known inconsistencies, kept by default: once finished,
    a hypothesis is ranked with a length one larger than its own (`length + 1`), and its
    coverage penalty starts one step after it emitted `</s>`, so at that step it competes
    without it. `freeze_finished_scores=True` fixes both: a hypothesis is scored as complete
    (its own length, coverage applied) from the step it emits `</s>` on, and its score then
    never changes. As in OpenNMT-tf, finished hypotheses stay in the beam and compete with
    unfinished ones for its slots.

    As in OpenNMT-tf, the loop runs until every hypothesis of every example has finished,
    so one hypothesis that repeats itself keeps a whole batch decoding until `max_length`.
    `early_exit=True` stops as soon as the `n_best` best-scored hypotheses of every example
    have finished. Without penalties (`length_penalty=0`, `coverage_penalty=0`) and with
    `top_k=1` the results are the same (an unfinished hypothesis only loses score, so it
    can never overtake them); with a length penalty a longer hypothesis could still have
    overtaken them, so the results may differ (CTranslate2 stops similarly, when
    `beam_size` hypotheses have finished).

    Also as in OpenNMT-tf, an example whose hypotheses have all finished goes on through
    the loop with the rest of its batch (its finished hypotheses re-ranked with
    `length + 1`), so its result can depend on the other sentences of the batch.
    `compact_batch=True` makes every result the one of the example decoded alone (an
    example stops as soon as it is done, its hypotheses frozen in place), and shrinks the
    batch as examples finish, as CTranslate2 and fairseq do: one loop runs at `B` examples
    while more than `ceil(B / 4)` are unfinished, then the unfinished examples (and done
    ones to fill it) are gathered into a batch of `ceil(B / 4)`, which runs while more than
    `ceil(B / 16)` are unfinished, and then a batch of `ceil(B / 16)` finishes the search
    (32 -> 8 -> 2). A batch in which one sentence decodes much longer than the others then
    spends its last steps on a few rows instead of all of them. Under XLA, each loop has
    static shapes (`B` need not be known when tracing: XLA compiles per input shape).

    Streaming (continuous batching, as inference servers do): called with `num_slots`,
    the `B` examples stream through a fixed batch of `num_slots` slots. A slot decodes
    one example until it is done (as with `compact_batch`: each result is the one of its
    example decoded alone), leaves its results in the output tables, and takes the next
    example at the next step, so every step decodes `num_slots` examples until the last
    ones, instead of a batch waiting for its longest output; once no example waits and at
    most a quarter of the slots are busy, the busy ones finish in `ceil(num_slots / 4)`
    slots (a second loop, as `compact_batch` shrinks a batch). `step_fn` then gets the step
    of each slot and the example each slot decodes. Sampling draws differ from those of a
    batch (the seed is folded with the loop's iteration).

    The layer has no weights. It runs eagerly, inside `tf.function` and inside
    `tf.function(jit_compile=True)`: all loop variables keep static shapes, so `step_fn`
    must return a state with the same shapes as the one it receives (preallocated caches).
    Per-example tensors that do not change during decoding (encoder outputs) are best
    captured by `step_fn` from its closure, tiled with `tf.repeat(x, beam_size, axis=0)`,
    rather than passed in the state, which is reordered at every step. Large tensors that
    change (attention caches) can go in `unordered_state`, which is never reordered:
    `step_fn` then follows each hypothesis' history itself (e.g. with a small table of the
    beam slots its cache entries were written by, kept in the reordered state), instead of
    the sampler copying them at every step.

    Args:
        beam_size: hypotheses kept per example; 1 is greedy search (or plain sampling).
        length_penalty: the exponent `alpha` of the length penalty; 0 disables it.
        coverage_penalty: the weight `beta` of the coverage penalty; 0 disables it. It needs
            `step_fn` to return attention and `attention_size` at call time.
        top_k: 1 for deterministic search; `k > 1` samples among the `k` best candidates;
            0 samples among all candidates.
        temperature: the scores are divided by it before sampling (`top_k != 1`).
        n_best: hypotheses returned per example, at most `beam_size`.
        max_length: the maximum number of decoding steps (tokens, `</s>` included).
        min_length: `</s>` is forbidden during the first `min_length` steps.
        seed: when an int, sampling is reproducible (stateless random ops, each step's
            seed folded in from it; also under XLA, whose random numbers differ from the
            non-XLA ones). When `None`, each call draws a new seed.
        freeze_finished_scores: score a hypothesis as complete from the step it emits
            `</s>` (see above) instead of OpenNMT-tf's `length + 1` and one-step-late
            coverage penalty.
        early_exit: stop when the `n_best` best hypotheses of every example have finished
            (see above) instead of all of them.
        compact_batch: stop each example as soon as it is done and decode the unfinished
            ones in smaller batches (see above).
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        step_fn: a callable `step_fn(ids, step, state) -> (logits, attention, new_state)`
            with `ids` int32 `[B * beam_size]` (the last token of each hypothesis; row
            `b * beam_size + k` is hypothesis `k` of example `b`), `step` an int32 scalar
            (0 for the first token after `start_ids`), `state` the current state;
            returning float `logits` `[B * beam_size, V]`, float `attention`
            `[B * beam_size, S]` or `None`, and `new_state`, with the structure and shapes
            of `state` (ignored when `initial_state` is `None`).
        start_ids: int32 `[B]`, the first input token of each example (usually `<s>`).
        end_id: the `</s>` id, a Python int or an int32 scalar tensor.
        initial_state: `None`, or a nested structure of tensors whose leading dimension is
            `B`; it is tiled to `B * beam_size` rows and reordered by parent beam after each
            step.
        attention_size: `S`, the length of the attention vectors; required by the coverage
            penalty.
        unordered_state: `None`, or a nested structure of tensors with leading dimension
            `B * beam_size` (rows) or `B` (examples), carried from step to step as `step_fn`
            returns it: neither tiled nor reordered (with `compact_batch`, gathered with
            the examples that stay in the batch: per row when its leading dimension is
            statically `B * beam_size`, else per example). When given, `step_fn` receives
            `(state, unordered_state)` as its state (`state` is `{}` without
            `initial_state`) and returns the same pair.
        num_slots: stream the `B` examples through this many slots (see above).
            `step_fn` is then called as `step_fn(ids, step, state, examples)`: `ids`
            `[num_slots * beam_size]`, `step` int32 `[num_slots]` (each slot's step in its
            current example, from 0), `examples` int32 `[num_slots]` (the example each slot
            decodes; an idle slot's rows are finished and their outputs dropped); the last
            steps pass `ceil(num_slots / 4)` slots. The reordered state (`initial_state`,
            leading dimension `B`) is tiled into a slot's rows when it takes an example;
            `unordered_state` belongs to the slots (leading dimension `num_slots` or
            `num_slots * beam_size`), never reset, and follows its slots into the smaller
            batch. Alignments are recorded only when `attention_size` is given.
        num_examples: with `num_slots`, decode only the first `num_examples` examples
            (an int32 scalar, e.g. when `B` is padded to a fixed size); the others get
            empty results.

    Returns:
        A dict of tensors, hypotheses best first:
        `"ids"`: int32 `[B, n_best, max_length]`, the tokens after `start_ids`, `</s>`
        excluded, padded with 0; `"lengths"`: int32 `[B, n_best]`; `"log_probs"`: float32
        `[B, n_best]`, the cumulative log-probabilities (with `</s>`, without penalties);
        `"scores"`: float32 `[B, n_best]`, the penalized scores of the last step, used for
        ranking; and, when `step_fn` returns attention, `"alignment"`: float32
        `[B, n_best, max_length, S]`, the attention of each token (zeros on padding).

    Examples:
        >>> import numpy as np
        >>> next_token_probs = np.array([     # rows: last token; columns: next token
        ...     [0.1, 0.1, 0.2, 0.3, 0.3],     # 0
        ...     [0.1, 0.1, 0.1, 0.3, 0.4],     # 1 (<s>)
        ...     [0.1, 0.1, 0.6, 0.1, 0.1],     # 2 (</s>)
        ...     [0.1, 0.1, 0.7, 0.05, 0.05],   # 3
        ...     [0.1, 0.1, 0.1, 0.6, 0.1],     # 4
        ... ], dtype="float32")
        >>> def step_fn(ids, step, state):
        ...     return tf.gather(np.log(next_token_probs), ids), None, state
        >>> sampler = BeamSampler(beam_size=2, n_best=2, max_length=5)
        >>> outputs = sampler(step_fn, start_ids=tf.constant([1]), end_id=2)
        >>> outputs["ids"].numpy().tolist()
        [[[3, 0, 0, 0, 0], [4, 3, 0, 0, 0]]]
        >>> outputs["lengths"].numpy().tolist()
        [[1, 2]]
        >>> np.exp(outputs["log_probs"].numpy().astype(float)).round(3).tolist()
        [[0.21, 0.168]]

    Reference:
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144): length and coverage
          penalties.
        - [OpenNMT-tf `opennmt/utils/decoding.py`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/utils/decoding.py)
    """

    def __init__(
        self,
        beam_size=4,
        length_penalty=0.0,
        coverage_penalty=0.0,
        top_k=1,
        temperature=1.0,
        n_best=1,
        max_length=250,
        min_length=0,
        seed=None,
        freeze_finished_scores=False,
        early_exit=False,
        compact_batch=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        beam_size = _check_int("beam_size", beam_size, minimum=1)
        n_best = _check_int("n_best", n_best, minimum=1)
        if n_best > beam_size:
            raise ValueError(
                f"BeamSampler: n_best ({n_best}) must be at most beam_size ({beam_size})"
            )
        top_k = _check_int("top_k", top_k, minimum=0)
        max_length = _check_int("max_length", max_length, minimum=1)
        min_length = _check_int("min_length", min_length, minimum=0)
        if min_length > max_length:
            raise ValueError(
                f"BeamSampler: min_length ({min_length}) must be at most max_length "
                f"({max_length})"
            )
        if not temperature > 0:
            raise ValueError(f"BeamSampler: temperature must be > 0, got {temperature!r}")
        if seed is not None:
            seed = _check_int("seed", seed, minimum=_INT32_RANGE[0])
            if seed >= _INT32_RANGE[1]:
                raise ValueError(f"BeamSampler: seed must fit in int32, got {seed}")
        self.beam_size = beam_size
        self.length_penalty = float(length_penalty)
        self.coverage_penalty = float(coverage_penalty)
        self.top_k = top_k
        self.temperature = float(temperature)
        self.n_best = n_best
        self.max_length = max_length
        self.min_length = min_length
        self.seed = seed
        self.freeze_finished_scores = bool(freeze_finished_scores)
        self.early_exit = bool(early_exit)
        self.compact_batch = bool(compact_batch)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def call(self, step_fn, start_ids, end_id, initial_state=None, attention_size=None,
             unordered_state=None, num_slots=None, num_examples=None):
        start_ids = tf.convert_to_tensor(start_ids)
        if start_ids.shape.rank != 1 or not start_ids.dtype.is_integer:
            raise ValueError(
                f"BeamSampler: start_ids must be a 1-D integer tensor [B], got "
                f"{start_ids.dtype.name} {start_ids.shape}"
            )
        end_id = tf.convert_to_tensor(end_id, tf.int32)
        if end_id.shape.rank != 0:
            raise ValueError(f"BeamSampler: end_id must be a scalar, got shape {end_id.shape}")
        if self.coverage_penalty != 0 and attention_size is None:
            raise ValueError(
                "BeamSampler: coverage_penalty needs attention_size (the length S of the "
                "attention vectors step_fn returns)"
            )
        start_ids = tf.cast(start_ids, tf.int32)
        if num_slots is not None and start_ids.shape[0] == 0:
            outputs = {"ids": tf.zeros([0, self.n_best, self.max_length], tf.int32),
                       "lengths": tf.zeros([0, self.n_best], tf.int32),
                       "log_probs": tf.zeros([0, self.n_best]),
                       "scores": tf.zeros([0, self.n_best])}
            if attention_size is not None:
                outputs["alignment"] = tf.zeros([0, self.n_best, self.max_length,
                                                 attention_size])
            return outputs
        if num_slots is not None:
            return self._search_in_slots(
                step_fn, start_ids, end_id, initial_state, attention_size, unordered_state,
                _check_int("num_slots", num_slots, minimum=1), num_examples,
            )
        batch_size = tf.shape(start_ids)[0]
        num_rows = batch_size * self.beam_size
        static_rows = None if start_ids.shape[0] is None else start_ids.shape[0] * self.beam_size
        initial_log_probs = tf.tile(
            [0.0] + [float("-inf")] * (self.beam_size - 1), [batch_size]
        )
        loop = {
            "step": tf.constant(0, tf.int32),
            "ids": tf.repeat(start_ids, self.beam_size),
            "finished": tf.zeros([num_rows], tf.bool),
            "log_probs": initial_log_probs,
            "scores": initial_log_probs,
            "lengths": tf.zeros([num_rows], tf.int32),
            "step_ids": tf.TensorArray(
                tf.int32, size=self.max_length, element_shape=[static_rows]
            ),
            "parent_ids": tf.TensorArray(
                tf.int32, size=self.max_length, element_shape=[static_rows]
            ),
            "attention": tf.TensorArray(tf.float32, size=self.max_length),
        }
        if initial_state is not None:
            loop["state"] = tf.nest.map_structure(
                lambda tensor: self._tile(tensor, start_ids.shape[0]), initial_state
            )
        if self.coverage_penalty != 0:
            loop["accumulated_attention"] = tf.zeros([num_rows, attention_size])
        if unordered_state is not None:
            loop["unordered_state"] = tf.nest.map_structure(tf.convert_to_tensor, unordered_state)
        seed = self._base_seed() if self.top_k != 1 else None
        returns_attention = []  # filled when the first step runs (eager) or is traced

        def body(loop):
            logits, attention, new_state, new_unordered_state = self._call_step_fn(
                lambda state: step_fn(loop["ids"], loop["step"], state), loop,
                loop["ids"].shape[0], attention_size, returns_attention,
            )
            next_loop = self._step(loop, logits, attention, new_state, end_id, seed)
            if "unordered_state" in loop:
                next_loop["unordered_state"] = new_unordered_state
            return (next_loop,)

        batch_sizes = self._compacted_batch_sizes(start_ids.shape[0], batch_size)
        if len(batch_sizes) > 1:
            return self._search_compacting(loop, body, batch_sizes, end_id, returns_attention)

        def cond(loop):
            return tf.reduce_any(tf.logical_not(self._examples_done(loop)))

        (loop,) = tf.while_loop(
            cond, body, (loop,), maximum_iterations=self.max_length, parallel_iterations=1
        )
        attention = loop["attention"].stack() if returns_attention == [True] else None
        return self._finalize(loop["step_ids"].stack(), loop["parent_ids"].stack(), loop["step"],
                              loop["scores"], loop["log_probs"], attention, end_id, batch_size)

    def _search_in_slots(self, step_fn, start_ids, end_id, initial_state, attention_size,
                         unordered_state, num_slots, num_examples):
        """The search with `num_slots`: the examples stream through a fixed batch of slots.

        A slot decodes one example at a time; when it is done (as with `compact_batch`),
        its results stay in the output tables at the example's place and the slot takes
        the next example (its hypotheses, step and `initial_state` rows reset). Once no
        example waits and at most `ceil(num_slots / 4)` slots are busy, a second loop goes
        on with that many slots (`_keep_busy_slots`). The search ends when every example
        is done.
        """
        beam_size, max_length = self.beam_size, self.max_length
        total = start_ids.shape[0] if start_ids.shape[0] is not None else tf.shape(start_ids)[0]
        num_examples = total if num_examples is None else tf.minimum(
            tf.cast(num_examples, tf.int32), total
        )
        num_rows = num_slots * beam_size
        # Table rows: example e's hypotheses at e * beam_size + k; an idle slot writes to
        # the rows of a spare example `total`, dropped at the end.
        table_rows = (total + 1) * beam_size

        def tiled_examples(tensor, examples):
            return tf.repeat(tf.gather(tensor, examples), beam_size, axis=0)

        def per_row(mask, tensor):  # a [rows] mask broadcast over a tensor's dimensions
            return tf.reshape(mask, [-1] + [1] * (tensor.shape.rank - 1))

        examples = tf.minimum(tf.range(num_slots), total - 1)
        active = tf.range(num_slots) < num_examples
        loop = {
            "iteration": tf.constant(0, tf.int32),
            "steps": tf.zeros([num_slots], tf.int32),
            "examples": examples,
            "active": active,
            "next_example": tf.constant(num_slots, tf.int32),
            "ids": tiled_examples(start_ids, examples),
            "finished": tf.repeat(tf.logical_not(active), beam_size),
            "log_probs": _first_log_probs(num_slots, beam_size),
            "scores": _first_log_probs(num_slots, beam_size),
            "lengths": tf.zeros([num_rows], tf.int32),
            "step_ids": tf.fill([table_rows, max_length], end_id),
            "parent_ids": tf.tile(tf.range(beam_size)[tf.newaxis, :, tf.newaxis],
                                  [total + 1, 1, max_length]),
            "final_scores": tf.zeros([table_rows]),
            "final_log_probs": tf.zeros([table_rows]),
        }
        loop["parent_ids"] = tf.reshape(loop["parent_ids"], [table_rows, max_length])
        if initial_state is not None:
            initial_state = tf.nest.map_structure(tf.convert_to_tensor, initial_state)
            loop["state"] = tf.nest.map_structure(
                lambda tensor: tiled_examples(tensor, examples), initial_state
            )
        if self.coverage_penalty != 0:
            loop["accumulated_attention"] = tf.zeros([num_rows, attention_size])
        if unordered_state is not None:
            loop["unordered_state"] = tf.nest.map_structure(tf.convert_to_tensor, unordered_state)
        if attention_size is not None:
            loop["attention"] = tf.zeros([table_rows, max_length, attention_size])
        seed = self._base_seed() if self.top_k != 1 else None
        returns_attention = []  # filled when the first step runs (eager) or is traced

        def body(loop):
            num_rows = loop["ids"].shape[0]
            first_log_probs = _first_log_probs(num_rows // beam_size, beam_size)
            logits, attention, new_state, new_unordered_state = self._call_step_fn(
                lambda state: step_fn(loop["ids"], loop["steps"], state, loop["examples"]),
                loop, num_rows, attention_size, returns_attention,
            )
            row_steps = tf.repeat(loop["steps"], beam_size)
            hypotheses, word_ids, beam_ids, attention = self._advance(
                loop, logits, attention, new_state, end_id, seed, row_steps,
                loop["iteration"], stand_still=None,
            )
            # Record the step at each row's example and step.
            written = _example_rows(tf.where(loop["active"], loop["examples"], total),
                                    beam_size)
            at_step = tf.stack([written, row_steps], axis=1)
            next_loop = {
                "iteration": loop["iteration"] + 1,
                "step_ids": tf.tensor_scatter_nd_update(loop["step_ids"], at_step, word_ids),
                "parent_ids": tf.tensor_scatter_nd_update(loop["parent_ids"], at_step,
                                                          beam_ids),
                "final_scores": tf.tensor_scatter_nd_update(
                    loop["final_scores"], written[:, tf.newaxis], hypotheses["scores"]),
                "final_log_probs": tf.tensor_scatter_nd_update(
                    loop["final_log_probs"], written[:, tf.newaxis], hypotheses["log_probs"]),
            }
            if "attention" in loop:
                next_loop["attention"] = loop["attention"] if attention is None else (
                    tf.tensor_scatter_nd_update(loop["attention"], at_step, attention))
            if "unordered_state" in loop:
                next_loop["unordered_state"] = new_unordered_state

            # Done slots take the next examples; with none left, they become idle.
            steps = loop["steps"] + 1
            done = tf.logical_and(loop["active"], tf.logical_or(
                self._examples_done(hypotheses), steps >= max_length))
            order = tf.cumsum(tf.cast(done, tf.int32), exclusive=True)
            new_examples = loop["next_example"] + order
            refilled = tf.logical_and(done, new_examples < num_examples)
            examples = tf.where(refilled, new_examples, loop["examples"])
            refilled_rows = tf.repeat(refilled, beam_size)
            idle_rows = tf.repeat(tf.logical_and(done, tf.logical_not(refilled)), beam_size)
            restart = {
                "ids": tiled_examples(start_ids, examples),
                "finished": tf.zeros([num_rows], tf.bool),
                "log_probs": first_log_probs,
                "scores": first_log_probs,
                "lengths": tf.zeros([num_rows], tf.int32),
            }
            if "state" in loop:
                restart["state"] = tf.nest.map_structure(
                    lambda tensor: tiled_examples(tensor, examples), initial_state)
            if "accumulated_attention" in loop:
                restart["accumulated_attention"] = tf.zeros([num_rows, attention_size])
            for key, value in hypotheses.items():
                next_loop[key] = tf.nest.map_structure(
                    lambda new, first: tf.where(per_row(refilled_rows, new), first, new),
                    value, restart[key],
                )
            next_loop["finished"] = tf.logical_or(next_loop["finished"], idle_rows)
            active = tf.logical_and(loop["active"], tf.logical_or(tf.logical_not(done), refilled))
            next_loop.update(
                steps=tf.where(tf.logical_and(active, tf.logical_not(refilled)), steps, 0),
                examples=examples,
                active=active,
                next_example=loop["next_example"] + tf.reduce_sum(tf.cast(done, tf.int32)),
            )
            return (next_loop,)

        slot_counts = sorted({num_slots, -(-num_slots // 4)}, reverse=True)
        for index, slots in enumerate(slot_counts):
            if index:
                loop = self._keep_busy_slots(loop, slots)
            later_slots = slot_counts[index + 1] if index + 1 < len(slot_counts) else 0

            def cond(loop, later_slots=later_slots):
                busy = tf.reduce_sum(tf.cast(loop["active"], tf.int32))
                # Fewer slots once no example is left to take and few are busy.
                waiting = loop["next_example"] < num_examples
                return tf.logical_and(busy > 0, tf.logical_or(waiting, busy > later_slots))

            (loop,) = tf.while_loop(
                cond, body, (loop,), maximum_iterations=max_length * total,
                parallel_iterations=1,
            )
        kept = total * beam_size

        def by_step(table):  # [rows, T, ...] -> [T, rows, ...] of the real examples
            table = table[:kept]
            return tf.transpose(table, [1, 0] + list(range(2, table.shape.rank)))

        return self._finalize(
            by_step(loop["step_ids"]), by_step(loop["parent_ids"]), max_length,
            loop["final_scores"][:kept], loop["final_log_probs"][:kept],
            by_step(loop["attention"]) if "attention" in loop and returns_attention == [True]
            else None, end_id, total,
        )

    def _keep_busy_slots(self, loop, num_slots):
        """The slot loop with `num_slots` of its slots, the busy ones first (as many as fit:
        the caller ensures they all do), each with its rows of the state and unordered
        state; the output tables are the examples', kept whole."""
        slots = tf.argsort(tf.cast(loop["active"], tf.int32), direction="DESCENDING",
                           stable=True)[:num_slots]
        rows = _example_rows(slots, self.beam_size)
        old_rows = loop["ids"].shape[0]
        kept = dict(loop)
        for key in ("steps", "examples", "active", "ids", "finished", "log_probs", "scores",
                    "lengths", "state", "accumulated_attention", "unordered_state"):
            if key in loop:
                kept[key] = tf.nest.map_structure(
                    lambda tensor: _gather_rows_or_examples(tensor, slots, rows, old_rows),
                    loop[key])
        return kept

    def _examples_done(self, loop):
        """bool `[B]`: every hypothesis of the example has finished (with `early_exit`: its
        `n_best` best-scored ones)."""
        finished = tf.reshape(loop["finished"], [-1, self.beam_size])
        if self.early_exit:
            best = tf.math.top_k(tf.reshape(loop["scores"], [-1, self.beam_size]),
                                 k=self.n_best).indices
            finished = tf.gather(finished, best, batch_dims=1)
        return tf.reduce_all(finished, axis=1)

    def _compacted_batch_sizes(self, static_batch_size, batch_size):
        """The batch sizes of the successive decoding loops: `[B]`, or with `compact_batch`
        `B`, `ceil(B / 4)` and `ceil(B / 16)` (Python ints without repeats when `B` is
        static, else int32 scalars)."""
        if not self.compact_batch:
            return [batch_size]
        if static_batch_size is None:
            return [batch_size, (batch_size + 3) // 4, (batch_size + 15) // 16]
        return sorted({static_batch_size, math.ceil(static_batch_size / 4),
                       math.ceil(static_batch_size / 16)}, reverse=True)

    def _search_compacting(self, loop, body, batch_sizes, end_id, returns_attention):
        """The search with `compact_batch`: one loop per batch size, each running while more
        examples are unfinished than the next size holds; between loops the unfinished
        examples (and finished ones to fill the size) are gathered into the smaller batch.
        Each example's tables are copied out, at its original place, when it leaves."""
        batch_size, beam_size = batch_sizes[0], self.beam_size
        for tensor in tf.nest.flatten(loop.get("unordered_state", [])):
            if isinstance(batch_size, int) and tensor.shape[0] not in (
                batch_size, batch_size * beam_size
            ):
                raise ValueError(
                    f"BeamSampler(compact_batch=True): every unordered_state tensor must have "
                    f"a leading dimension of B ({batch_size}) or B * beam_size "
                    f"({batch_size * beam_size}), got shape {tensor.shape}"
                )
        examples = tf.range(batch_size)  # the original place of each example in the loop
        tables = None
        for index, size in enumerate(batch_sizes):
            if index:
                unfinished_first = tf.argsort(
                    tf.cast(self._examples_done(loop), tf.int32), stable=True
                )[:size]
                loop = self._gather_examples(loop, unfinished_first, returns_attention == [True])
                examples = tf.gather(examples, unfinished_first)
            later_size = batch_sizes[index + 1] if index + 1 < len(batch_sizes) else 0

            def cond(loop, later_size=later_size):
                unfinished = tf.reduce_sum(
                    tf.cast(tf.logical_not(self._examples_done(loop)), tf.int32)
                )
                # The first step always runs in the first loop (no example is done before
                # it), so that every step table has an element when it is read.
                go_on = tf.logical_or(unfinished > later_size, tf.equal(loop["step"], 0))
                return tf.logical_and(go_on, loop["step"] < self.max_length)

            (loop,) = tf.while_loop(
                cond, body, (loop,), maximum_iterations=self.max_length, parallel_iterations=1
            )
            phase_tables = self._final_tables(loop, end_id, returns_attention == [True])
            if tables is None:
                tables = phase_tables
            else:
                rows = _example_rows(examples, beam_size)[:, tf.newaxis]
                tables = {
                    key: None if table is None
                    else tf.tensor_scatter_nd_update(table, rows, phase_tables[key])
                    for key, table in tables.items()
                }

        def by_step(table):  # [rows, T, ...] -> [T, rows, ...]
            return None if table is None else tf.transpose(
                table, [1, 0] + list(range(2, table.shape.rank))
            )

        return self._finalize(
            by_step(tables["step_ids"]), by_step(tables["parent_ids"]), loop["step"],
            tables["scores"], tables["log_probs"], by_step(tables["attention"]), end_id,
            batch_size,
        )

    def _final_tables(self, loop, end_id, returns_attention):
        """The loop's per-row results, rows first: the step tables of steps not decoded
        hold `</s>` from the row's own slot (a finished hypothesis staying in place)."""
        step = loop["step"]
        decoded = tf.range(self.max_length)[tf.newaxis, :] < step
        own_slots = (tf.range(tf.shape(loop["ids"])[0]) % self.beam_size)[:, tf.newaxis]
        tables = {
            "step_ids": tf.where(decoded, tf.transpose(loop["step_ids"].stack()), end_id),
            "parent_ids": tf.where(decoded, tf.transpose(loop["parent_ids"].stack()), own_slots),
            "scores": loop["scores"],
            "log_probs": loop["log_probs"],
            "attention": None,
        }
        if returns_attention:
            attention = tf.transpose(loop["attention"].stack(), [1, 0, 2])
            tables["attention"] = tf.where(decoded[:, :, tf.newaxis], attention, 0.0)
        return tables

    def _gather_examples(self, loop, examples, returns_attention):
        """The loop with only `examples` (int32 `[B']`), in that order. An unordered state
        tensor is per row when its leading dimension is statically `B * beam_size`, else
        per example."""
        num_examples = examples.shape[0]
        beam_size = self.beam_size
        rows = _example_rows(examples, beam_size)
        num_rows = None if num_examples is None else num_examples * beam_size
        old_rows = loop["ids"].shape[0]

        def gather_per_row(tensor):
            return tf.ensure_shape(tf.gather(tensor, rows),
                                   [num_rows] + tensor.shape.as_list()[1:])

        def gather_table(array, dtype):
            table = tf.gather(array.stack(), rows, axis=1)
            return tf.TensorArray(dtype, size=self.max_length,
                                  element_shape=[num_rows]).unstack(table)

        gathered = {"step": loop["step"]}
        for key, value in loop.items():
            if key in ("step_ids", "parent_ids"):
                gathered[key] = gather_table(value, tf.int32)
            elif key == "attention":
                gathered[key] = tf.TensorArray(tf.float32, size=self.max_length)
                if returns_attention:
                    gathered[key] = gathered[key].unstack(tf.gather(value.stack(), rows, axis=1))
            elif key == "state":
                gathered[key] = tf.nest.map_structure(gather_per_row, value)
            elif key == "unordered_state":
                gathered[key] = tf.nest.map_structure(
                    lambda tensor: _gather_rows_or_examples(tensor, examples, rows, old_rows),
                    value)
            elif key != "step":
                gathered[key] = gather_per_row(value)
        return gathered

    def _call_step_fn(self, call, loop, static_rows, attention_size, returns_attention):
        """Runs `call(state)` (`step_fn` with the loop's ids and steps) on the loop's state,
        paired with its unordered state when it has one, and checks what it returns.

        Returns:
            `(logits, attention, new_state, new_unordered_state)` (the last `None` without
            an unordered state); `returns_attention` is set to `[attention is not None]`.
        """
        state = loop.get("state")
        if "unordered_state" in loop:
            state = ({} if state is None else state, loop["unordered_state"])
        logits, attention, new_state = self._check_step_outputs(
            call(state), state, static_rows, attention_size
        )
        returns_attention[:] = [attention is not None]
        new_unordered_state = None
        if "unordered_state" in loop:
            new_state, new_unordered_state = new_state
        return logits, attention, new_state, new_unordered_state

    def _check_step_outputs(self, outputs, state, static_rows, attention_size):
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
        elif self.coverage_penalty != 0:
            raise ValueError("BeamSampler: coverage_penalty needs step_fn to return attention")
        if state is None:
            return logits, attention, None
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

        return logits, attention, tf.nest.map_structure(keep_shape, new_state, state)

    def _tile(self, tensor, batch_size):
        tensor = tf.convert_to_tensor(tensor)
        if tensor.shape.rank == 0 or (
            batch_size is not None and tensor.shape[0] not in (None, batch_size)
        ):
            raise ValueError(
                f"BeamSampler: every initial_state tensor must have the leading dimension "
                f"B = len(start_ids) = {batch_size}, got shape {tensor.shape}"
            )
        return tf.repeat(tensor, self.beam_size, axis=0)

    def _base_seed(self):
        if self.seed is None:
            return tf.random.uniform([2], maxval=_INT32_RANGE[1] - 1, dtype=tf.int32)
        return tf.constant([self.seed, 0], tf.int32)

    def _step(self, loop, logits, attention, new_state, end_id, seed):
        """One step of OpenNMT-tf's `dynamic_decode` loop with `BeamSearch.step`: the
        hypotheses advance (`_advance`) and the step's tokens and parents are recorded."""
        step = loop["step"]
        stand_still = None
        if self.compact_batch:
            # A done example stands still: its hypotheses stay in their slots, emit </s>
            # and keep their scores, as if its decoding had stopped.
            stand_still = tf.repeat(self._examples_done(loop), self.beam_size)
        next_loop, word_ids, beam_ids, attention = self._advance(
            loop, logits, attention, new_state, end_id, seed, step, step, stand_still
        )
        next_loop.update(
            step=step + 1,
            step_ids=loop["step_ids"].write(step, word_ids),
            parent_ids=loop["parent_ids"].write(step, beam_ids),
            attention=loop["attention"] if attention is None
            else loop["attention"].write(step, attention),
        )
        return next_loop

    def _advance(self, loop, logits, attention, new_state, end_id, seed, step, seed_step,
                 stand_still):
        """The hypotheses after one step: each example's `beam_size` best (or drawn)
        candidates among the `beam_size * V` continuations of its hypotheses.

        `step` is the step of every row (a scalar) or of each row (`[rows]`); `seed_step`
        is folded into the sampling seed; `stand_still` (bool `[rows]` or `None`) marks rows
        that keep their hypotheses as they are (emitting `</s>`).

        Returns:
            `(next_loop, word_ids, beam_ids, attention)`: the loop's hypothesis tensors
            (`ids`, `finished`, `log_probs`, `scores`, `lengths`, and `state`,
            `accumulated_attention` when present), the chosen tokens and parent slots
            `[rows]`, and the attention that produced each chosen token (`None` without
            attention).

        The scores of a row's words are an increasing function of their logits (the same
        normalizer, cumulative log-probability and penalties for the whole row), so an
        example's best candidates are among the best logits of each of its rows: only those
        get scored, and the vocabulary is read a few times per row (maxima, then the sum of
        exponentials), instead of materializing `[B * beam_size, V]` scores and ranking
        `beam_size * V` of them.
        """
        beam_size = self.beam_size
        finished = loop["finished"]
        vocab_size = logits.shape[-1]
        if vocab_size is None:
            raise ValueError("BeamSampler: step_fn must return logits with a static last "
                             "dimension (the vocabulary size)")
        if self.top_k > beam_size * vocab_size:
            raise ValueError(
                f"BeamSampler: top_k ({self.top_k}) is larger than beam_size * vocabulary "
                f"size ({beam_size} * {vocab_size})"
            )
        logits = self._force_or_forbid_end(logits, step, finished, end_id, vocab_size)
        # log_softmax, as `(logits - max) - log(sum(exp(logits - max)))`, for candidates only.
        # (Taking the maximum from the best candidate instead is slower under XLA.)
        row_max = tf.reduce_max(logits, axis=1, keepdims=True)
        log_sum_exp = tf.math.log(tf.reduce_sum(tf.exp(logits - row_max), axis=1, keepdims=True))

        penalty_divisor = 1.0
        if self.length_penalty != 0:
            lengths = loop["lengths"]
            if self.freeze_finished_scores:
                lengths = tf.where(finished, lengths, lengths + 1)
            else:
                lengths = lengths + 1
            penalty_divisor = tf.pow(
                (5.0 + tf.cast(lengths[:, tf.newaxis], tf.float32)) / 6.0, self.length_penalty
            )
        accumulated_attention = coverage = None
        ranking_logits = logits
        if self.coverage_penalty != 0:
            not_finished = tf.cast(tf.logical_not(finished), tf.float32)[:, tf.newaxis]
            accumulated_attention = loop["accumulated_attention"] + attention * not_finished
            # Source positions never attended (0) count as 1, i.e. no penalty.
            coverage = self.coverage_penalty * tf.reduce_sum(
                tf.math.log(tf.minimum(
                    tf.where(tf.equal(accumulated_attention, 0.0), 1.0, accumulated_attention),
                    1.0,
                )),
                axis=1,
                keepdims=True,
            )
            if self.freeze_finished_scores:  # the </s> of unfinished rows moves alone
                ranking_logits = logits + tf.one_hot(end_id, vocab_size) * (
                    coverage * not_finished * penalty_divisor
                )

        word_ids, candidate_logits = self._row_candidates(ranking_logits, logits, vocab_size)
        candidate_log_probs = (candidate_logits - row_max) - log_sum_exp
        total_log_probs = candidate_log_probs + loop["log_probs"][:, tf.newaxis]
        scores = total_log_probs / penalty_divisor
        if coverage is not None:
            # OpenNMT-tf: for hypotheses finished at an earlier step. Frozen scores: also
            # for the </s> candidates of this step.
            applies = finished[:, tf.newaxis]
            if self.freeze_finished_scores:
                applies = tf.logical_or(applies, tf.equal(word_ids, end_id))
            scores += coverage * tf.cast(applies, tf.float32)

        # Choose beam_size candidates among the beam_size * num_candidates of each example.
        num_candidates = word_ids.shape[-1]
        flat_shape = [-1, beam_size * num_candidates]
        flat_scores = tf.reshape(scores, flat_shape)
        ranked = tf.reshape(candidate_log_probs, flat_shape) if beam_size == 1 else flat_scores
        chosen = self._choose(ranked, seed_step, seed)
        next_log_probs = tf.reshape(
            tf.gather(tf.reshape(total_log_probs, flat_shape), chosen, batch_dims=1), [-1]
        )
        next_scores = tf.reshape(tf.gather(flat_scores, chosen, batch_dims=1), [-1])
        word_ids = tf.reshape(
            tf.gather(tf.reshape(word_ids, flat_shape), chosen, batch_dims=1), [-1]
        )
        beam_ids = tf.reshape(chosen // num_candidates, [-1])
        lengths = tf.where(finished, loop["lengths"], loop["lengths"] + 1)
        if stand_still is not None:
            own_slots = tf.range(tf.shape(word_ids)[0]) % beam_size
            beam_ids = tf.where(stand_still, own_slots, beam_ids)
            word_ids = tf.where(stand_still, end_id, word_ids)
            next_log_probs = tf.where(stand_still, loop["log_probs"], next_log_probs)
            next_scores = tf.where(stand_still, loop["scores"], next_scores)
            lengths = tf.where(stand_still, loop["lengths"], lengths)

        if beam_size == 1:  # greedy: nothing moves
            parents = lambda tensor: tensor  # noqa: E731
        else:
            rows = (tf.range(tf.shape(word_ids)[0]) // beam_size) * beam_size + beam_ids
            parents = lambda tensor: tf.gather(tensor, rows)  # noqa: E731
        parent_finished = parents(finished)
        next_loop = {
            "ids": word_ids,
            "finished": tf.logical_or(parent_finished, tf.equal(word_ids, end_id)),
            # The chosen candidate's total: for a finished parent its forced </s> adds
            # exactly 0. (OpenNMT-tf keeps the previous value of the slot instead, which is
            # another hypothesis's when the beam reorders: OpenNMT-tf issue #432.)
            "log_probs": next_log_probs,
            "scores": next_scores,
            "lengths": parents(lengths),
        }
        if attention is not None:
            # Row r's attention produced the token of the slots whose parent is r.
            attention = parents(attention)
        if accumulated_attention is not None:
            next_loop["accumulated_attention"] = parents(accumulated_attention)
        if "state" in loop:
            next_loop["state"] = tf.nest.map_structure(parents, new_state)
        next_loop = {
            key: tf.nest.map_structure(
                lambda new, old: tf.ensure_shape(new, old.shape), value, loop[key]
            )
            for key, value in next_loop.items()
        }
        return next_loop, word_ids, beam_ids, attention

    def _force_or_forbid_end(self, logits, step, finished, end_id, vocab_size):
        """Finished rows emit </s> with probability 1; before min_length </s> gets -1e7."""
        end_logits = tf.one_hot(
            end_id, vocab_size, on_value=logits.dtype.max, off_value=logits.dtype.min
        )

        def force_end_for_finished():
            return tf.where(finished[:, tf.newaxis], end_logits[tf.newaxis], logits)

        if self.min_length == 0:
            return force_end_for_finished()
        penalized = lambda: logits + tf.one_hot(  # noqa: E731
            end_id, vocab_size, on_value=END_PENALTY_BEFORE_MIN_LENGTH
        )
        if step.shape.rank == 1:  # a step per row
            before_min_length = (step < self.min_length)[:, tf.newaxis]
            return tf.where(before_min_length, penalized(), force_end_for_finished())
        return tf.cond(step < self.min_length, penalized, force_end_for_finished)

    def _row_candidates(self, ranking_logits, logits, vocab_size):
        """The words of each row that can be chosen: its `beam_size` best (deterministic
        search) or `top_k` best (sampling), or all of them (`top_k=0`), with their logits."""
        count = self.beam_size if self.top_k == 1 else self.top_k
        if count == 0 or count >= vocab_size:
            word_ids = tf.broadcast_to(tf.range(vocab_size), tf.shape(logits))
            return word_ids, logits
        ranking_values, word_ids = top_k_by_chunks(ranking_logits, count)
        if ranking_logits is logits:
            return word_ids, ranking_values
        return word_ids, tf.gather(logits, word_ids, batch_dims=1)

    def _choose(self, scores, step, seed):
        """`BestSampler` (top_k=1) or `RandomSampler`: candidate ids `[B, beam_size]`."""
        if self.top_k == 1:
            return tf.math.top_k(scores, k=self.beam_size).indices
        if self.top_k == 0:
            candidates, candidate_ids = scores, None
        else:
            candidates, candidate_ids = tf.math.top_k(scores, k=self.top_k)
        draws = tf.random.stateless_categorical(
            candidates / self.temperature,
            self.beam_size,
            seed=tf.random.experimental.stateless_fold_in(seed, step),
            dtype=tf.int32,
        )
        if candidate_ids is None:
            return draws
        return tf.gather(candidate_ids, draws, batch_dims=1)

    def _finalize(self, step_ids, parent_ids, num_steps, scores, log_probs, attention, end_id,
                  batch_size):
        final_scores = tf.reshape(scores, [-1, self.beam_size])
        if self.top_k == 1:  # the beam is already sorted by score
            final_beams = tf.tile(tf.range(self.n_best)[tf.newaxis], [batch_size, 1])
        else:
            final_beams = tf.math.top_k(final_scores, k=self.n_best).indices
        ids, lengths, alignment = gather_tree(
            step_ids, parent_ids, self.beam_size, num_steps, end_id,
            final_beams=final_beams, step_values=attention,
        )
        log_probs = tf.reshape(log_probs, [-1, self.beam_size])
        outputs = {
            "ids": ids,
            "lengths": lengths,
            "log_probs": tf.gather(log_probs, final_beams, batch_dims=1),
            "scores": tf.gather(final_scores, final_beams, batch_dims=1),
        }
        if alignment is not None:
            outputs["alignment"] = alignment
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            beam_size=self.beam_size,
            length_penalty=self.length_penalty,
            coverage_penalty=self.coverage_penalty,
            top_k=self.top_k,
            temperature=self.temperature,
            n_best=self.n_best,
            max_length=self.max_length,
            min_length=self.min_length,
            seed=self.seed,
            freeze_finished_scores=self.freeze_finished_scores,
            early_exit=self.early_exit,
            compact_batch=self.compact_batch,
        )
        return config


def _first_log_probs(num_examples, beam_size):
    """`[num_examples * beam_size]`: each example's first hypothesis at 0, the others
    at -inf."""
    return tf.tile([0.0] + [float("-inf")] * (beam_size - 1), [num_examples])


def _gather_rows_or_examples(tensor, examples, rows, old_rows):
    """`tensor` gathered at `rows` (`_example_rows(examples)`) when its leading dimension
    is statically `old_rows` (one per hypothesis), else at `examples` (one per example or
    slot)."""
    indices = rows if old_rows is not None and tensor.shape[0] == old_rows else examples
    return tf.ensure_shape(tf.gather(tensor, indices),
                           [indices.shape[0]] + tensor.shape.as_list()[1:])


def _example_rows(examples, beam_size):
    """The rows `[B' * beam_size]` of examples `[B']`: `b * beam_size + k`."""
    return tf.reshape(examples[:, tf.newaxis] * beam_size + tf.range(beam_size), [-1])


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"BeamSampler: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


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
