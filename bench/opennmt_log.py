"""OpenNMT-tf's training speed from its log: source+target tokens/s, time-weighted.

OpenNMT-tf logs, every `save_summary_steps`, a line such as

    2026-11-24 10:00:01.000000: I runner.py:310] Step = 40 ; steps/s = 0.95, tokens/s =
    4422 (2200 source, 2222 target) ; Learning rate = 0.000123 ; Loss = 7.123

Each line covers the steps since the previous one at its `steps/s`; the mean tokens/s is
weighted by those durations. The windows that end at or before `skip_steps` are left out,
as kerasnmt's benchmark leaves out its warm-up.
"""

import re

_STEP = re.compile(
    r"^\S+ \S+: I runner\.py:\d+\] Step = (\d+) ; steps/s = ([\d.]+), tokens/s = (\d+) "
    r"\((\d+) source, (\d+) target\)"
)
_RESTORED = re.compile(r".*Restored checkpoint \S*ckpt-(\d+)")


def opennmt_tokens_per_second(path, skip_steps=0):
    """`(tokens/s, steps timed, seconds timed)` of an OpenNMT-tf training log.

    Raises:
        ValueError: naming the file, when no step line is left after `skip_steps`.

    Examples:
        >>> import tempfile
        >>> log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
        >>> _ = log.write(
        ...     "2026-11-24 10:00:00.0: I runner.py:310] Step = 10 ; steps/s = 1.00, "
        ...     "tokens/s = 9000 (4000 source, 5000 target) ; Loss = 9.0\\n"
        ...     "2026-11-24 10:00:10.0: I runner.py:310] Step = 20 ; steps/s = 2.00, "
        ...     "tokens/s = 4000 (2000 source, 2000 target) ; Loss = 8.0\\n"
        ...     "2026-11-24 10:00:20.0: I runner.py:310] Step = 30 ; steps/s = 1.00, "
        ...     "tokens/s = 5500 (2500 source, 3000 target) ; Loss = 7.0\\n")
        >>> log.close()
        >>> opennmt_tokens_per_second(log.name, skip_steps=10)  # 5 s at 4000, 10 s at 5500
        (5000.0, 20, 15.0)
    """
    previous = None
    seconds = tokens = 0.0
    steps = 0
    with open(path, encoding="utf-8") as file:
        for line in file:
            restored = _RESTORED.match(line)
            if restored and previous is None:
                previous = int(restored.group(1))
            match = _STEP.match(line)
            if not match:
                continue
            step, steps_per_second, rate = int(match.group(1)), float(match.group(2)), int(match.group(3))
            start = 0 if previous is None else previous
            previous = step
            if step <= skip_steps:
                continue
            duration = (step - start) / steps_per_second
            seconds += duration
            tokens += rate * duration
            steps += step - start
    if not steps:
        raise ValueError(f"{path}: no OpenNMT-tf step line after step {skip_steps} "
                         "(expected lines like 'Step = 40 ; steps/s = 0.95, tokens/s = 4422 ...')")
    return tokens / seconds, steps, seconds
