"""kerasnmt: Keras-native neural machine translation."""

from kerasnmt import data, layers, models, training
from kerasnmt.models import Translator

__version__ = "0.1.0"
