"""The search rule: how one step turns each example's hypotheses into the next ones.

A rule is independent of the loop that runs it. Each example keeps `beam_size`
hypotheses, rows `b * beam_size + k` of a dict of tensors (`first_hypotheses`); each step
`advance` forces `</s>` on finished rows (and forbids it before `min_length`), scores the
candidates of every row (`kerasnmt.decoding.search.scoring`), lets the subclass `choose`
`beam_size` of each example's candidates, and reorders the hypotheses after their parents.
Subclasses: `BeamRanking` (keeps the best), `Greedy` (one hypothesis) and `TopKSampling`
(draws).

Examples:
    >>> import tensorflow as tf
    >>> from kerasnmt.decoding.search import BeamRanking
    >>> rule = BeamRanking(beam_size=2)
    >>> hypotheses = rule.first_hypotheses(tf.constant([1, 1]), num_examples=1)
    >>> logits = tf.math.log([[0.1, 0.2, 0.7], [0.1, 0.2, 0.7]])  # word 0 is </s>
    >>> hypotheses, word_ids, beam_ids, _ = rule.advance(
    ...     hypotheses, logits, None, end_id=0, step=tf.constant(0))
    >>> word_ids.numpy().tolist(), beam_ids.numpy().tolist()
    ([2, 1], [0, 0])
    >>> hypotheses["log_probs"].numpy().astype(float).round(3).tolist()
    [-0.357, -1.609]
"""

import tensorflow as tf

from kerasnmt.decoding.search.scoring import (
    DEFAULT_LENGTH_NORMALIZATION,
    check_length_normalization,
    coverage_penalty,
    force_or_forbid_end,
    length_penalty_divisor,
    row_candidates,
)


