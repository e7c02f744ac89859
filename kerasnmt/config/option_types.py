"""The kinds of values a configuration option takes, and the option itself.

Each kind has `describe()` (for the reference page and the error messages) and
`check(value, base_dir)`, which returns the value to keep or raises `Invalid` with what
was expected.

Examples:
    >>> Integer(minimum=1).check(8, base_dir=".")
    8
    >>> Number(0, 1, closed=(True, False)).describe()
    'a number in [0, 1)'
    >>> try:
    ...     Choice("examples", "tokens").check("token", base_dir=".")
    ... except Invalid as error:
    ...     print(error)
    expected one of examples, tokens, got 'token' (did you mean 'tokens'?)
"""

import dataclasses
import difflib
import os
import re
from typing import Any


class Invalid(Exception):
    """A value that does not fit its option; the message says what was expected."""


def got(value):
    """The end of an error message: `got 5`, `got 'x'`, `got true` (YAML's spelling)."""
    return f"got {value!r}" if not isinstance(value, bool) else f"got {str(value).lower()}"


# PyYAML follows YAML 1.1, where `1e-4` (no decimal point) is a string, not a float.
_SCIENTIFIC_NOTATION = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


class Kind:
    nullable = False

    def describe(self):
        text = self._describe()
        return f"{text}, or null" if self.nullable else text

    def check(self, value, base_dir):
        if value is None:
            if self.nullable:
                return None
            raise Invalid(f"expected {self.describe()}, got null")
        return self._check(value, base_dir)


class Integer(Kind):
    def __init__(self, minimum=None, nullable=False):
        self.minimum = minimum
        self.nullable = nullable

    def _describe(self):
        return "an integer" if self.minimum is None else f"an integer >= {self.minimum}"

    def _check(self, value, base_dir):
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        if self.minimum is not None and value < self.minimum:
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        return value


class Number(Kind):
    """A float in a range; `closed` says which ends belong to it."""

    def __init__(self, minimum=None, maximum=None, closed=(True, True), nullable=False):
        self.minimum = minimum
        self.maximum = maximum
        self.closed = closed
        self.nullable = nullable

    def _describe(self):
        if self.minimum is not None and self.maximum is not None:
            left = "[" if self.closed[0] else "("
            right = "]" if self.closed[1] else ")"
            return f"a number in {left}{self.minimum}, {self.maximum}{right}"
        if self.minimum is not None:
            return f"a number {'>=' if self.closed[0] else '>'} {self.minimum}"
        return "a number"

    def _check(self, value, base_dir):
        if isinstance(value, str) and _SCIENTIFIC_NOTATION.match(value.strip()):
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        too_small = self.minimum is not None and (
            value < self.minimum or (value == self.minimum and not self.closed[0])
        )
        too_large = self.maximum is not None and (
            value > self.maximum or (value == self.maximum and not self.closed[1])
        )
        if too_small or too_large:
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        return float(value)


class Boolean(Kind):
    def _describe(self):
        return "true or false"

    def _check(self, value, base_dir):
        if not isinstance(value, bool):
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        return value


class Choice(Kind):
    """One of a few strings; `None` among the choices makes the option nullable."""

    def __init__(self, *choices, case_sensitive=True):
        self.choices = [choice for choice in choices if choice is not None]
        self.nullable = None in choices
        self.case_sensitive = case_sensitive

    def _describe(self):
        return "one of " + ", ".join(self.choices)

    def _check(self, value, base_dir):
        if isinstance(value, str):
            for choice in self.choices:
                if value == choice or (not self.case_sensitive and value.lower() == choice):
                    return choice
        message = f"expected {self.describe()}, {got(value)}"
        if isinstance(value, str):
            by_lowercase = {choice.lower(): choice for choice in self.choices}
            close = difflib.get_close_matches(value.lower(), by_lowercase, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {by_lowercase[close[0]]!r}?)"
        raise Invalid(message)


class Text(Kind):
    """A non-empty string, or null."""

    nullable = True

    def _describe(self):
        return "a string"

    def _check(self, value, base_dir):
        if not isinstance(value, str) or not value:
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        return value


class ChoiceList(Choice):
    """One of the choices or a list of them; kept as a list."""

    def _describe(self):
        return "one or a list of " + ", ".join(self.choices)

    def _check(self, value, base_dir):
        checked = []
        for item in value if isinstance(value, list) else [value]:
            checked.append(super()._check(item, base_dir))
        return checked


def _resolve(path, base_dir):
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(path)))


class Path(Kind):
    """A file (or, with `directory=True`, a directory that may not exist yet)."""

    nullable = True

    def __init__(self, directory=False):
        self.directory = directory

    def _describe(self):
        return "a directory path" if self.directory else "a path to an existing file"

    def _check(self, value, base_dir):
        if not isinstance(value, str) or not value:
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        path = _resolve(value, base_dir)
        if self.directory:
            if os.path.exists(path) and not os.path.isdir(path):
                raise Invalid(f"{path} exists and is not a directory")
        elif not os.path.isfile(path):
            where = "" if os.path.isabs(os.path.expanduser(value)) else f" (relative to {base_dir})"
            raise Invalid(f"file not found: {path}{where}")
        return path


class PathList(Path):
    """One existing file or a list of them (several training corpora); kept as a list."""

    def _describe(self):
        return "a path to an existing file, or a list of them"

    def _check(self, value, base_dir):
        values = value if isinstance(value, list) else [value]
        if not values:
            raise Invalid(f"expected {self.describe()}, got an empty list")
        paths, problems = [], []
        for index, item in enumerate(values):
            try:
                paths.append(super()._check(item, base_dir))
            except Invalid as error:
                problems.append(f"[{index}] {error}" if isinstance(value, list) else str(error))
        if problems:
            raise Invalid("; ".join(problems))
        return paths


class NumberList(Kind):
    nullable = True

    def _describe(self):
        return "a list of numbers > 0"

    def _check(self, value, base_dir):
        positive = Number(minimum=0, closed=(False, True))
        if not isinstance(value, list) or not value:
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        try:
            return [positive.check(item, base_dir) for item in value]
        except Invalid:
            raise Invalid(f"expected {self.describe()}, {got(value)}") from None


class Layers(Kind):
    def _describe(self):
        return "an integer >= 1, or a list [encoder_layers, decoder_layers]"

    def _check(self, value, base_dir):
        one = Integer(minimum=1)
        try:
            if isinstance(value, list) and len(value) == 2:
                return [one.check(item, base_dir) for item in value]
            return one.check(value, base_dir)
        except Invalid:
            raise Invalid(f"expected {self.describe()}, {got(value)}") from None


class Mapping(Kind):
    """Free-form keyword arguments with scalar values (checked against their use later)."""

    def _describe(self):
        return "a mapping of names to values"

    def _check(self, value, base_dir):
        if not isinstance(value, dict):
            raise Invalid(f"expected {self.describe()}, {got(value)}")
        for name, item in value.items():
            if not isinstance(name, str) or isinstance(item, (dict, list)):
                raise Invalid(f"expected {self.describe()}, got {name!r}: {item!r}")
        return dict(value)


@dataclasses.dataclass(frozen=True)
class Option:
    """An option of the schema: its default, the kind of value it takes, and its meaning
    (the text of the reference page)."""

    default: Any
    kind: Kind
    doc: str
