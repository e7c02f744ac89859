"""Progress of the processes that write shards: examples, examples/s and an ETA per job.

ELECTRA's pre-training writer logs, per job, the files processed, the elapsed time and an
ETA. `WriterProgress` does the same per writing job of `kerasnmt.data.shards.write_shards`
(one job per process, each with its own shards), counted in examples:

- on a terminal, one bar a job, redrawn in place (at most every `interval` seconds);
- elsewhere (a log file, a pipe), quiet, or with `every` one line each time a job passes a
  multiple of `every` examples, so that a log shows progress without a line per chunk.
"""

import sys
import time

# Moves the cursor to the start of the line `n` lines up, and clears a line.
_UP = "\x1b[{}F"
_CLEAR = "\x1b[2K"


def format_seconds(seconds):
    """`"42s"`, `"3m05s"` or `"2h03m"`.

    Examples:
        >>> format_seconds(42.4), format_seconds(185), format_seconds(7380)
        ('42s', '3m05s', '2h03m')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class WriterProgress:
    """Shows how far each writing job is, and how fast it goes.

    Args:
        totals: the number of examples of each job.
        stream: where to write (default: `sys.stderr`).
        every: off a terminal, write a job's line each time it passes a multiple of this
            many examples; `None` (the default) writes nothing there.
        interactive: whether `stream` is a terminal (default: `stream.isatty()`).
        clock: a function returning seconds (default `time.monotonic`).
        interval: on a terminal, the shortest time between two redraws, in seconds.
        width: the characters of a bar.

    Examples:
        >>> import io
        >>> now = [0.0]
        >>> stream = io.StringIO()
        >>> progress = WriterProgress([3000, 1000], stream, every=1000, clock=lambda: now[0])
        >>> now[0] = 2.0
        >>> progress.update(0, 1200)
        >>> progress.update(1, 500)
        >>> now[0] = 4.0
        >>> progress.update(1, 500)
        >>> print(stream.getvalue(), end="")
        job 1/2: 1200/3000 examples (40%), 600 examples/s, ETA 3s
        job 2/2: 1000/1000 examples (100%), 250 examples/s, ETA 0s
    """

    def __init__(self, totals, stream=None, every=None, interactive=None,
                 clock=time.monotonic, interval=0.2, width=30):
        if every is not None and every < 1:
            raise ValueError(f"every must be a positive number of examples, not {every}")
        self.totals = list(totals)
        self.stream = sys.stderr if stream is None else stream
        self.every = every
        self.interactive = (self.stream.isatty() if interactive is None else interactive)
        self.clock = clock
        self.interval = interval
        self.width = width
        self.done = [0] * len(self.totals)
        self.start = clock()
        self._drawn = False
        self._last_draw = None

    def update(self, job, examples):
        """Counts `examples` more written by job `job` (from 0)."""
        before = self.done[job]
        self.done[job] += examples
        if self.interactive:
            now = self.clock()
            if self._last_draw is None or now - self._last_draw >= self.interval:
                self._draw(now)
        elif self.every is not None and self.done[job] // self.every > before // self.every:
            self.stream.write(self.line(job) + "\n")
            self.stream.flush()

    def finish(self):
        """Draws the final state on a terminal; returns the seconds since the start."""
        now = self.clock()
        if self.interactive:
            self._draw(now)
        return now - self.start

    def line(self, job, now=None):
        """Job `job`'s progress: examples, share, examples/s and ETA."""
        now = self.clock() if now is None else now
        done, total = self.done[job], self.totals[job]
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        remaining = total - done
        eta = format_seconds(remaining / rate) if rate > 0 else "?"
        share = 100 * done // total if total else 100
        return (f"job {job + 1}/{len(self.totals)}: {done}/{total} examples ({share}%), "
                f"{rate:.0f} examples/s, ETA {eta}")

    def _bar(self, job):
        total = self.totals[job]
        filled = self.width * self.done[job] // total if total else self.width
        return "[" + "=" * filled + "." * (self.width - filled) + "]"

    def _draw(self, now):
        lines = [f"{self._bar(job)} {self.line(job, now)}" for job in range(len(self.totals))]
        prefix = _UP.format(len(lines)) if self._drawn else ""
        self.stream.write(prefix + "".join(_CLEAR + line + "\n" for line in lines))
        self.stream.flush()
        self._drawn = True
        self._last_draw = now
