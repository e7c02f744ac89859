"""`python -m kerasnmt.config` prints the configuration reference of `docs/training.md`.

Examples:
    >>> from kerasnmt.config.reference import config_reference
    >>> config_reference().startswith("### Top level")
    True
"""

from kerasnmt.config.reference import config_reference

if __name__ == "__main__":
    print(config_reference(), end="")
