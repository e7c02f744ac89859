"""Which search rule decodes with a sampler's options, chosen in one place for
`kerasnmt.decoding.BeamSampler` and `kerasnmt.decoding.PenalizedBeamSampler`."""

from kerasnmt.decoding.search.beam import BeamRanking
from kerasnmt.decoding.search.greedy import Greedy
from kerasnmt.decoding.search.set_aside import SetAsideRanking
from kerasnmt.decoding.search.top_k import TopKSampling


def choose_rule(beam_size, top_k=1, temperature=1.0, seed=None, finished_hypotheses="in_beam",
                max_length=None, **options):
    """The rule of each step of a search: `SetAsideRanking` for
    `finished_hypotheses="set_aside"`, `TopKSampling` when `top_k != 1`, else `Greedy` for
    one hypothesis per example and `BeamRanking` for more.

    Args:
        beam_size: hypotheses kept per example.
        top_k: 1 for deterministic search, else the candidates sampled among (0: all).
        temperature: divides the scores before sampling (`top_k != 1`).
        seed: the sampling seed, an int or `None`.
        finished_hypotheses: `"in_beam"` or `"set_aside"` (see `BeamSampler`).
        max_length: the steps a search takes at most; needed by `"set_aside"`.
        **options: the other `SearchRule` arguments (`n_best`, `min_length`,
            `length_penalty`, ...). The set-aside rule takes neither `freeze_finished_scores`
            (its scores are always frozen) nor `early_exit` (it ends by its own rule), so
            they are dropped for it.

    Returns:
        A `kerasnmt.decoding.search.SearchRule`.

    Examples:
        >>> type(choose_rule(beam_size=1, n_best=1)).__name__
        'Greedy'
        >>> rule = choose_rule(beam_size=4, top_k=10, temperature=0.5, seed=7)
        >>> type(rule).__name__, rule.top_k, rule.beam_size
        ('TopKSampling', 10, 4)
        >>> type(choose_rule(4, finished_hypotheses="set_aside", max_length=9,
        ...                  early_exit=False)).__name__
        'SetAsideRanking'
    """
    if finished_hypotheses == "set_aside":
        options.pop("freeze_finished_scores", None)
        options.pop("early_exit", None)
        return SetAsideRanking(beam_size, max_length, **options)
    if top_k != 1:
        return TopKSampling(beam_size, top_k, temperature, seed, **options)
    if beam_size == 1:
        return Greedy(**options)
    return BeamRanking(beam_size, **options)
