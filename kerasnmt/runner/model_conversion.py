"""`kerasnmt convert`: a model trained by another toolkit, as a kerasnmt run directory."""

from kerasnmt.converters import convert_opennmt_tf

# The toolkits `convert` reads, each with its converter.
CONVERTERS = {"opennmt-tf": convert_opennmt_tf}


def convert(toolkit, config, output, checkpoint=None, model_type=None, num_heads=None,
            force=False):
    """Convert a model trained by another toolkit into a kerasnmt run directory.

    `kerasnmt convert opennmt-tf`: an OpenNMT-tf 2.x Transformer (its YAML configuration,
    paths resolved from the working directory as onmt-main resolves them, and its latest
    checkpoint) becomes --output: run.yml, the vocabularies and a checkpoint at the same
    step, which translate --config, evaluate, export and train use as they are. See
    docs/migrating_from_opennmt_tf.md.

    Args:
        toolkit: the toolkit that trained the model (opennmt-tf: an OpenNMT-tf 2.x Transformer)
        config: the toolkit's run configuration (OpenNMT-tf's YAML)
        output: the kerasnmt run directory to write
        checkpoint: a checkpoint or a directory of them (default: the latest of the
            configuration's model_dir)
        model_type: the OpenNMT-tf catalogue model (Transformer, TransformerRelative,
            TransformerBig, ...)
        num_heads: attention heads (an absolute-position model's variables do not tell them)
        force: replace an --output that is not empty

    Returns:
        The converter's `Conversion` (what was written and left out).

    Examples:
        >>> sorted(CONVERTERS)
        ['opennmt-tf']
    """
    if toolkit not in CONVERTERS:
        raise ValueError(f"convert: no converter for {toolkit!r}; "
                         f"one of {', '.join(sorted(CONVERTERS))}")
    conversion = CONVERTERS[toolkit](config, output, checkpoint=checkpoint,
                                     model_type=model_type, num_heads=num_heads, force=force)
    print(conversion.summary(), flush=True)
    return conversion
