"""Decoding: the samplers, the step functions they drive, and the one translation path
(raw text -> source features -> decoding by width -> text) that `Translator.translate`,
the SavedModel and keras-hub's `generate` all run.

- `BeamSampler` (`beam_sampler.py`): penalized beam search, greedy search and top-k
  sampling on any step function, built from the search rules and loops of `search/`;
  `PenalizedBeamSampler` (`penalized_beam_sampler.py`) is the same search as a keras-hub
  sampler.
- `BeamSegmentCache` (`beam_segment_cache.py`): the decoder self-attention cache that the
  step function of `decode` (`decode.py`) keeps for a search, whose entries never move.
- `TranslateFunction` (`translate_function.py`) and `translate` (`translate.py`): text in,
  translations out, from `source_features` (`source.py`), the source-width buckets
  (`widths.py`), `decode_function` (`decode_function.py`) and `hypothesis_texts`
  (`text.py`).
"""

from kerasnmt.decoding.beam_sampler import BeamSampler
from kerasnmt.decoding.beam_segment_cache import BeamSegmentCache
from kerasnmt.decoding.decode_call import decode_chunk, decode_function
from kerasnmt.decoding.penalized_beam_sampler import PenalizedBeamSampler
from kerasnmt.decoding.precision import float32_translator
from kerasnmt.decoding.source import source_features
from kerasnmt.decoding.streams import decoding_streams
from kerasnmt.decoding.text import hypothesis_texts
from kerasnmt.decoding.translate import translate
from kerasnmt.decoding.translate_function import TranslateFunction
from kerasnmt.decoding.widths import (
    decoding_length_limit,
    decoding_steps,
    source_width_buckets,
)

__all__ = [
    "BeamSampler",
    "BeamSegmentCache",
    "PenalizedBeamSampler",
    "TranslateFunction",
    "decode_chunk",
    "decode_function",
    "decoding_length_limit",
    "decoding_steps",
    "decoding_streams",
    "float32_translator",
    "hypothesis_texts",
    "source_features",
    "source_width_buckets",
    "translate",
]
