import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "heavy: a test file of long tests (training, exports), run first"
    )


def pytest_collection_modifyitems(items):
    """Files marked `heavy` first, each file's tests in their order: with `pytest -n 2
    --dist loadfile` (make test) the long files are then spread over both workers from
    the start, instead of one worker finishing the last of them alone."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)
