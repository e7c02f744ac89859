"""The configuration reference of `docs/training.md`, rendered from the schema.

Examples:
    >>> print(config_reference().splitlines()[0])
    ### Top level
"""

from kerasnmt.config.schema import SCHEMA, walk


def _format_default(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_default(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_format_default(v) for v in value) + "]"
    return str(value)


def config_reference():
    """Renders every option with its default, accepted values and meaning as Markdown.

    `docs/training.md` carries this text between its `BEGIN`/`END` markers; a test checks
    that the two agree.

    Returns:
        The Markdown text: one table a section.
    """
    lines = []
    for section, entry in SCHEMA.items():
        if isinstance(entry, dict):
            title, options, prefix = f"`{section}`", entry, f"{section}."
        else:
            title, options, prefix = "Top level", {section: entry}, ""
        lines += [f"### {title}", "", "| key | default | accepted values | meaning |"]
        lines.append("|---|---|---|---|")
        for path, option in walk(options, prefix=prefix):
            lines.append(
                f"| `{path}` | `{_format_default(option.default)}` | "
                f"{option.kind.describe()} | {option.doc} |"
            )
        lines.append("")
    return "\n".join(lines)
