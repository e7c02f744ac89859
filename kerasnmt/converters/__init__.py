"""Converters of models trained by other toolkits into kerasnmt run directories."""

from kerasnmt.converters.conversion_error import ConversionError
from kerasnmt.converters.opennmt_tf import Conversion, convert_opennmt_tf

__all__ = ["Conversion", "ConversionError", "convert_opennmt_tf"]
