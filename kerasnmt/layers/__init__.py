"""Public Keras layers of kerasnmt."""

from kerasnmt.layers.sentencepiece_tokenizer import SentencePieceTokenizer
from kerasnmt.layers.vocab_lookup import VocabLookup
from kerasnmt.layers.whitespace_tokenizer import WhitespaceTokenizer

__all__ = [
    "SentencePieceTokenizer",
    "VocabLookup",
    "WhitespaceTokenizer",
]
