"""Models of kerasnmt: the `TransformerBackbone` network and the `Translator` task."""

from kerasnmt.models.transformer_backbone import TransformerBackbone
from kerasnmt.models.translator import Translator

__all__ = ["TransformerBackbone", "Translator"]
