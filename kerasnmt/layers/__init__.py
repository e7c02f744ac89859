"""Public Keras layers of kerasnmt."""

from kerasnmt.layers.dropout import Dropout
from kerasnmt.layers.relative_multi_head_attention import RelativeMultiHeadAttention
from kerasnmt.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding
from kerasnmt.layers.transformer_decoder import TransformerDecoder
from kerasnmt.layers.transformer_decoder_layer import TransformerDecoderLayer
from kerasnmt.layers.transformer_encoder import TransformerEncoder
from kerasnmt.layers.transformer_encoder_layer import TransformerEncoderLayer
from kerasnmt.layers.pharaoh_alignment import PharaohAlignment
from kerasnmt.layers.sentencepiece_tokenizer import SentencePieceTokenizer
from kerasnmt.layers.translation_preprocessor import TranslationPreprocessor
from kerasnmt.layers.vocab_lookup import VocabLookup
from kerasnmt.layers.whitespace_tokenizer import WhitespaceTokenizer

__all__ = [
    "Dropout",
    "RelativeMultiHeadAttention",
    "SinusoidalPositionEncoding",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "PharaohAlignment",
    "SentencePieceTokenizer",
    "TranslationPreprocessor",
    "VocabLookup",
    "WhitespaceTokenizer",
]
