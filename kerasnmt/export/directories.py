"""Where an export is written: a directory replaced atomically (`write_atomically`, from
`kerasnmt.data.result_directory`), and TF Serving's numbered versions of a model base path."""

import os

from kerasnmt.data.result_directory import write_atomically

__all__ = ["next_version_path", "write_atomically"]


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

