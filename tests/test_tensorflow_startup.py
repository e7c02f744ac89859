"""TensorFlow's C++ start-up notices: filtered by `TF_CPP_MIN_LOG_LEVEL` (default 1) in
every `kerasnmt` command, all shown at 0, other lines never lost."""

import os
import subprocess
import sys

import pytest

from kerasnmt.tensorflow_startup import kept_lines

PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
INFO = "I0000 00:00:1796387396.637911   30729 port.cc:153] oneDNN custom operations are on."
CPU_FEATURES = [
    "I0000 00:00:1796387396.693693   30729 cpu_feature_guard.cc:227] This TensorFlow binary is optimized.",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.",
]
NO_DRIVER = ("E0000 00:00:1796387402.236633   30733 cuda_platform.cc:52] failed call to cuInit: "
             "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)")
WARNING = "W0000 00:00:1796387402.3   30733 op_kernel.cc:1] a warning"
ERROR = "E0000 00:00:1796387402.4   30733 op_kernel.cc:2] an error"
OTHER = "Traceback of a library's own print"
CAPTURED = [PREAMBLE, INFO, *CPU_FEATURES, WARNING, NO_DRIVER, ERROR, OTHER]


@pytest.mark.parametrize("level, expected", [
    (0, CAPTURED),
    (1, [WARNING, ERROR, OTHER]),
    (2, [ERROR, OTHER]),
    (3, [OTHER]),
])
def test_the_level_keeps_tensorflow_lines_of_its_severity_and_every_other_line(level, expected):
    assert kept_lines(CAPTURED, level) == expected


def _help_stderr(**environment):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(environment)
    result = subprocess.run([sys.executable, "-m", "kerasnmt.cli", "--help"], env=env,
                            capture_output=True, text=True, timeout=300, check=True)
    assert result.stdout.startswith("usage: kerasnmt")
    return result.stderr


def test_a_command_prints_no_start_up_notice_and_level_0_shows_them():
    assert _help_stderr() == ""
    shown = _help_stderr(TF_CPP_MIN_LOG_LEVEL="0")
    # This build of TensorFlow prints absl's preamble before any notice, on every machine.
    assert PREAMBLE in shown
