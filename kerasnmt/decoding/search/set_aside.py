"""fairseq's and CTranslate2's beam search: a finished hypothesis leaves the beam.

Each step ranks the `2 * beam_size` best continuations of an example's hypotheses by
log-probability. Those among the first `beam_size` that end (`</s>`, or any word at the
last step) are set aside with their final score; the beam keeps the first `beam_size`
that do not end. An example is done once `beam_size` hypotheses have been set aside (the
best `beam_size` are kept if more finish at that step), and its best set-aside hypotheses
are returned.

In the loop's tables an example has `2 * beam_size` slots: its hypotheses, then the
set-aside ones (each step's token `</s>` and parent its own slot, or the new hypothesis
set aside at that step and its parent in the beam), so that `gather_tree` rebuilds both.

Examples:
    >>> import tensorflow as tf
    >>> rule = SetAsideRanking(beam_size=2, max_length=5)
    >>> hypotheses = rule.first_hypotheses(tf.constant([1, 1]), num_examples=1)
    >>> logits = tf.math.log([[0.5, 0.3, 0.1, 0.1], [0.5, 0.3, 0.1, 0.1]])  # word 0: </s>
    >>> hypotheses, word_ids, beam_ids, _ = rule.advance(
    ...     hypotheses, logits, None, end_id=0, step=tf.constant(0))
    >>> hypotheses["ids"].numpy().tolist()  # </s> was the best: the beam takes the next two
    [1, 2]
    >>> word_ids.numpy().tolist(), beam_ids.numpy().tolist()  # the beam, then set aside
    ([1, 2, 0, 0], [0, 0, 0, 2])
    >>> rule.examples_done(hypotheses).numpy().tolist()  # one set aside of two
    [False]
"""

import tensorflow as tf

from kerasnmt.decoding.search.rule import SearchRule, with_static_shapes
from kerasnmt.decoding.search.scoring import force_or_forbid_end


