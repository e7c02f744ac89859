"""Beam search, greedy search and sampling over any step function, as a Keras layer."""

import inspect
import numbers

import keras
import tensorflow as tf

from kerasnmt.decoding.option_rules import decoding_option_problems
from kerasnmt.decoding.search import CompactingLoop, PlainLoop, SlotLoop
from kerasnmt.decoding.search.compacting_loop import batch_sizes
from kerasnmt.decoding.search.rule_choice import choose_rule
from kerasnmt.decoding.search.scoring import (
    DEFAULT_LENGTH_NORMALIZATION,
    check_length_normalization,
)
from kerasnmt.decoding.search.top_k import SEED_RANGE

# Where finished hypotheses go: they keep their beam slots (OpenNMT-tf), or leave the beam
# (fairseq, CTranslate2).
FINISHED_HYPOTHESES = ("in_beam", "set_aside")


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
    2016). `length_normalization="power"` divides by `length ** length_penalty` instead
    (fairseq's `--lenpen`, Marian's `--normalize`, CTranslate2's `length_penalty`; with
    `freeze_finished_scores=True` a finished hypothesis scores `log_prob / length **
    alpha`, `</s>` counted, as in fairseq). With `top_k=1` the best `beam_size` candidates are kept; otherwise `beam_size`
    candidates are drawn (with replacement) from the softmax of the best `top_k` scores (all
    of them when `top_k=0`) divided by `temperature`. Greedy decoding ranks and samples the
    plain log-probabilities. The loop stops when every hypothesis has emitted `</s>` or after
    `max_length` steps; `</s>` gets a -1e7 logit penalty during the first `min_length`
    steps. The paths are rebuilt at the end from the table of parent beams
    (`kerasnmt.decoding.gather_tree.gather_tree`), so no step does work that grows with
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

    `finished_hypotheses="set_aside"` searches as fairseq and CTranslate2 do instead
    (`kerasnmt.decoding.search.SetAsideRanking`): each step ranks the `2 * beam_size` best
    candidates of an example by cumulative log-probability; those among the first
    `beam_size` that end with `</s>` (or at `max_length`) leave the beam, set aside with
    their final score (frozen, as with `freeze_finished_scores=True`), and the beam is
    refilled with the next candidates that do not end; an example is done once
    `beam_size` hypotheses are set aside (its best `beam_size` kept if more end at that
    step), and stands still from then on. Every step then extends `beam_size` unfinished
    hypotheses, and each result is that of its example decoded alone. It needs `top_k=1`
    and has its own end (no `early_exit`).

    Also as in OpenNMT-tf, an example whose hypotheses have all finished goes on through
    the loop with the rest of its batch (its finished hypotheses re-ranked with
    `length + 1`), so its result can depend on the other sentences of the batch.
    `compact_batch=True` makes every result the one of the example decoded alone (an
    example stops as soon as it is done, its hypotheses frozen in place), and shrinks the
    batch as examples finish, as CTranslate2 and fairseq do: one loop runs at `B` examples
    while more than `ceil(B / 2)` are unfinished, then the unfinished examples (and done
    ones to fill it) are gathered into a batch of `ceil(B / 2)`, which runs while more than
    `ceil(B / 8)` are unfinished, and then a batch of `ceil(B / 8)` finishes the search
    (32 -> 16 -> 4). A batch in which one sentence decodes much longer than the others then
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

    Each step's rule is a `kerasnmt.decoding.search.SearchRule` (`BeamRanking`, `Greedy` or
    `TopKSampling`), run by one of the loops of `kerasnmt.decoding.search` (`PlainLoop`,
    `CompactingLoop` with `compact_batch`, `SlotLoop` with `num_slots`).

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
        length_normalization: the length penalty's divisor: `"gnmt"` (OpenNMT-tf's
            `((5 + length) / 6) ** alpha`) or `"power"` (`length ** alpha`, see above).
        finished_hypotheses: `"in_beam"` (OpenNMT-tf: they keep their slots) or
            `"set_aside"` (fairseq, CTranslate2: they leave the beam, see above).
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`).

    Call arguments:
        step_fn: a callable `step_fn(ids, step, state) -> (logits, attention, new_state)`
            with `ids` int32 `[B * beam_size]` (the last token of each hypothesis; row
            `b * beam_size + k` is hypothesis `k` of example `b`), `step` an int32 scalar
            (0 for the first token after `start_ids`), `state` the current state;
            returning float `logits` `[B * beam_size, V]`, float `attention`
            `[B * beam_size, S]` or `None`, and `new_state`, with the structure and shapes
            of `state` (ignored when `initial_state` is `None`). Every step is taken in
            the decoding loop, the first one included, so `step_fn` is traced once a loop
            and `step` is never known when tracing.
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
        length_normalization=DEFAULT_LENGTH_NORMALIZATION,
        finished_hypotheses="in_beam",
        **kwargs,
    ):
        super().__init__(**kwargs)
        beam_size = _check_int("beam_size", beam_size, minimum=1)
        n_best = _check_int("n_best", n_best, minimum=1)
        top_k = _check_int("top_k", top_k, minimum=0)
        max_length = _check_int("max_length", max_length, minimum=1)
        min_length = _check_int("min_length", min_length, minimum=0)
        if not temperature > 0:
            raise ValueError(f"BeamSampler: temperature must be > 0, got {temperature!r}")
        check_length_normalization(length_normalization, "BeamSampler")
        if finished_hypotheses not in FINISHED_HYPOTHESES:
            raise ValueError(f"BeamSampler: finished_hypotheses must be one of "
                             f"{FINISHED_HYPOTHESES}, got {finished_hypotheses!r}")
        problems = decoding_option_problems(dict(
            beam_size=beam_size, n_best=n_best, min_length=min_length, max_length=max_length,
            top_k=top_k, early_exit=early_exit, finished_hypotheses=finished_hypotheses))
        if problems:
            raise ValueError("BeamSampler: " + "; ".join(problems.values()))
        if seed is not None:
            seed = _check_int("seed", seed, minimum=SEED_RANGE[0])
            if seed >= SEED_RANGE[1]:
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
        self.length_normalization = length_normalization
        self.finished_hypotheses = finished_hypotheses
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
            return self._no_outputs(attention_size)
        rule = self._search_rule()
        if num_slots is not None:
            num_slots = _check_int("num_slots", num_slots, minimum=1)
            slot_loop = SlotLoop(rule, step_fn, start_ids, end_id, self.max_length,
                                 initial_state, attention_size, num_examples)
            return slot_loop.search(num_slots, unordered_state)
        sizes = self._compacted_batch_sizes(start_ids.shape[0], tf.shape(start_ids)[0])
        if len(sizes) > 1:
            loop = CompactingLoop(rule, step_fn, end_id, self.max_length, sizes,
                                  attention_size)
        else:
            loop = PlainLoop(rule, step_fn, end_id, self.max_length, attention_size,
                             stand_still_when_done=self.compact_batch)
        return loop.search(start_ids, initial_state, unordered_state)

    def _search_rule(self):
        """The rule of each step (`kerasnmt.decoding.search.rule_choice.choose_rule`)."""
        return choose_rule(
            self.beam_size, self.top_k, self.temperature, self.seed, self.finished_hypotheses,
            self.max_length, n_best=self.n_best, min_length=self.min_length,
            length_penalty=self.length_penalty, coverage_penalty=self.coverage_penalty,
            length_normalization=self.length_normalization,
            freeze_finished_scores=self.freeze_finished_scores, early_exit=self.early_exit)

    def _compacted_batch_sizes(self, static_batch_size, batch_size):
        """The batch sizes of the successive decoding loops: `[B]`, or with `compact_batch`
        `B`, `ceil(B / 2)` and `ceil(B / 8)` (Python ints without repeats when `B` is
        static, else int32 scalars)."""
        if not self.compact_batch:
            return [batch_size]
        return batch_sizes(static_batch_size, batch_size)

    def _no_outputs(self, attention_size):
        """The outputs of a search over no example."""
        outputs = {"ids": tf.zeros([0, self.n_best, self.max_length], tf.int32),
                   "lengths": tf.zeros([0, self.n_best], tf.int32),
                   "log_probs": tf.zeros([0, self.n_best]),
                   "scores": tf.zeros([0, self.n_best])}
        if attention_size is not None:
            outputs["alignment"] = tf.zeros([0, self.n_best, self.max_length,
                                             attention_size])
        return outputs

    def get_config(self):
        config = super().get_config()
        # A loop, not a comprehension: AutoGraph converts this method when a traced
        # function calls it, and its comprehensions do not see this module's names.
        for name in SAMPLER_ARGUMENTS:
            config[name] = getattr(self, name)
        return config


# The arguments of `BeamSampler` but Keras' own, each kept as an attribute of its name.
_SAMPLER_PARAMETERS = inspect.signature(BeamSampler).parameters
SAMPLER_ARGUMENTS = tuple(name for name in _SAMPLER_PARAMETERS if name != "kwargs")
# Their defaults (the configuration's `params` section takes them as its own), all but
# `seed`'s.
SAMPLER_DEFAULTS = {
    name: _SAMPLER_PARAMETERS[name].default for name in SAMPLER_ARGUMENTS if name != "seed"
}


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"BeamSampler: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)

