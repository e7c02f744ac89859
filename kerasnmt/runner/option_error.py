"""Options of a command that do not go together, or a value out of range."""


class OptionError(ValueError):
    """Options given to a runner function that do not go together or are out of range.

    A `ValueError`, as any bad input; the `kerasnmt` command reports it as a usage error:
    the subcommand's usage line, then the message (which names the options as the
    command line spells them, `--target-size`), and exit status 2.

    Examples:
        >>> error = OptionError("--tolerance needs --target-size")
        >>> isinstance(error, ValueError), str(error)
        (True, '--tolerance needs --target-size')
    """
