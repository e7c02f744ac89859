"""Models of kerasnmt: the `TransformerBackbone` network, the `Translator` task, and the
`TranslatorSeq2SeqLM` that keras-hub loads a kerasnmt preset as."""

from kerasnmt.models.transformer_backbone import TransformerBackbone
from kerasnmt.models.translator import Translator
from kerasnmt.models.translator_seq2seq_lm import TranslatorSeq2SeqLM

__all__ = ["TransformerBackbone", "Translator", "TranslatorSeq2SeqLM"]
