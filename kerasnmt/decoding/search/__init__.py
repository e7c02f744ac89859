"""The parts of `kerasnmt.decoding.BeamSampler`: the search rules (one step of a search)
and the loops that run them.

- `SearchRule` (`rule.py`), with `BeamRanking` (`beam.py`), `Greedy` (`greedy.py`),
  `TopKSampling` (`top_k.py`) and `SetAsideRanking` (`set_aside.py`); the score's parts are
  in `scoring.py`; `choose_rule` (`rule_choice.py`) picks one for a sampler's options.
- `PlainLoop` (`plain_loop.py`), `CompactingLoop` (`compacting_loop.py`) and `SlotLoop`
  (`slot_loop.py`).

Examples:
    >>> rule = TopKSampling(beam_size=1, top_k=10, temperature=0.8, seed=3)
    >>> rule.candidates_per_row  # the best words of each row that are scored
    10
"""

from kerasnmt.decoding.search.beam import BeamRanking
from kerasnmt.decoding.search.compacting_loop import CompactingLoop
from kerasnmt.decoding.search.greedy import Greedy
from kerasnmt.decoding.search.plain_loop import PlainLoop
from kerasnmt.decoding.search.rule import SearchRule
from kerasnmt.decoding.search.set_aside import SetAsideRanking
from kerasnmt.decoding.search.slot_loop import SlotLoop
from kerasnmt.decoding.search.top_k import TopKSampling

__all__ = [
    "BeamRanking",
    "CompactingLoop",
    "Greedy",
    "PlainLoop",
    "SearchRule",
    "SetAsideRanking",
    "SlotLoop",
    "TopKSampling",
]
