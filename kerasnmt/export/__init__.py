"""Exports of a trained `Translator`: a SavedModel that translates raw text, with TF
Serving's warm-up requests (`savedmodel.py`, `serving_warmup.py`), a CTranslate2 model
directory (`ctranslate2.py`, `pip install "kerasnmt[ctranslate2]"`) and a keras-hub preset
directory (`keras_hub_preset.py`), each written atomically (`directories.py`); `formats.py`
says which options of `kerasnmt export` each format takes."""

from kerasnmt.export.ctranslate2 import export_ctranslate2
from kerasnmt.export.directories import next_version_path, write_atomically
from kerasnmt.export.formats import EXPORT_FORMATS
from kerasnmt.export.keras_hub_preset import save_preset
from kerasnmt.export.savedmodel import (
    DEFAULT_BATCH_SIZE_BUCKETS,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
    N_BEST_SIGNATURE,
    SAVEDMODEL_QUANTIZATIONS,
    SERVING_SIGNATURE,
    export_translator,
    quantize_dense_layers,
)
from kerasnmt.export.serving_warmup import WARMUP_FILE, warm_up

__all__ = [
    "DEFAULT_BATCH_SIZE_BUCKETS",
    "DEFAULT_MAXIMUM_SOURCE_LENGTH",
    "EXPORT_FORMATS",
    "N_BEST_SIGNATURE",
    "SAVEDMODEL_QUANTIZATIONS",
    "SERVING_SIGNATURE",
    "WARMUP_FILE",
    "export_ctranslate2",
    "export_translator",
    "next_version_path",
    "quantize_dense_layers",
    "save_preset",
    "warm_up",
    "write_atomically",
]
