"""Sampling's rule: each example draws its `beam_size` candidates among its `top_k` best.

Examples:
    >>> import tensorflow as tf
    >>> rule = TopKSampling(beam_size=1, top_k=2, seed=3)
    >>> scores = tf.constant([[-9.0, -0.1, -0.2, -9.0]])  # draws word 1 or 2
    >>> chosen = rule.choose(scores, rule.base_seed(), seed_step=0)
    >>> chosen.numpy().item() in (1, 2)
    True
"""

import tensorflow as tf

from kerasnmt.decoding.search.rule import SearchRule

# The seeds of `tf.random`'s stateless ops are int32.
SEED_RANGE = (-(2**31), 2**31)


class TopKSampling(SearchRule):
    """OpenNMT-tf's `RandomSampler` in `BeamSearch` (or in `GreedySearch` when
    `beam_size=1`): `beam_size` candidates are drawn, with replacement, from the softmax of
    each example's `top_k` best scores divided by `temperature`.

    Args:
        beam_size: hypotheses kept per example.
        top_k: the candidates drawn among; 0 for all of them.
        temperature: the scores are divided by it before the softmax.
        seed: an int for reproducible draws (stateless random ops, each step's seed folded
            in from it), or `None` for a new seed at each search.
        **kwargs: the other arguments of `SearchRule`.
    """

    def __init__(self, beam_size, top_k, temperature=1.0, seed=None, **kwargs):
        super().__init__(beam_size, **kwargs)
        self.top_k = top_k
        self.temperature = temperature
        self.seed = seed

    @property
    def candidates_per_row(self):
        """A row's `top_k` best words hold any of its candidates that can be drawn."""
        return self.top_k

    def check_vocabulary_size(self, vocab_size):
        super().check_vocabulary_size(vocab_size)
        if self.top_k > self.beam_size * vocab_size:
            raise ValueError(
                f"BeamSampler: top_k ({self.top_k}) is larger than beam_size * vocabulary "
                f"size ({self.beam_size} * {vocab_size})"
            )

    def base_seed(self):
        if self.seed is None:
            return tf.random.uniform([2], maxval=SEED_RANGE[1] - 1, dtype=tf.int32)
        return tf.constant([self.seed, 0], tf.int32)

    def choose(self, scores, seed=None, seed_step=None):
        """Draws from the `top_k` best `scores`; `seed_step` is folded into `seed`."""
        if self.top_k == 0:
            candidates, candidate_ids = scores, None
        else:
            candidates, candidate_ids = tf.math.top_k(scores, k=self.top_k)
        draws = tf.random.stateless_categorical(
            candidates / self.temperature,
            self.beam_size,
            seed=tf.random.experimental.stateless_fold_in(seed, seed_step),
            dtype=tf.int32,
        )
        if candidate_ids is None:
            return draws
        return tf.gather(candidate_ids, draws, batch_dims=1)

    def final_beams(self, scores, batch_size):
        """The `n_best` best-scored slots: the draws leave the beam unsorted."""
        return tf.math.top_k(scores, k=self.n_best).indices
