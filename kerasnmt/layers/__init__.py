"""Public Keras layers of kerasnmt."""

from kerasnmt.layers.whitespace_tokenizer import WhitespaceTokenizer

__all__ = [
    "WhitespaceTokenizer",
]
