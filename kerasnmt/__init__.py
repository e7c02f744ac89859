"""kerasnmt: Keras-native neural machine translation."""

from kerasnmt import data, decoding, layers, models, training
from kerasnmt.decoding import BeamSampler
from kerasnmt.models import Translator

__version__ = "0.1.0"
