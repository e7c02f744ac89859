"""Models written by kerasnmt 0.1.0 (tests/fixtures/written_by_0_1_0, commit 884775a) load
with today's code and translate as they did then."""

import json
import pathlib
import shutil

import keras
import numpy as np
import pytest

from kerasnmt import cli
from kerasnmt.decoding import BeamSampler

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "written_by_0_1_0"


def _scored(lines):
    """`SCORE ||| TEXT` lines -> (texts, scores)."""
    pairs = [line.split(" ||| ") for line in lines]
    return [text for _, text in pairs], np.array([float(score) for score, _ in pairs])


def test_a_run_directory_translates_as_it_did(tmp_path, capsys):
    run = shutil.copytree(FIXTURE / "run", tmp_path / "run")
    status = cli.main(["translate", "--config", str(run / "run.yml"), "--input",
                       str(run / "val.src"), "--with-scores"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    texts, scores = _scored(captured.out.splitlines())
    expected_texts, expected_scores = _scored(
        (FIXTURE / "run" / "val.translations").read_text(encoding="utf-8").splitlines())
    assert texts == expected_texts
    np.testing.assert_allclose(scores, expected_scores, atol=1e-4)


def test_a_keras_file_translates_as_it_did():
    translator = keras.saving.load_model(FIXTURE / "translator.keras")
    expected = json.loads((FIXTURE / "translator.translations.json").read_text())
    details = translator.translate([entry["source"] for entry in expected],
                                   sampler=BeamSampler(beam_size=3, n_best=2),
                                   return_details=True, jit_compile=False)
    for entry, hypotheses in zip(expected, details, strict=True):
        assert [h["text"] for h in hypotheses] == [h["text"] for h in entry["hypotheses"]]
        np.testing.assert_allclose([h["score"] for h in hypotheses],
                                   [h["score"] for h in entry["hypotheses"]], atol=1e-4)
