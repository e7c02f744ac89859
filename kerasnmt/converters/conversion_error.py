"""The error of a conversion that cannot be done: bad input, or a model outside kerasnmt."""


class ConversionError(ValueError):
    """A model, checkpoint or configuration that cannot be converted; the message names
    the file, the variable or the key, and what was expected. Nothing has been written.

    Examples:
        >>> str(ConversionError("run.yml: data.source_tokenization: not reproducible"))
        'run.yml: data.source_tokenization: not reproducible'
    """
