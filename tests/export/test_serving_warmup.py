"""`warm_up` runs every request of an export's warm-up file, in as many threads as asked."""

import threading
import time

import pytest

from kerasnmt.export.serving_warmup import warm_up, write_warmup_file


class _RecordingModel:
    """A loaded SavedModel's stand-in: each signature records the sentences it was given
    and how many requests were running at once."""

    def __init__(self, seconds_per_request=0.0, failing=None):
        self.calls, self.running, self.most_running = [], 0, 0
        self.lock = threading.Lock()
        self.seconds_per_request = seconds_per_request
        self.failing = failing
        self.signatures = {name: self._signature(name) for name in ("serving_default", "n_best")}

    def _signature(self, name):
        def call(source):
            with self.lock:
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            time.sleep(self.seconds_per_request)
            with self.lock:
                self.running -= 1
                self.calls.append((name, source.numpy().tolist()))
            if self.failing in source.numpy().tolist():
                raise RuntimeError(f"failed on {self.failing!r}")
        return call


REQUESTS = [("serving_default", ["a"]), ("serving_default", ["a b", "a b"]),
            ("serving_default", ["c c c"] * 3), ("n_best", ["a"])]


@pytest.mark.parametrize("num_threads", [1, 3])
def test_every_request_runs_once_with_its_signature_and_sentences(tmp_path, num_threads):
    write_warmup_file(tmp_path, REQUESTS)
    model = _RecordingModel(seconds_per_request=0.2)
    assert warm_up(model, str(tmp_path), num_threads=num_threads) == 4
    expected = sorted((name, [text.encode() for text in texts]) for name, texts in REQUESTS)
    assert sorted(model.calls) == expected
    # One thread runs the requests one after the other; three run three at once (each
    # request lasts 0.2 s, long enough for the pool to start the others meanwhile).
    assert model.most_running == num_threads


def test_a_failing_request_fails_the_warm_up_and_a_bad_thread_count_is_refused(tmp_path):
    write_warmup_file(tmp_path, REQUESTS)
    with pytest.raises(RuntimeError, match="failed on b'c c c'"):
        warm_up(_RecordingModel(failing=b"c c c"), str(tmp_path), num_threads=2)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match=f"num_threads must be a positive int, got {bad!r}"):
            warm_up(_RecordingModel(), str(tmp_path), num_threads=bad)
    assert warm_up(_RecordingModel(), str(tmp_path / "no_warmup_file")) == 0
