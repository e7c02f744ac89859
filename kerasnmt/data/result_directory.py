"""A directory written whole or not at all: built beside its path, then renamed to it."""

import glob
import os
import shutil
import tempfile


def write_atomically(write, path):
    """Calls `write(directory)` on a new temporary directory beside `path`, then renames it
    to `path`.

    An existing `path` is replaced only once the new directory is complete: a failure at
    any point (an exception from `write` included) leaves it as it was, and removes the
    temporary directory. The temporary directories a killed write of the same `path` left
    (`.NAME.tmp-*`) are removed first.

    Examples:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "model")
        >>> def write(directory):
        ...     with open(os.path.join(directory, "weights"), "w") as file:
        ...         file.write("1 2 3")
        >>> write_atomically(write, path)
        >>> os.listdir(path), sorted(os.listdir(os.path.dirname(path)))
        (['weights'], ['model'])
    """
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    # A killed export of this path left its partial directory: removed (one export of a
    # path at a time). A `.NAME.old-*` is never removed: it may hold the last complete one.
    for stale in glob.glob(os.path.join(glob.escape(parent),
                                        f".{glob.escape(os.path.basename(path))}.tmp-*")):
        shutil.rmtree(stale, ignore_errors=True)
    temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        write(temporary)
        if os.path.exists(path):
            previous = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-", dir=parent)
            os.rmdir(previous)
            os.rename(path, previous)
            try:
                os.rename(temporary, path)
            except BaseException:
                os.rename(previous, path)
                raise
            shutil.rmtree(previous, ignore_errors=True)
        else:
            os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