class SearchRule:
    """The per-step rule of a search, OpenNMT-tf 2.x's `BeamSearch.step` (or `GreedySearch`
    with one hypothesis per example), with its sampler left to subclasses.

    Hypotheses are a dict of tensors with one row per hypothesis: `"ids"` (the last token),
    `"finished"`, `"log_probs"` (cumulative), `"scores"` (penalized, used for ranking),
    `"lengths"`, `"accumulated_attention"` with a coverage penalty, and optionally
    `"state"` (reordered with the hypotheses); other keys are ignored.

    Args:
        beam_size: hypotheses kept per example.
        n_best: hypotheses returned per example (`final_beams`), at most `beam_size`.
        min_length: `</s>` is forbidden during the first `min_length` steps.
        length_penalty: the exponent `alpha` of the length penalty; 0 disables it.
        coverage_penalty: the weight `beta` of the coverage penalty; 0 disables it.
        length_normalization: the length penalty's divisor, `"gnmt"` or `"power"`
            (`kerasnmt.decoding.search.scoring.length_penalty_divisor`).
        freeze_finished_scores: score a hypothesis as complete from the step it emits
            `</s>`, instead of OpenNMT-tf's `length + 1` and one-step-late coverage.
        early_exit: an example is done when its `n_best` best hypotheses have finished,
            instead of all of them (`examples_done`).
    """

    # Whether the candidates are ranked by their penalized scores (else by their
    # log-probabilities, `SetAsideRanking`).
    ranks_by_score = True

    def __init__(self, beam_size, n_best=1, min_length=0, length_penalty=0.0,
                 coverage_penalty=0.0, length_normalization=DEFAULT_LENGTH_NORMALIZATION,
                 freeze_finished_scores=False, early_exit=False):
        check_length_normalization(length_normalization, type(self).__name__)
        self.beam_size = beam_size
        self.n_best = n_best
        self.min_length = min_length
        self.length_penalty = length_penalty
        self.coverage_penalty = coverage_penalty
        self.length_normalization = length_normalization
        self.freeze_finished_scores = freeze_finished_scores
        self.early_exit = early_exit

    @property
    def candidates_per_row(self):
        """How many of each row's best words are scored (0: all of them)."""
        raise NotImplementedError

    @property
    def table_slots(self):
        """The slots of an example in the loop's tables of tokens and parent slots (and in
        `final_values`): its `beam_size` hypotheses."""
        return self.beam_size

    def final_values(self, hypotheses):
        """`(scores, log_probs)` `[B * table_slots]`, the values `final_beams` picks from."""
        return hypotheses["scores"], hypotheses["log_probs"]

    def choose(self, scores, seed=None, seed_step=None):
        """The chosen candidates, int32 `[B, beam_size]`, among `scores`
        `[B, beam_size * candidates_per_row]`."""
        raise NotImplementedError

    def final_beams(self, scores, batch_size):
        """The slots of the `n_best` hypotheses returned, best first, int32 `[B, n_best]`,
        given the final `scores` `[B, beam_size]`."""
        raise NotImplementedError

    def base_seed(self):
        """The seed the steps' sampling seeds are folded from; `None` for no sampling."""
        return None

    def check_vocabulary_size(self, vocab_size):
        """Refuses logits whose vocabulary size (last dimension) the rule cannot search."""
        if vocab_size is None:
            raise ValueError("BeamSampler: step_fn must return logits with a static last "
                             "dimension (the vocabulary size)")

    def first_hypotheses(self, ids, num_examples, attention_size=None):
        """The hypotheses before the first step, `ids` `[num_examples * beam_size]`: each
        example's first at log-probability 0, the others at `-inf`."""
        num_rows = num_examples * self.beam_size
        first_log_probs = tf.tile([0.0] + [float("-inf")] * (self.beam_size - 1),
                                  [num_examples])
        hypotheses = {
            "ids": ids,
            "finished": tf.zeros([num_rows], tf.bool),
            "log_probs": first_log_probs,
            "scores": first_log_probs,
            "lengths": tf.zeros([num_rows], tf.int32),
        }
        if self.coverage_penalty != 0:
            hypotheses["accumulated_attention"] = tf.zeros([num_rows, attention_size])
        return hypotheses

    def advance(self, hypotheses, logits, attention, end_id, step, new_state=None,
                seed=None, seed_step=None, stand_still=None):
        """The hypotheses after one step: each example's `beam_size` chosen candidates
        among the continuations of its hypotheses.

        Args:
            hypotheses: the current hypotheses (see the class docstring).
            logits: float32 `[rows, V]`, the step's logits of each row.
            attention: float32 `[rows, S]` or `None`; needed by the coverage penalty.
            end_id: the `</s>` id, an int32 scalar.
            step: the step of every row (a scalar) or of each row (`[rows]`).
            new_state: the step's new state, reordered when `hypotheses` has a `"state"`.
            seed: the base seed of sampling (`base_seed()`).
            seed_step: the value folded into `seed` at this step (sampling).
            stand_still: bool `[rows]` or `None`: rows that keep their hypotheses as they
                are (emitting `</s>`).

        Returns:
            `(next_hypotheses, word_ids, beam_ids, attention)`: the chosen tokens and
            parent slots `[rows]`, and the attention that produced each chosen token
            (`None` without attention).
        """
        self.check_vocabulary_size(logits.shape[-1])
        logits = force_or_forbid_end(logits, step, hypotheses["finished"], end_id,
                                     self.min_length)
        candidates, accumulated_attention = self._score(hypotheses, logits, attention, end_id)
        chosen = self._take(hypotheses, candidates, end_id, seed, seed_step, stand_still)
        return self._reorder(hypotheses, chosen, accumulated_attention, attention, new_state,
                             end_id)

    def _score(self, hypotheses, logits, attention, end_id):
        """`(candidates, accumulated_attention)`: the `word_ids`, `log_probs` (of the word),
        `total_log_probs` and `scores` `[rows, candidates_per_row]` of each row."""
        finished = hypotheses["finished"]
        # log_softmax, as `(logits - max) - log(sum(exp(logits - max)))`, for candidates only.
        # (Taking the maximum from the best candidate instead is slower under XLA.)
        row_max = tf.reduce_max(logits, axis=1, keepdims=True)
        log_sum_exp = tf.math.log(tf.reduce_sum(tf.exp(logits - row_max), axis=1, keepdims=True))
        penalty_divisor = length_penalty_divisor(hypotheses["lengths"], finished,
                                                 self.length_penalty,
                                                 self.freeze_finished_scores,
                                                 self.length_normalization)
        accumulated_attention = coverage = None
        ranking_logits = logits
        if self.coverage_penalty != 0:
            not_finished = tf.cast(tf.logical_not(finished), tf.float32)[:, tf.newaxis]
            accumulated_attention = hypotheses["accumulated_attention"] + attention * not_finished
            coverage = coverage_penalty(accumulated_attention, self.coverage_penalty)
            if self.freeze_finished_scores and self.ranks_by_score:
                # the </s> of unfinished rows moves alone
                ranking_logits = logits + tf.one_hot(end_id, logits.shape[-1]) * (
                    coverage * not_finished * penalty_divisor
                )

        word_ids, candidate_logits = row_candidates(ranking_logits, logits,
                                                    self.candidates_per_row)
        log_probs = (candidate_logits - row_max) - log_sum_exp
        total_log_probs = log_probs + hypotheses["log_probs"][:, tf.newaxis]
        scores = total_log_probs / penalty_divisor
        if coverage is not None:
            # OpenNMT-tf: for hypotheses finished at an earlier step. Frozen scores: also
            # for the </s> candidates of this step.
            applies = finished[:, tf.newaxis]
            if self.freeze_finished_scores:
                applies = tf.logical_or(applies, tf.equal(word_ids, end_id))
            scores += coverage * tf.cast(applies, tf.float32)
        candidates = {"word_ids": word_ids, "log_probs": log_probs,
                      "total_log_probs": total_log_probs, "scores": scores}
        return candidates, accumulated_attention

    def _take(self, hypotheses, candidates, end_id, seed, seed_step, stand_still):
        """The chosen candidates of each row, `[rows]`: `word_ids`, `beam_ids` (parent
        slots), `log_probs`, `scores` and `lengths`. With one hypothesis per example
        (OpenNMT-tf's `GreedySearch`) the plain log-probabilities are ranked."""
        beam_size = self.beam_size
        num_candidates = candidates["word_ids"].shape[-1]
        flat_shape = [-1, beam_size * num_candidates]
        flat_scores = tf.reshape(candidates["scores"], flat_shape)
        ranked = (tf.reshape(candidates["log_probs"], flat_shape) if beam_size == 1
                  else flat_scores)
        chosen = self.choose(ranked, seed, seed_step)

        def take(values):
            return tf.reshape(tf.gather(values, chosen, batch_dims=1), [-1])

        log_probs = take(tf.reshape(candidates["total_log_probs"], flat_shape))
        scores = take(flat_scores)
        word_ids = take(tf.reshape(candidates["word_ids"], flat_shape))
        beam_ids = tf.reshape(chosen // num_candidates, [-1])
        lengths = tf.where(hypotheses["finished"], hypotheses["lengths"],
                           hypotheses["lengths"] + 1)
        if stand_still is not None:
            own_slots = tf.range(tf.shape(word_ids)[0]) % beam_size
            beam_ids = tf.where(stand_still, own_slots, beam_ids)
            word_ids = tf.where(stand_still, end_id, word_ids)
            log_probs = tf.where(stand_still, hypotheses["log_probs"], log_probs)
            scores = tf.where(stand_still, hypotheses["scores"], scores)
            lengths = tf.where(stand_still, hypotheses["lengths"], lengths)
        return {"word_ids": word_ids, "beam_ids": beam_ids, "log_probs": log_probs,
                "scores": scores, "lengths": lengths}

    def _reorder(self, hypotheses, chosen, accumulated_attention, attention, new_state,
                 end_id):
        """`advance`'s result: the per-row tensors follow each chosen candidate's parent."""
        word_ids, beam_ids = chosen["word_ids"], chosen["beam_ids"]
        if self.beam_size == 1:  # greedy: nothing moves
            parents = lambda tensor: tensor  # noqa: E731
        else:
            rows = (tf.range(tf.shape(word_ids)[0]) // self.beam_size) * self.beam_size + beam_ids
            parents = lambda tensor: tf.gather(tensor, rows)  # noqa: E731
        parent_finished = parents(hypotheses["finished"])
        next_hypotheses = {
            "ids": word_ids,
            "finished": tf.logical_or(parent_finished, tf.equal(word_ids, end_id)),
            # The chosen candidate's total: for a finished parent its forced </s> adds
            # exactly 0. (OpenNMT-tf keeps the previous value of the slot instead, which is
            # another hypothesis's when the beam reorders: OpenNMT-tf issue #432.)
            "log_probs": chosen["log_probs"],
            "scores": chosen["scores"],
            "lengths": parents(chosen["lengths"]),
        }
        if attention is not None:
            # Row r's attention produced the token of the slots whose parent is r.
            attention = parents(attention)
        if accumulated_attention is not None:
            next_hypotheses["accumulated_attention"] = parents(accumulated_attention)
        if "state" in hypotheses:
            next_hypotheses["state"] = tf.nest.map_structure(parents, new_state)
        return with_static_shapes(next_hypotheses, hypotheses), word_ids, beam_ids, attention

    def examples_done(self, hypotheses):
        """bool `[B]`: every hypothesis of the example has finished (with `early_exit`: its
        `n_best` best-scored ones)."""
        finished = tf.reshape(hypotheses["finished"], [-1, self.beam_size])
        if self.early_exit:
            best = tf.math.top_k(tf.reshape(hypotheses["scores"], [-1, self.beam_size]),
                                 k=self.n_best).indices
            finished = tf.gather(finished, best, batch_dims=1)
        return tf.reduce_all(finished, axis=1)


def with_static_shapes(next_hypotheses, hypotheses):
    """`next_hypotheses` with the static shapes of `hypotheses` (loop variables keep
    their shapes from step to step)."""
    return {
        key: tf.nest.map_structure(
            lambda new, previous: tf.ensure_shape(new, previous.shape), value, hypotheses[key])
        for key, value in next_hypotheses.items()
    }
