"""The files a SavedModel directory must hold, checked before TensorFlow reads it.

TensorFlow reports a directory without its variables as "Failed to find any matching
files for .../variables/variables" followed by a hint about loading on another device,
which says nothing of the cause: a copy that left the `variables` folder behind.
"""

import glob
import os
import re

_SHARD = re.compile(r"variables\.data-(\d+)-of-(\d+)$")


def check_saved_model_directory(path):
    """Refuses a directory that is not a complete SavedModel, naming the file it lacks.

    Args:
        path: the SavedModel directory.

    Raises:
        OSError: one line naming `path` and its missing `saved_model.pb`,
            `variables/variables.index` or variables data shard.

    Examples:
        >>> import tempfile
        >>> path = tempfile.mkdtemp()
        >>> check_saved_model_directory(path)
        Traceback (most recent call last):
        ...
        OSError: ...: not a SavedModel directory (no saved_model.pb)
        >>> open(os.path.join(path, "saved_model.pb"), "wb").close()
        >>> check_saved_model_directory(path)
        Traceback (most recent call last):
        ...
        OSError: ...: the SavedModel's variables are missing (no variables/variables.index): copy the whole exported directory, or export it again
        >>> os.makedirs(os.path.join(path, "variables"))
        >>> for name in ("variables.index", "variables.data-00001-of-00002"):
        ...     open(os.path.join(path, "variables", name), "wb").close()
        >>> check_saved_model_directory(path)
        Traceback (most recent call last):
        ...
        OSError: ...: the SavedModel's variables are missing (no variables/variables.data-00000-of-00002): copy the whole exported directory, or export it again
    """
    if not os.path.isfile(os.path.join(path, "saved_model.pb")):
        raise OSError(f"{path}: not a SavedModel directory (no saved_model.pb)")
    variables = os.path.join(path, "variables")
    missing = None
    if not os.path.isfile(os.path.join(variables, "variables.index")):
        missing = "variables.index"
    else:
        shards = [_SHARD.search(name) for name in
                  glob.glob(os.path.join(glob.escape(variables), "variables.data-*"))]
        counts = {int(shard[2]) for shard in shards if shard}
        count = max(counts, default=1)
        present = {int(shard[1]) for shard in shards if shard and int(shard[2]) == count}
        absent = [index for index in range(count) if index not in present]
        if absent:
            missing = f"variables.data-{absent[0]:05d}-of-{count:05d}"
    if missing is not None:
        raise OSError(f"{path}: the SavedModel's variables are missing (no variables/{missing}): "
                      "copy the whole exported directory, or export it again")
