"""The formats `kerasnmt export --format` writes, each with the options it takes.

A format declares the optional arguments of `kerasnmt export` it takes and the weight
types of its `--quantization`; the command line lists the formats, and refuses, before
anything is read, an option the chosen format does not take, naming the formats that
take it.

Examples:
    >>> sorted(EXPORT_FORMATS)
    ['ctranslate2', 'keras-hub', 'savedmodel']
    >>> EXPORT_FORMATS["ctranslate2"].refusals({"force": True, "next_version": True})
    ['--next-version does not apply to --format ctranslate2 (it goes with --format savedmodel)']
    >>> EXPORT_FORMATS["keras-hub"].quantization_refusal("int8")
    '--quantization int8 goes with --format savedmodel, ctranslate2 (--format keras-hub takes none)'
"""

import dataclasses

from kerasnmt.export.ctranslate2 import QUANTIZATIONS
from kerasnmt.export.savedmodel import SAVEDMODEL_QUANTIZATIONS

# The optional arguments of `kerasnmt export` (argparse destinations) that a format may
# take or refuse; the model and decoding-option arguments every format takes.
FORMAT_OPTIONS = ("force", "next_version", "with_alignments", "early_exit", "shortlist",
                  "no_xla", "no_warmup")


@dataclasses.dataclass(frozen=True)
class ExportFormat:
    """One export format: its name, what it is, the options and weight types it takes."""

    name: str
    description: str
    options: frozenset
    quantizations: tuple

    def refusals(self, given):
        """One message per option of `given` (`{destination: value}`) that is set and
        that this format does not take."""
        return [
            f"{_flag(option)} does not apply to --format {self.name} (it goes with "
            f"--format {', '.join(_formats_taking(option))})"
            for option, value in given.items()
            if value and option not in self.options
        ]

    def quantization_refusal(self, quantization):
        """The message for a `--quantization` this format does not write, else None."""
        if quantization is None or quantization in self.quantizations:
            return None
        writers = [name for name, export_format in EXPORT_FORMATS.items()
                   if quantization in export_format.quantizations]
        return (f"--quantization {quantization} goes with --format {', '.join(writers)} "
                f"(--format {self.name} takes {', '.join(self.quantizations) or 'none'})")


def _flag(option):
    return "--" + option.replace("_", "-")


def _formats_taking(option):
    return [name for name, export_format in EXPORT_FORMATS.items()
            if option in export_format.options]


EXPORT_FORMATS = {
    export_format.name: export_format
    for export_format in (
        ExportFormat(
            "savedmodel", "a SavedModel that translates raw text (TF Serving, Python)",
            frozenset(FORMAT_OPTIONS) - {"force"}, SAVEDMODEL_QUANTIZATIONS),
        ExportFormat(
            "ctranslate2", "a CTranslate2 model directory (pip install 'kerasnmt[ctranslate2]')",
            frozenset({"force"}), QUANTIZATIONS),
        ExportFormat(
            "keras-hub", "a keras-hub preset directory (keras_hub.models.Seq2SeqLM."
            "from_preset, in a process that has imported kerasnmt)",
            frozenset({"force", "early_exit", "no_xla"}), ()),
    )
}
# Every weight type some format writes, for `--quantization`'s choices.
ALL_QUANTIZATIONS = tuple(dict.fromkeys(
    quantization for export_format in EXPORT_FORMATS.values()
    for quantization in export_format.quantizations))
