"""Greedy search's rule: each example keeps one hypothesis, extended by its best word.

Examples:
    >>> import tensorflow as tf
    >>> Greedy().choose(tf.constant([[-1.2, -0.4, -2.3]])).numpy()
    array([[1]], dtype=int32)
"""

from kerasnmt.decoding.search.beam import BeamRanking


class Greedy(BeamRanking):
    """OpenNMT-tf's `GreedySearch` with its `BestSampler`: `BeamRanking` with one hypothesis
    per example, which ranks the plain log-probabilities (the penalties only make the
    returned score). The arguments are `SearchRule`'s but `beam_size`."""

    def __init__(self, **kwargs):
        super().__init__(beam_size=1, **kwargs)