class SetAsideRanking(SearchRule):
    """Beam search as fairseq's `SequenceGenerator` and CTranslate2's `BeamSearch` (with a
    length or coverage penalty) run it: `2 * beam_size` candidates ranked by
    log-probability, finished hypotheses set aside with their score (frozen: their own
    length, `</s>` counted, and their coverage penalty), the beam refilled with the next
    unfinished candidates, an example done at `beam_size` finished hypotheses.

    Args:
        beam_size: hypotheses kept in the beam, and set aside before an example is done.
        max_length: the maximum number of steps: every candidate of the last one that is
            kept ends.
        **kwargs: `SearchRule`'s, but `freeze_finished_scores` (always) and `early_exit`
            (the search has its own end).
    """

    ranks_by_score = False

    def __init__(self, beam_size, max_length, **kwargs):
        super().__init__(beam_size, freeze_finished_scores=True, **kwargs)
        self.max_length = max_length

    @property
    def candidates_per_row(self):
        """A row's `2 * beam_size` best words hold any of its candidates that can be kept."""
        return 2 * self.beam_size

    @property
    def table_slots(self):
        """The beam's slots, then the set-aside hypotheses' slots."""
        return 2 * self.beam_size

    def first_hypotheses(self, ids, num_examples, attention_size=None):
        """`SearchRule`'s, and no hypothesis set aside: `"set_aside_scores"` `-inf` and
        `"set_aside_log_probs"` (one row per set-aside slot of each example)."""
        hypotheses = super().first_hypotheses(ids, num_examples, attention_size)
        hypotheses["set_aside_scores"] = tf.fill(tf.shape(hypotheses["scores"]), -float("inf"))
        hypotheses["set_aside_log_probs"] = tf.zeros_like(hypotheses["log_probs"])
        return hypotheses

    def final_values(self, hypotheses):
        return tuple(
            self._with_set_aside(self._per_example(hypotheses[key]),
                                 self._per_example(hypotheses["set_aside_" + key]))
            for key in ("scores", "log_probs"))

    def final_beams(self, scores, batch_size):
        """The first `n_best` set-aside slots: they are kept sorted by score."""
        return tf.tile(self.beam_size + tf.range(self.n_best)[tf.newaxis], [batch_size, 1])

    def examples_done(self, hypotheses):
        """bool `[B]`: `beam_size` hypotheses of the example have been set aside."""
        set_aside = tf.reshape(hypotheses["set_aside_scores"], [-1, self.beam_size])
        return tf.reduce_all(set_aside > -float("inf"), axis=1)

    def advance(self, hypotheses, logits, attention, end_id, step, new_state=None,
                seed=None, seed_step=None, stand_still=None):
        """`SearchRule.advance`, with `word_ids` and `beam_ids` (and the attention) of
        `table_slots` per example. A done example stands still whether or not
        `stand_still` says so: CTranslate2 stops decoding it."""
        beam_size = self.beam_size
        self.check_vocabulary_size(logits.shape[-1])
        finished = hypotheses["finished"]
        logits = force_or_forbid_end(logits, step, finished, end_id, self.min_length)
        candidates, accumulated_attention = self._score(hypotheses, logits, attention, end_id)
        num_candidates = candidates["word_ids"].shape[-1]

        def flat(values):
            return tf.reshape(values, [-1, beam_size * num_candidates])

        ranked = tf.math.top_k(flat(candidates["total_log_probs"]), k=2 * beam_size).indices

        def best(values):  # [B, 2 * beam_size], best first
            return tf.gather(flat(values), ranked, batch_dims=1)

        word_ids, log_probs, scores = (best(candidates[key]) for key in
                                       ("word_ids", "total_log_probs", "scores"))
        parents = ranked // num_candidates
        lengths = tf.where(finished, hypotheses["lengths"], hypotheses["lengths"] + 1)
        lengths = tf.gather(tf.reshape(lengths, [-1, beam_size]), parents, batch_dims=1)
        done = self.examples_done(hypotheses)[:, tf.newaxis]
        row_steps = tf.reshape(tf.broadcast_to(step, tf.shape(finished)), [-1, beam_size])
        last_step = row_steps[:, :1] >= self.max_length - 1
        ends = tf.logical_or(tf.equal(word_ids, end_id), last_step)
        in_beam = tf.range(2 * beam_size)[tf.newaxis] < beam_size
        ending = tf.logical_and(tf.logical_and(in_beam, ends), tf.logical_not(done))

        # The set-aside hypotheses: the best `beam_size` of those set aside so far and
        # those ending now (old ones first among equal scores).
        pool_scores = tf.concat([self._per_example(hypotheses["set_aside_scores"]),
                                 tf.where(ending, scores, -float("inf"))[:, :beam_size]], 1)
        pool_log_probs = tf.concat([self._per_example(hypotheses["set_aside_log_probs"]),
                                    log_probs[:, :beam_size]], 1)
        kept = tf.math.top_k(pool_scores, k=beam_size).indices
        old = kept < beam_size
        new = tf.maximum(kept - beam_size, 0)
        set_aside_words = tf.where(old, end_id, tf.gather(word_ids, new, batch_dims=1))
        new_parents = tf.gather(parents, new, batch_dims=1)

        # The beam: the first `beam_size` candidates that do not end with </s> (a done
        # example's hypotheses stay as they are).
        unfinished_first = tf.argsort(tf.cast(tf.equal(word_ids, end_id), tf.int32), axis=1,
                                      stable=True)[:, :beam_size]

        def beam(values, own):
            return tf.where(done, own, tf.gather(values, unfinished_first, batch_dims=1))

        own_slots = tf.range(beam_size)[tf.newaxis]
        beam_words = beam(word_ids, end_id)
        beam_parents = beam(parents, own_slots)
        first_rows = tf.range(tf.shape(beam_parents)[0])[:, tf.newaxis] * beam_size
        parent_rows = tf.reshape(first_rows + beam_parents, [-1])
        new_rows = tf.reshape(first_rows + new_parents, [-1])
        next_hypotheses = {
            "ids": tf.reshape(beam_words, [-1]),
            "finished": tf.gather(finished, parent_rows),
            "log_probs": tf.reshape(beam(log_probs, self._per_example(hypotheses["log_probs"])),
                                    [-1]),
            "scores": tf.reshape(beam(scores, self._per_example(hypotheses["scores"])), [-1]),
            "lengths": tf.reshape(beam(lengths, self._per_example(hypotheses["lengths"])),
                                  [-1]),
            "set_aside_scores": tf.reshape(tf.gather(pool_scores, kept, batch_dims=1), [-1]),
            "set_aside_log_probs": tf.reshape(tf.gather(pool_log_probs, kept, batch_dims=1),
                                              [-1]),
        }
        if accumulated_attention is not None:
            next_hypotheses["accumulated_attention"] = tf.gather(accumulated_attention,
                                                                 parent_rows)
        if "state" in hypotheses:
            next_hypotheses["state"] = tf.nest.map_structure(
                lambda tensor: tf.gather(tensor, parent_rows), new_state)
        next_hypotheses = with_static_shapes(next_hypotheses, hypotheses)
        word_ids = self._with_set_aside(beam_words, set_aside_words)
        beam_ids = self._with_set_aside(beam_parents,
                                        tf.where(old, beam_size + kept, new_parents))
        if attention is not None:
            attention = self._with_set_aside(
                self._per_example(tf.gather(attention, parent_rows)),
                tf.where(old[:, :, tf.newaxis], 0.0,
                         self._per_example(tf.gather(attention, new_rows))))
        return next_hypotheses, word_ids, beam_ids, attention

    def _per_example(self, values):
        """`[B * beam_size, ...] -> [B, beam_size, ...]`."""
        return tf.reshape(values, _shape_ending_as([-1, self.beam_size], values, 1))

    def _with_set_aside(self, beam_values, set_aside_values):
        """The `table_slots` rows of each example, `[B * 2 * beam_size, ...]`: its beam's
        values, then its set-aside hypotheses' (each `[B, beam_size, ...]`)."""
        both = tf.concat([beam_values, set_aside_values], 1)
        return tf.reshape(both, _shape_ending_as([-1], both, 2))


def _shape_ending_as(leading, tensor, axis):
    """The shape `leading` followed by the dimensions of `tensor` from `axis` on: a list of
    ints when these are static (a traced step then holds no op to read them, where
    `keras.ops.shape` would slice the unknown batch dimension all the same)."""
    trailing = tensor.shape[axis:]
    if trailing.is_fully_defined():
        return leading + trailing.as_list()
    return tf.concat([leading, tf.shape(tensor)[axis:]], 0)
