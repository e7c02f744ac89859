"""Beam search's rule: each example keeps its `beam_size` best-scored candidates.

Examples:
    >>> import tensorflow as tf
    >>> BeamRanking(beam_size=2).choose(tf.constant([[-1.5, -0.2, -3.0, -0.7]])).numpy()
    array([[1, 3]], dtype=int32)
"""

import tensorflow as tf

from kerasnmt.decoding.search.rule import SearchRule


class BeamRanking(SearchRule):
    """OpenNMT-tf's `BeamSearch` with its `BestSampler`: the `beam_size` best candidates of
    each example are kept, so the beam stays sorted by score. See `SearchRule` for the
    arguments."""

    @property
    def candidates_per_row(self):
        """A row's `beam_size` best words hold any of its candidates that can be kept."""
        return self.beam_size

    def choose(self, scores, seed=None, seed_step=None):
        return tf.math.top_k(scores, k=self.beam_size).indices

    def final_beams(self, scores, batch_size):
        """The first `n_best` slots: the beam is already sorted by score."""
        return tf.tile(tf.range(self.n_best)[tf.newaxis], [batch_size, 1])
