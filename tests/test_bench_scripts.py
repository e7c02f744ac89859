"""The benchmark scripts import: they are not run by the suite (they take minutes and print
figures), so a moved or renamed name they use would otherwise go unnoticed until someone
measures (as `model_data` did when it moved to `kerasnmt.training.fitting`)."""

import pathlib
import subprocess
import sys
import time

import pytest

from kerasnmt.decoding import BeamSampler

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


def _ctranslate2_speed():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ctranslate2_speed",
                                                  BENCH / "ctranslate2_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ctranslate2_speed_keeps_the_fastest_of_its_timed_passes(tmp_path, capsys):
    """The figures of the fastest pass (its outputs, seconds and CPU seconds together) and
    every pass's seconds; fewer than one pass is refused by name."""
    module = _ctranslate2_speed()
    runs = iter([("a", 2.0, 3.0), ("b", 1.5, 2.9), ("c", 1.7, 2.5)])
    assert module.fastest_pass(lambda: next(runs), 3) == (("b", 1.5, 2.9), [2.0, 1.5, 1.7])

    model = tmp_path / "model.keras"
    model.write_bytes(b"")
    with pytest.raises(SystemExit) as error:
        module.parse_arguments(["--model", str(model), "--timed-passes", "0"])
    assert error.value.code == 2
    assert "--timed-passes: at least 1" in capsys.readouterr().err


def test_ctranslate2_speed_length_normalization_gives_kerasnmt_ctranslate2s_formula(tmp_path):
    """`--length-normalization power` scores kerasnmt's hypotheses as CTranslate2 does: the
    power divisor with finished scores frozen (docs/ctranslate2.md), the same ranking."""
    module = _ctranslate2_speed()
    model = tmp_path / "model.keras"
    model.write_bytes(b"")
    assert module.parse_arguments(["--model", str(model)]).length_normalization == "gnmt"
    arguments = module.parse_arguments(["--model", str(model), "--length-normalization",
                                        "power"])
    options = module.sampler_options_of(arguments)
    assert (options["length_normalization"], options["freeze_finished_scores"]) == (
        "power", True)
    assert not module.sampler_options_of(module.parse_arguments(["--model", str(model)]))[
        "freeze_finished_scores"]
    arguments = module.parse_arguments(["--model", str(model), "--length-normalization",
                                        "power", "--finished-hypotheses", "set_aside",
                                        "--no-early-exit"])
    options = module.sampler_options_of(arguments)
    assert (options["finished_hypotheses"], options["early_exit"]) == ("set_aside", False)
    BeamSampler(**options)  # a valid sampler


def test_ctranslate2_speed_set_aside_needs_no_early_exit(tmp_path, capsys):
    module = _ctranslate2_speed()
    model = tmp_path / "model.keras"
    model.write_bytes(b"")
    with pytest.raises(SystemExit):
        module.parse_arguments(["--model", str(model), "--finished-hypotheses", "set_aside"])
    assert "add --no-early-exit" in capsys.readouterr().err


def test_ctranslate2_speed_names_each_savedmodel_variant_and_refuses_unknown_ones(
        tmp_path, capsys):
    """`--savedmodel-weights` and `--shortlist` add SavedModel exports of their own (one
    directory each) and CTranslate2 runs over the vocabulary map; an unknown weight type or
    a missing shortlist file is refused by name."""
    module = _ctranslate2_speed()
    model = tmp_path / "model.keras"
    model.write_bytes(b"")
    shortlist = tmp_path / "shortlist.txt"
    shortlist.write_text("\tund\n")
    arguments = module.parse_arguments(["--model", str(model), "--savedmodel-weights",
                                        "int8,float32", "--shortlist", str(shortlist)])
    assert arguments.savedmodel_weights == ["int8", "float32"]
    assert module.shortlist_variants(arguments) == (False, True)
    assert module.shortlist_variants(module.parse_arguments(["--model", str(model)])) == (False,)
    assert [module.savedmodel_directory(weights, with_shortlist)
            for weights in ("float32", "int8") for with_shortlist in (False, True)] == [
        "savedmodel", "savedmodel_shortlist", "savedmodel_int8", "savedmodel_int8_shortlist"]
    for options, message in ((["--savedmodel-weights", "int4"],
                              "--savedmodel-weights: each of float32, int8"),
                             (["--shortlist", str(tmp_path / "missing.txt")],
                              f"{tmp_path / 'missing.txt'}: no such file")):
        with pytest.raises(SystemExit) as error:
            module.parse_arguments(["--model", str(model), *options])
        assert error.value.code == 2
        assert message in capsys.readouterr().err


def test_ctranslate2_speed_prints_the_fixed_costs_over_ctranslate2_s(monkeypatch):
    """Issue 61's ratios: the warm-up pass, the first pass from process start (the time the
    parent recorded when it started the process) and the peak memory, each over
    CTranslate2 float32's; no cell without a CTranslate2 run."""
    module = _ctranslate2_speed()
    kerasnmt = {"warmup_seconds": 21.0, "first_pass_seconds": 33.0, "max_rss_gib": 1.5}
    ctranslate2 = {"warmup_seconds": 2.1, "first_pass_seconds": 3.0, "max_rss_gib": 0.1}
    assert module.fixed_cost_ratios(kerasnmt, ctranslate2) == ["10.0", "11.0", "15.0"]
    assert module.fixed_cost_ratios(kerasnmt, None) == ["", "", ""]
    monkeypatch.setenv(module.STARTED_VARIABLE, repr(time.time() - 5.0))
    assert 5.0 <= module.seconds_since_start() < 60.0
