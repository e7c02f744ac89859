"""A persistent XLA compilation cache, kept between kerasnmt processes.

Most of a cold `kerasnmt translate` is XLA compiling the decoding, one program for each
source width: 17.7 of the 24.9 s that 100 sentences took with the quickstart model
(2026-12-03). TensorFlow can save each compiled program to a directory and load it in the
next process instead of compiling it again (its `TF_XLA_FLAGS` flag
`--tf_xla_persistent_cache_directory`): the same command then took 16 s instead of 25
(2026-12-04, 2 cores with AVX-512). Set the environment variable `KERASNMT_XLA_CACHE` to a
directory and every process that imports kerasnmt before TensorFlow uses it
(`kerasnmt.tensorflow_startup` calls `use_cache`); a process whose `TF_XLA_FLAGS` already
names a cache directory keeps its own. It is not on by default: TensorFlow 2.21 logs two
error lines for each program it loads (it tries to read the file as text first, and it
compares the CPU features the program was compiled for with the host's, tuning features
included) although the program loads and runs correctly.

TensorFlow trusts what it finds there: a damaged file fails the decoding that reads it
("Read less bytes than requested"), and a program compiled by another TensorFlow version
or for another CPU's instructions must not run at all. So the directory holds a manifest,
`kerasnmt.json`: the TensorFlow version, CPU and `XLA_FLAGS` it was made with, and the
size, modification time and SHA-256 of every program, written at the end of each process.
At start, a directory made by another TensorFlow, on another CPU or with other
`XLA_FLAGS` is emptied, and a recorded program that no longer matches its record is
deleted, each with one warning: translations stay correct, only the compilation time is
lost. A program not recorded yet is kept, and recorded at the end: TensorFlow writes each
one under a temporary name and renames it, so it is complete, written by a process that
is still running or was killed. Processes may share the directory, provided they run the
same TensorFlow with the same `XLA_FLAGS` (give each installation a directory of its own:
a program written while another installation runs is recorded under the maker of
whichever process ends last). At the end of a process, the oldest programs are deleted
while the directory holds more than `MAXIMUM_BYTES`. TensorFlow splits `TF_XLA_FLAGS` at
white space, so a directory whose path has any is refused with a warning.

Examples:
    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> cache_directory({"KERASNMT_XLA_CACHE": directory}) == directory
    True
    >>> cache_directory({}) is None
    True
    >>> cache_directory({"KERASNMT_XLA_CACHE": directory,
    ...                  "TF_XLA_FLAGS": "--tf_xla_persistent_cache_directory=/elsewhere"})
    >>> with open(os.path.join(directory, PREFIX + "__1__2__XLA_CPU_JIT.pb"), "wb") as entry:
    ...     _ = entry.write(b"a compiled program")
    >>> record_entries(directory)        # what the end of a process does
    >>> check_entries(directory)         # the next process: the program matches
    []
    >>> with open(os.path.join(directory, PREFIX + "__1__2__XLA_CPU_JIT.pb"), "wb") as entry:
    ...     _ = entry.write(b"a compiled pro")
    >>> check_entries(directory)         # damaged since: deleted
    ['xla_compile_cache__1__2__XLA_CPU_JIT.pb']
    >>> sorted(os.listdir(directory))
    ['kerasnmt.json']
"""

import atexit
import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import tempfile

ENVIRONMENT_VARIABLE = "KERASNMT_XLA_CACHE"
MANIFEST = "kerasnmt.json"
# TensorFlow's default `--tf_xla_persistent_cache_prefix`: the programs' file names.
PREFIX = "xla_compile_cache"
# The quickstart model's `translate` writes about 15 MB; the warm-up of its SavedModel, whose
# programs hold its weights as constants, 1.8 GB.
MAXIMUM_BYTES = 2 * 2**30
_TENSORFLOW_FLAG = "--tf_xla_persistent_cache_directory"
_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tf-nightly")

logger = logging.getLogger(__name__)


def cache_directory(environ):
    """The cache directory that `environ` (a mapping like `os.environ`) names, or None when
    it names none or `TF_XLA_FLAGS` already names one."""
    if in_use(environ):
        return None
    directory = environ.get(ENVIRONMENT_VARIABLE)
    return os.path.expanduser(directory) if directory else None


def in_use(environ=os.environ):
    """Whether `TF_XLA_FLAGS` in `environ` names a persistent cache directory: after
    `use_cache`, whenever a cache is on, kerasnmt's or the user's own.

    Examples:
        >>> in_use({}), in_use({"TF_XLA_FLAGS": "--tf_xla_persistent_cache_directory=/c"})
        (False, True)
    """
    return f"{_TENSORFLOW_FLAG}=" in environ.get("TF_XLA_FLAGS", "")


def maker():
    """What a cached program depends on besides its own graph: the TensorFlow version, the
    CPU (its model and instruction-set flags, hashed) and the `XLA_FLAGS` it was compiled
    with."""
    version = "unknown"
    for distribution in _TENSORFLOW_DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(distribution)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"tensorflow": version, "cpu": _cpu_fingerprint(),
            "xla_flags": os.environ.get("XLA_FLAGS", "")}


def _cpu_fingerprint():
    """A hash of the first processor's model and flags in /proc/cpuinfo (where there is
    one), else of what `platform` knows."""
    description = f"{platform.machine()} {platform.processor()}"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            lines = [line for line in cpuinfo.read().split("\n\n")[0].splitlines()
                     if line.startswith(("model name", "flags", "Features", "CPU part"))]
        description += "\n".join(lines)
    except OSError:
        pass
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:16]


