"""kerasnmt: Keras-native neural machine translation."""

# Set before the subpackages are imported: the keras-hub presets record it (kerasnmt.models).
__version__ = "0.1.0"

from kerasnmt import data, decoding, layers, models, training  # noqa: E402
from kerasnmt.decoding import BeamSampler  # noqa: E402
from kerasnmt.models import Translator  # noqa: E402
