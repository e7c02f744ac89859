"""kerasnmt: Keras-native neural machine translation."""

from kerasnmt import data, layers

__version__ = "0.1.0"
