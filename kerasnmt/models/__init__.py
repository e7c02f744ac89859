"""Models of kerasnmt."""

from kerasnmt.models.translator import Translator

__all__ = ["Translator"]
