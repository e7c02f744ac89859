"""Where an export is written: a directory replaced atomically (`write_atomically`, from
`kerasnmt.data.result_directory`), an existing one replaced only when asked, and TF
Serving's numbered versions of a model base path."""

import os

from kerasnmt.data.result_directory import write_atomically

__all__ = ["check_output", "next_version_path", "write_atomically"]


def next_version_path(base_path):
    """`base_path/N` for the next TF Serving version number N (1 if there is none).

    Examples:
        >>> import tempfile
        >>> base = tempfile.mkdtemp()
        >>> os.path.basename(next_version_path(base))
        '1'
    """
    versions = [int(name) for name in os.listdir(base_path) if name.isdigit()] if (
        os.path.isdir(base_path)
    ) else []
    return os.path.join(base_path, str(max(versions, default=0) + 1))


def check_output(path, force=False):
    """A `ValueError` when `path` exists and is not an empty directory, unless `force`.

    Examples:
        >>> import tempfile
        >>> directory = tempfile.mkdtemp()
        >>> check_output(directory)  # empty: written into
        >>> open(os.path.join(directory, "model.bin"), "w").close()
        >>> check_output(directory)
        Traceback (most recent call last):
        ...
        ValueError: ... is not an empty directory: pass force=True (kerasnmt export --force) ...
        >>> check_output(directory, force=True)
    """
    if not force and os.path.lexists(path) and not (
        os.path.isdir(path) and not os.listdir(path)
    ):
        raise ValueError(f"{path} exists and is not an empty directory: pass force=True "
                         "(kerasnmt export --force) to replace it")
