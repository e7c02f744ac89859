"""TensorFlow started without its C++ start-up notices.

Loading TensorFlow writes lines to stderr before its logging honours
`TF_CPP_MIN_LOG_LEVEL`: absl's "All log messages before absl::InitializeLog()" warning,
oneDNN's and the CPU instruction notices, twice "Could not find cuda drivers", and, on a
machine without a GPU driver, the error "failed call to cuInit". Every `kerasnmt` command
printed them before its own output. Importing this module (`import kerasnmt` does it
first) calls `start_tensorflow`, which loads TensorFlow and finds its
devices with stderr captured, then writes back each captured line that
`TF_CPP_MIN_LOG_LEVEL` keeps (default here 1: warnings and errors; 0 shows everything).
The cuInit error is dropped at levels above 0: TensorFlow reports the same fact as the
notice "GPU will not be used".

Examples:
    >>> import sys
    >>> start_tensorflow() is sys.modules["tensorflow"]
    True
    >>> kept_lines([
    ...     "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    ...     "I0000 00:00:1.0   30 port.cc:153] oneDNN custom operations are on.",
    ...     "E0000 00:00:1.0   30 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)",
    ...     "W0000 00:00:1.0   30 some_op.cc:1] a warning",
    ...     "a line of a library"], level=1)
    ['W0000 00:00:1.0   30 some_op.cc:1] a warning', 'a line of a library']
"""

import os
import re
import sys
import tempfile

from kerasnmt import xla_compilation_cache

DEFAULT_LEVEL = "1"
# absl's own prefix: severity letter, then date, time, thread, file:line].
_LOG_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:[\d.]+ +\d+ [^ ]+:\d+\] ")
_SEVERITIES = "IWEF"
_CPU_FEATURES_CONTINUATION = "To enable the following instructions:"
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called"
_NO_DRIVER = "failed call to cuInit"


def kept_lines(lines, level):
    """The captured start-up `lines` that TensorFlow's `level` (`TF_CPP_MIN_LOG_LEVEL`)
    shows, in order; lines that are not TensorFlow's log lines are all kept."""
    if level <= 0:
        return list(lines)
    kept = []
    for line in lines:
        match = _LOG_LINE.match(line)
        if match:
            if _SEVERITIES.index(match.group(1)) >= level and _NO_DRIVER not in line:
                kept.append(line)
        elif not line.startswith((_ABSL_PREAMBLE, _CPU_FEATURES_CONTINUATION)):
            kept.append(line)
    return kept


def _level():
    """`TF_CPP_MIN_LOG_LEVEL` as a number; a value that is not one shows everything."""
    try:
        return int(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    except ValueError:
        return 0


def start_tensorflow():
    """Imports TensorFlow and lists its devices, its start-up notices filtered (module
    docstring); returns the module. Does nothing more once TensorFlow is imported."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", DEFAULT_LEVEL)
    # TensorFlow reads `TF_XLA_FLAGS` when it starts.
    xla_compilation_cache.use_cache()
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf

            # The CUDA platform is loaded (and cuInit fails) when devices are first listed.
            tf.config.list_physical_devices()
        finally:
            sys.stderr.flush()
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines()
            for line in kept_lines(lines, _level()):
                print(line, file=sys.stderr)
    return tf


start_tensorflow()
