"""`kerasnmt export`: a trained model as a SavedModel that translates raw text, a
CTranslate2 model directory, or a keras-hub preset."""

from kerasnmt.export import (
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
    export_translator,
    next_version_path,
    quantize_dense_layers,
    save_preset,
)
from kerasnmt.export.ctranslate2 import export_ctranslate2
from kerasnmt.export.directories import check_output
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
    """Export a trained model as one SavedModel that translates raw text, or to CTranslate2.

    The SavedModel (see docs/serving.md) takes a batch of raw sentences and returns
    their translations: tokenization, vocabulary lookup, beam search (compiled with XLA
    for a few source widths and batch sizes) and detokenization all run inside it. Its
    signatures: serving_default (source -> translation, score) and n_best (source ->
    translations, scores, log_probs[, alignments]). The decoding options are those of
    the configuration's params section (beam_width, length_penalty, coverage_penalty,
    sampling_topk, sampling_temperature, num_hypotheses, maximum_decoding_length,
    minimum_decoding_length, replace_unknown_target, compact_batch, early_exit,
    shortlist, shortlist_width), fixed in the export. Sources are cut to --maximum-source-length
    tokens. It decodes in float32, whatever train.mixed_precision the model trained in.
    With --quantization int8, the Dense layers' weights are Keras int8 (the
    embeddings stay float). The directory is written under a temporary name and renamed, so an
    interrupted export leaves an existing one intact. Load it with TensorFlow alone (plus
    `import tensorflow_text` for SentencePiece models), or serve it with TF Serving, which
    runs its warm-up requests (one of every compiled shape) before serving it.

    With --format ctranslate2 (pip install 'kerasnmt[ctranslate2]'), OUTPUT is a
    CTranslate2 model directory instead (see docs/ctranslate2.md): the weights (quantized
    with --quantization), the vocabularies, the SentencePiece models and
    translate_options.json, the translate_batch arguments of the same decoding options.
    A model option CTranslate2 cannot express is refused before anything is written, and
    an OUTPUT that is not an empty directory is replaced only with --force.

    With --format keras-hub, OUTPUT is a keras-hub preset directory (see
    docs/keras_hub.md): keras_hub.models.Seq2SeqLM.from_preset(OUTPUT), in a process that
    has imported kerasnmt, loads it, and its generate translates with the same decoding
    options as kerasnmt translate --config. An OUTPUT that is not an empty directory is
    replaced only with --force. The options a format does not take are refused before
    anything is read.

    Args:
        output: the SavedModel directory to write (replaced if it exists); with
            --next-version, the model base path in which version OUTPUT/N is written; with
            --format ctranslate2, the CTranslate2 model directory; with --format
            keras-hub, the preset directory
        config: the run configuration: the model's shape and vocabularies, and the
            decoding options (params); the weights come from its model_dir (a path, or a
            configuration `load_config` returned)
        checkpoint: with --config: a checkpoint (MODEL_DIR/ckpt-STEP) or a directory of
            them (default: MODEL_DIR/avg when it is the newest, else the latest of
            MODEL_DIR)
        model: a model saved with translator.save('FILE.keras'), instead of a
            checkpoint; decoding options come from --config when given, else beam search
            of width 4
        format: a format of kerasnmt.export.formats.EXPORT_FORMATS
        quantization: SavedModel: int8, Keras int8 weights for the Dense layers (the
            embeddings stay float); with --format ctranslate2: CTranslate2's weight type
            (default: float32 as trained)
        force: with --format ctranslate2 or keras-hub: replace an OUTPUT that is not an
            empty directory (a SavedModel export always replaces OUTPUT)
        next_version: write OUTPUT/N with N one more than the highest version number in
            OUTPUT (TF Serving's layout; 1 for a new OUTPUT)
        n_best: hypotheses the n_best signature returns (default: params.num_hypotheses;
            at most params.beam_width)
        with_alignments: add the attention alignments to the n_best signature
        maximum_source_length: sources are cut to this many tokens (default:
            train.maximum_features_length, else 256)
        early_exit: stop a batch's beam search once the n-best hypotheses of every
            sentence have finished (BeamSampler(early_exit=True): often about twice as
            fast; the same results without length or coverage penalty, possibly slightly
            different with them) instead of when every hypothesis has, as OpenNMT-tf
            does; as params.early_exit: true
        shortlist: decode over this lexical shortlist (kerasnmt build-shortlist) instead
            of params.shortlist: each batch over the target tokens its source tokens may
            translate to (faster; translations may differ)
        no_xla: do not compile the decoding with XLA
        no_warmup: SavedModel: do not write TF Serving's warm-up file
            (assets.extra/tf_serving_warmup_requests: a request of every compiled shape,
            run when the model is loaded)

    Returns:
        The directory written.

    Raises:
        OptionError: an option the format does not take, or no model.

    Examples:
        >>> export("exported", config="run.yml", format="ctranslate2", no_xla=True)
        Traceback (most recent call last):
        ...
        kerasnmt.runner.option_error.OptionError: --no-xla does not apply to --format ctranslate2 (it goes with --format savedmodel, keras-hub)
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
    if format == "keras-hub":
        return _export_keras_hub(output, config, checkpoint, model, force, n_best,
                                 maximum_source_length, early_exit, no_xla)
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


def _export_keras_hub(output, config, checkpoint, model, force, n_best, maximum_source_length,
                      early_exit, no_xla):
    """`export(format="keras-hub")`: a preset whose `generate` decodes as `kerasnmt
    translate` does with the same configuration."""
    check_output(output, force)
    translator, config = load_model_for_decoding(config, checkpoint, model)
    check_n_best(n_best, config)
    if config is not None and config["params"]["shortlist"]:
        raise ValueError("params.shortlist cannot be written in a keras-hub preset (a "
                         "vocabulary map file): remove it from the configuration to export "
                         "the model without it")
    options, n_best = _export_options(config, n_best, maximum_source_length)
    save_preset(translator, output, sampler=decoding_sampler(config, n_best, early_exit),
                force=force, jit_compile=not no_xla, **options)
    print(f"Exported to {output}")
    return output
