"""kerasnmt: Keras-native neural machine translation."""

# Set before the subpackages are imported: the keras-hub presets record it (kerasnmt.models).
__version__ = "0.2.0"

# First: TensorFlow's C++ start-up notices are filtered only if it starts here.
from kerasnmt import tensorflow_startup  # noqa: E402, F401

from kerasnmt import data, decoding, layers, models, training  # noqa: E402
from kerasnmt.decoding import BeamSampler  # noqa: E402
from kerasnmt.models import Translator  # noqa: E402
