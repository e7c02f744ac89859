import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# The tests that use an XLA compilation cache name their own (kerasnmt.xla_compilation_cache).
os.environ.pop("KERASNMT_XLA_CACHE", None)
# The tests compile hundreds of tiny XLA programs; LLVM's optimization of each is much of
# their time and nothing the tests check (benchmarks run with XLA's defaults): the suite
# takes an eighth less time (pytest 686 s against 784 s on 2 cores, 2026-11-29). Set
# before TensorFlow starts, inherited by the processes the tests start.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "heavy(seconds): a test file of long tests (training, exports), run first, the "
        "longest first; seconds: its tests' time, as `pytest --durations 0` sums them",
    )


def pytest_collection_modifyitems(items):
    """Files marked `heavy` first, the longest first, each file's tests in their order:
    with `pytest -n 2 --dist loadfile` (make test) each worker starts on a long file and
    the last files to start are short, instead of one worker finishing a long file alone
    (longest processing time first)."""

    def seconds(item):
        marker = item.get_closest_marker("heavy")
        return marker.args[0] if marker else 0

    items.sort(key=seconds, reverse=True)
