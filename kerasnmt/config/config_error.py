"""The error that reports every mistake of a run configuration at once."""


class ConfigError(ValueError):
    """Mistakes in a run configuration.

    Args:
        source: the configuration file (or a description of where the values came from).
        errors: one message a mistake, each starting with its key path.

    Examples:
        >>> error = ConfigError("run.yml", ["train.batch_size: expected an integer >= 1, got 0"])
        >>> print(error)
        run.yml: 1 error in the configuration:
          train.batch_size: expected an integer >= 1, got 0
    """

    def __init__(self, source, errors):
        self.source = source
        self.errors = list(errors)
        count = len(self.errors)
        lines = "\n".join(f"  {error}" for error in self.errors)
        super().__init__(
            f"{source}: {count} error{'s' if count != 1 else ''} in the configuration:\n{lines}"
        )

