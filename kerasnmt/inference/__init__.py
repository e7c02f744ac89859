"""The one translation path: raw text -> source features -> decoding by width -> text,
shared by `Translator.translate` and the exported SavedModel."""

from kerasnmt.inference.decoding import decode_chunk, decode_function
from kerasnmt.inference.precision import float32_translator
from kerasnmt.inference.source import source_features
from kerasnmt.inference.streams import decoding_streams
from kerasnmt.inference.text import hypothesis_texts
from kerasnmt.inference.translate import translate
from kerasnmt.inference.translate_function import TranslateFunction
from kerasnmt.inference.widths import (
    decoding_length_limit,
    decoding_steps,
    source_width_buckets,
)

__all__ = [
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