def _entries(directory):
    """The programs' file names in `directory`, sorted."""
    return sorted(name for name in os.listdir(directory)
                  if name.startswith(PREFIX) and name.endswith(".pb"))


def _digest(path):
    """`kerasnmt.data.vocabulary_record.file_digest`, which cannot be imported here:
    importing `kerasnmt.data` starts TensorFlow, and this runs before it starts."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _remove(path):
    """Deletes `path`, which another process sharing the directory may have deleted."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _read_manifest(directory):
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as file:
            manifest = json.load(file)
        if isinstance(manifest, dict) and isinstance(manifest.get("entries"), dict):
            return manifest
    except (OSError, ValueError):
        pass
    return {"entries": {}}


def _matches(path, recorded):
    """Whether the program at `path` is the one `recorded`: the same size, and the same
    modification time or else the same SHA-256 (hashing every program at every start
    would cost about a second a GiB). A program deleted meanwhile (by another process)
    matches: there is nothing left to delete."""
    try:
        status = os.stat(path)
        if status.st_size != recorded.get("bytes"):
            return False
        return (status.st_mtime_ns == recorded.get("mtime_ns")
                or _digest(path) == recorded.get("sha256"))
    except FileNotFoundError:
        return True


def check_entries(directory, this_maker=None):
    """Deletes from `directory` each recorded program that no longer matches its record,
    and every program when the manifest was made by another maker than `this_maker`
    (default `maker()`): another TensorFlow, CPU or `XLA_FLAGS`; warns once for each kind.
    Programs not recorded yet are kept. Returns the deleted file names."""
    manifest = _read_manifest(directory)
    this_maker = maker() if this_maker is None else this_maker
    entries = _entries(directory)
    made_elsewhere = entries and manifest.get("maker") not in (None, this_maker)
    deleted = []
    for name in entries:
        recorded = manifest["entries"].get(name)
        if made_elsewhere or (recorded is not None and not (
                isinstance(recorded, dict)
                and _matches(os.path.join(directory, name), recorded))):
            _remove(os.path.join(directory, name))
            deleted.append(name)
    if made_elsewhere:
        logger.warning(
            "kerasnmt: the XLA compilation cache %s was made by %s, not %s: its %d "
            "programs were deleted and will be compiled again", directory,
            manifest["maker"], this_maker, len(deleted))
    elif deleted:
        logger.warning(
            "kerasnmt: %d programs of the XLA compilation cache %s were damaged and "
            "were deleted; they will be compiled again", len(deleted), directory)
    return deleted


def record_entries(directory, this_maker=None, maximum_bytes=MAXIMUM_BYTES):
    """Writes the manifest of the programs now in `directory`, made by `this_maker`
    (default `maker()`), after deleting the oldest while they take more than
    `maximum_bytes`; the manifest is replaced atomically. Programs that another process
    deletes meanwhile are left out."""
    manifest = _read_manifest(directory)
    this_maker = maker() if this_maker is None else this_maker
    statuses = {}
    for name in _entries(directory):
        try:
            statuses[name] = os.stat(os.path.join(directory, name))
        except FileNotFoundError:
            continue
    by_age = sorted(statuses, key=lambda name: statuses[name].st_mtime_ns)
    total = sum(status.st_size for status in statuses.values())
    while by_age and total > maximum_bytes:
        oldest = by_age.pop(0)
        _remove(os.path.join(directory, oldest))
        total -= statuses.pop(oldest).st_size
    entries = {}
    for name, status in sorted(statuses.items()):
        recorded = manifest["entries"].get(name)
        if isinstance(recorded, dict) and recorded.get("bytes") == status.st_size and (
                recorded.get("mtime_ns") == status.st_mtime_ns):
            entries[name] = recorded
            continue
        try:
            entries[name] = {"bytes": status.st_size, "mtime_ns": status.st_mtime_ns,
                             "sha256": _digest(os.path.join(directory, name))}
        except FileNotFoundError:
            continue
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{MANIFEST}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump({"maker": this_maker, "entries": entries}, file, indent=1)
        os.replace(temporary, os.path.join(directory, MANIFEST))
    finally:
        _remove(temporary)


def use_cache(environ=os.environ):
    """Before TensorFlow starts: checks the cache directory `environ` asks for, points
    `TF_XLA_FLAGS` at it, and records its programs when the process ends. Returns the
    directory, or None (none named, or one that cannot be used: warned)."""
    directory = cache_directory(environ)
    if directory is None:
        return None
    if any(character.isspace() for character in directory):
        logger.warning("kerasnmt: the XLA compilation cache is off: TF_XLA_FLAGS cannot "
                       "hold a directory whose path has white space (%r)", directory)
        return None
    # The programs this process compiles are made by what holds now, when TensorFlow
    # starts, whatever changes later: recorded under it at exit.
    this_maker = maker()
    try:
        os.makedirs(directory, exist_ok=True)
        check_entries(directory, this_maker)
    except OSError as error:
        logger.warning("kerasnmt: the XLA compilation cache is off: %s", error)
        return None
    flags = environ.get("TF_XLA_FLAGS", "")
    environ["TF_XLA_FLAGS"] = f"{flags} {_TENSORFLOW_FLAG}={directory}".strip()
    atexit.register(_record_quietly, directory, this_maker)
    return directory


def _record_quietly(directory, this_maker):
    """`record_entries` at exit: a directory that became unwritable costs only the next
    process's compilations, which it warns about."""
    try:
        record_entries(directory, this_maker)
    except OSError as error:
        logger.warning("kerasnmt: could not record the XLA compilation cache: %s", error)
