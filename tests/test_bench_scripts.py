"""The benchmark scripts import: they are not run by the suite (they take minutes and print
figures), so a moved or renamed name they use would otherwise go unnoticed until someone
measures (as `model_data` did when it moved to `kerasnmt.training.fitting`)."""

import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"


def test_every_bench_script_imports():
    scripts = sorted(BENCH.glob("*.py"))
    assert len(scripts) >= 10
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        f"for path in {[str(path) for path in scripts]!r}:\n"
        "    name = path.rsplit('/', 1)[1][:-3]\n"
        "    spec = importlib.util.spec_from_file_location(name, path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    sys.modules[name] = module\n"
        "    spec.loader.exec_module(module)\n"
        "    print(name)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.split() == [path.stem for path in scripts]


def test_the_peer_log_parser_examples_run():
    """`bench/opennmt_log.py` turns OpenNMT-tf's log into the figure the speed ratio divides
    by: its example (hand-computed time-weighted mean) must hold."""
    import doctest
    import importlib.util

    spec = importlib.util.spec_from_file_location("opennmt_log", BENCH / "opennmt_log.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = doctest.testmod(module)
    assert results.attempted > 0 and results.failed == 0
