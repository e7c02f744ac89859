"""`WriterProgress`: the lines and bars of `kerasnmt prepare`, against hand-computed rates."""

import io

import pytest

from kerasnmt.data.progress import WriterProgress, format_seconds


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_off_a_terminal_one_line_per_multiple_of_every():
    clock, stream = Clock(), io.StringIO()
    progress = WriterProgress([1000, 500], stream, every=300, clock=clock)
    assert not progress.interactive
    clock.now = 101.0
    progress.update(0, 256)  # 256: no multiple of 300 passed
    progress.update(1, 256)
    clock.now = 102.0
    progress.update(0, 256)  # 512 passes 300
    progress.update(1, 244)  # 500 passes 300
    clock.now = 105.0
    progress.update(0, 488)  # 1000 passes 600 and 900: one line
    assert progress.finish() == 5.0
    # Rates since the start: 512 / 2 s, 500 / 2 s, 1000 / 5 s; ETAs (1000 - 512) / 256.
    assert stream.getvalue().splitlines() == [
        "job 1/2: 512/1000 examples (51%), 256 examples/s, ETA 2s",
        "job 2/2: 500/500 examples (100%), 250 examples/s, ETA 0s",
        "job 1/2: 1000/1000 examples (100%), 200 examples/s, ETA 0s",
    ]


def test_off_a_terminal_quiet_without_every():
    stream = io.StringIO()
    progress = WriterProgress([10], stream)
    progress.update(0, 10)
    progress.finish()
    assert stream.getvalue() == ""


def test_on_a_terminal_bars_are_redrawn_in_place_at_most_every_interval():
    clock, stream = Clock(), Terminal()
    progress = WriterProgress([100, 300], stream, clock=clock, interval=1.0, width=10)
    assert progress.interactive
    clock.now = 102.0
    progress.update(0, 50)
    first = stream.getvalue()
    assert first == ("\x1b[2K[=====.....] job 1/2: 50/100 examples (50%), 25 examples/s, ETA 2s\n"
                     "\x1b[2K[..........] job 2/2: 0/300 examples (0%), 0 examples/s, ETA ?\n")
    clock.now = 102.5
    progress.update(1, 150)  # within the interval: not drawn
    assert stream.getvalue() == first
    clock.now = 103.0
    progress.update(0, 50)  # a second after the last drawing: drawn
    assert stream.getvalue() == first + (
        "\x1b[2F"
        "\x1b[2K[==========] job 1/2: 100/100 examples (100%), 33 examples/s, ETA 0s\n"
        "\x1b[2K[=====.....] job 2/2: 150/300 examples (50%), 50 examples/s, ETA 3s\n")
    clock.now = 106.0
    progress.update(1, 150)
    progress.finish()
    assert stream.getvalue().endswith(
        "\x1b[2F"
        "\x1b[2K[==========] job 1/2: 100/100 examples (100%), 17 examples/s, ETA 0s\n"
        "\x1b[2K[==========] job 2/2: 300/300 examples (100%), 50 examples/s, ETA 0s\n")


def test_format_seconds_and_a_bad_every():
    assert [format_seconds(s) for s in (0, 59.4, 60, 3599, 3600, 90061)] == [
        "0s", "59s", "1m00s", "59m59s", "1h00m", "25h01m"]
    with pytest.raises(ValueError, match="every must be a positive number of examples, not 0"):
        WriterProgress([1], io.StringIO(), every=0)
