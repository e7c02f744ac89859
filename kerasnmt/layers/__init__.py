"""Public Keras layers of kerasnmt."""

from kerasnmt.layers.sentencepiece_tokenizer import SentencePieceTokenizer
from kerasnmt.layers.vocab_lookup import VocabLookup
from kerasnmt.layers.whitespace_tokenizer import WhitespaceTokenizer
from kerasnmt.layers.pharaoh_alignment import PharaohAlignment

__all__ = [
    "SentencePieceTokenizer",
    "VocabLookup",
    "WhitespaceTokenizer",
    "PharaohAlignment",
]
