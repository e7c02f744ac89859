"""`kerasnmt export`: a trained model as a SavedModel that translates raw text, or as a
CTranslate2 model directory."""

from kerasnmt.export.formats import EXPORT_FORMATS, FORMAT_OPTIONS
from kerasnmt.runner.decoding_model import (
    check_model_arguments,
    check_n_best,
    decoding_sampler,
    load_model_for_decoding,
)
from kerasnmt.runner.option_error import OptionError
from kerasnmt.runner.run_model import build_shortlist, decoding_options


def export(output, config=None, checkpoint=None, model=None, format="savedmodel",
           quantization=None, force=False, next_version=False, n_best=None,
           with_alignments=False, maximum_source_length=None, early_exit=False,
           shortlist=None, no_xla=False, no_warmup=False):
    """Exports the model of a run (or a `.keras` file) in one of `EXPORT_FORMATS`.

    The options a format does not take are refused before anything is read
    (`kerasnmt export --help` says what each does).

    Args:
        output: the directory to write (with `next_version`, the model base path).
        config: the run configuration (path or dictionary): the model and its decoding
            options; the weights come from its `model_dir`.
        checkpoint: with `config`, a checkpoint or a directory of them.
        model: a `.keras` file instead of a checkpoint.
        format: a name of `kerasnmt.export.formats.EXPORT_FORMATS`.
        quantization: a weight type the format writes, or None.
        force: CTranslate2: replace an `output` that is not an empty directory.
        next_version: SavedModel: write `output/N`, N the next TF Serving version.
        n_best: hypotheses of the n_best signature (default `params.num_hypotheses`).
        with_alignments: SavedModel: add the attention alignments.
        maximum_source_length: sources are cut to this many tokens.
        early_exit: SavedModel: stop a beam once every sentence's n-best finished.
        shortlist: SavedModel: a lexical shortlist file instead of `params.shortlist`.
        no_xla: SavedModel: do not compile the decoding with XLA.
        no_warmup: SavedModel: write no TF Serving warm-up requests.

    Returns:
        The directory written.

    Raises:
        OptionError: an option the format does not take, or no model.

    Examples:
        >>> export("exported", config="run.yml", format="ctranslate2", no_xla=True)
        Traceback (most recent call last):
        ...
        kerasnmt.runner.option_error.OptionError: --no-xla does not apply to --format ctranslate2 (it goes with --format savedmodel)
    """
    check_model_arguments(config, checkpoint, model)
    export_format = EXPORT_FORMATS[format]
    given = {"force": force, "next_version": next_version, "with_alignments": with_alignments,
             "early_exit": early_exit, "shortlist": shortlist, "no_xla": no_xla,
             "no_warmup": no_warmup}
    refusals = export_format.refusals({option: given[option] for option in FORMAT_OPTIONS})
    refusals.append(export_format.quantization_refusal(quantization))
    if any(refusals):
        raise OptionError("; ".join(filter(None, refusals)))
    if format == "ctranslate2":
        return _export_ctranslate2(output, config, checkpoint, model, quantization, force,
                                   n_best, maximum_source_length)
    from kerasnmt.export import export_translator, next_version_path, quantize_dense_layers

    translator, config = load_model_for_decoding(config, checkpoint, model)
    if quantization:
        quantize_dense_layers(translator, quantization)
    check_n_best(n_best, config)
    options, n_best = _export_options(config, n_best, maximum_source_length)
    path = next_version_path(output) if next_version else output
    export_translator(
        translator, path, sampler=decoding_sampler(config, n_best, early_exit),
        with_alignments=with_alignments, jit_compile=not no_xla,
        shortlist=build_shortlist(config, translator.preprocessor, shortlist),
        warmup=not no_warmup,
        **options,
    )
    print(f"Exported to {path}")
    return path


def _export_options(config, n_best, maximum_source_length):
    """The options both export formats take from the configuration (or None) and the
    command line, and the number of hypotheses."""
    from kerasnmt.export import DEFAULT_MAXIMUM_SOURCE_LENGTH

    options = decoding_options(config) if config is not None else {}
    if maximum_source_length:
        options["maximum_source_length"] = maximum_source_length
    options.setdefault("maximum_source_length", DEFAULT_MAXIMUM_SOURCE_LENGTH)
    options["replace_unknown_target"] = bool(
        config and config["params"]["replace_unknown_target"])
    n_best = n_best or (config["params"]["num_hypotheses"] if config else 1)
    return options, n_best


def _export_ctranslate2(output, config, checkpoint, model, quantization, force, n_best,
                        maximum_source_length):
    """`export(format="ctranslate2")`: the checks that need no model first."""
    from kerasnmt.export.ctranslate2 import check_output, export_ctranslate2

    try:
        import ctranslate2  # noqa: F401 (checked before the model is read)
    except ImportError:
        raise OptionError("--format ctranslate2 needs the ctranslate2 package: pip install "
                          "'kerasnmt[ctranslate2]'") from None
    check_output(output, force)
    translator, config = load_model_for_decoding(config, checkpoint, model)
    check_n_best(n_best, config)
    if config is not None and config["params"]["shortlist"]:
        raise ValueError(
            "params.shortlist cannot be exported to CTranslate2 (its vocabulary maps decode "
            "over other target tokens, see docs/ctranslate2.md): remove it from the "
            "configuration to export the model without it"
        )
    options, n_best = _export_options(config, n_best, maximum_source_length)
    export_ctranslate2(translator, output, quantization=quantization,
                       sampler=decoding_sampler(config, n_best), force=force, **options)
    print(f"Exported to {output}")
    return output
