"""`kerasnmt export` and `kerasnmt translate` on a tiny trained run."""

import contextlib
import io
import os
import pathlib
import shutil
import subprocess
import sys

import ctranslate2
import keras
import numpy as np
import pytest
import tensorflow as tf
import yaml

from kerasnmt import cli
from kerasnmt.runner import decoding_compilation, file_translation
from kerasnmt.runner.decoding_compilation import XLA_MINIMUM_SENTENCES, graph_optimizer_off
from kerasnmt.config import load_config
from kerasnmt.export.ctranslate2 import read_translate_options
from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.export import quantize_dense_layers
from kerasnmt.decoding import BeamSampler
from kerasnmt.models import Translator
from kerasnmt.export.serving_warmup import WARMUP_FILE
from kerasnmt.runner.run_checkpoints import restore_translator
from kerasnmt.runner.run_model import build_sampler
from kerasnmt.runner.training_run import TRAINING_KEYS, train
from tests.models.translator_fixtures import forbid_outside, tiny_translator
from tests.run_fixtures import tiny_run, write_config, write_corpus

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(93)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A run trained for 3 steps; its configuration asks for 2 hypotheses of a beam of 2.
    The reference translations decode without XLA: the commands below decode with it."""
    directory = write_corpus(tmp_path_factory.mktemp("run"))
    config_path = write_config(directory, tiny_run(
        params={"num_hypotheses": 2},
        train={"max_step": 3, "save_checkpoints_steps": 3, "average_last_checkpoints": 0},
    ))
    train(load_config(config_path, required=TRAINING_KEYS), verbose=0)
    translator, _ = restore_translator(load_config(config_path))
    sources = (directory / "val.src").read_text(encoding="utf-8").splitlines()
    details = translator.translate(
        sources, sampler=build_sampler(load_config(config_path)), return_details=True,
        jit_compile=False,
    )
    return directory, config_path, translator, sources, details


def run_cli(capsys, *argv):
    status = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def exported_run(trained_run):
    """`kerasnmt export BASE --next-version --with-alignments` of `trained_run`: (base
    path, output). Without XLA (each load would compile it again):
    test_export_and_translate_a_keras_file exports with it."""
    base = trained_run[0] / "saved_models" / "tiny"
    with contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()) as err:
        status = cli.main(["export", str(base), "--config", str(trained_run[1]),
                           "--next-version", "--with-alignments", "--no-xla"])
    assert status == 0, err.getvalue()
    return base, out.getvalue(), err.getvalue()


def test_export_from_the_run_and_translate_through_the_saved_model(trained_run, exported_run,
                                                                   capsys):
    directory, config_path, _, sources, details = trained_run
    base, out, err = exported_run
    assert f"Exported to {base / '1'}" in out
    assert "Restored" in err and "ckpt-3" in err

    model = tf.saved_model.load(str(base / "1"))
    outputs = model.signatures["n_best"](source=tf.constant(sources))
    assert outputs["translations"].shape == (len(sources), 2)  # params.num_hypotheses
    assert "alignments" in outputs

    status, out, err = run_cli(capsys, "translate", "--saved-model", base / "1",
                               "--input", directory / "val.src",
                               "--output", directory / "out.txt")
    assert status == 0, err
    lines = (directory / "out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [n_best[0]["text"] for n_best in details]

    # n-best with scores, from the SavedModel: two lines a sentence, best first.
    status, out, err = run_cli(capsys, "translate", "--saved-model", base / "1",
                               "--input", directory / "val.src", "--n-best", "2",
                               "--with-scores")
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 * len(sources)
    for i, n_best in enumerate(details):
        for k, hypothesis in enumerate(n_best):
            score, text = lines[2 * i + k].split(" ||| ")
            assert text == hypothesis["text"]
            assert float(score) == pytest.approx(hypothesis["score"], abs=1e-4)

    # A second export is version 2; with --no-warmup, it has no warm-up file.
    status, out, err = run_cli(capsys, "export", base, "--config", config_path,
                               "--next-version", "--n-best", "1", "--no-xla", "--no-warmup")
    assert status == 0, err
    assert sorted(os.listdir(base)) == ["1", "2"]
    assert (base / "1" / WARMUP_FILE).is_file()
    assert not (base / "2" / "assets.extra").exists()
    # What the export cannot give is refused before any input is read (this one does
    # not exist) or decoded.
    status, out, err = run_cli(capsys, "translate", "--saved-model", base / "2",
                               "--input", directory / "unread.src", "--n-best", "2")
    assert status == 2
    assert "exported with n_best=1" in err
    status, out, err = run_cli(capsys, "translate", "--saved-model", base / "2",
                               "--input", directory / "unread.src", "--with-alignments", "hard")
    assert status == 2
    assert "was exported without alignments: export it again with --with-alignments" in err


@pytest.mark.parametrize("options, minimum_sentences, compiles", [
    ([], XLA_MINIMUM_SENTENCES, False),  # a small file: graph mode
    ([], 2, True),  # as many sentences as the minimum: XLA
    (["--no-xla"], 2, False),
    (["--xla"], XLA_MINIMUM_SENTENCES, True),
])
def test_translate_from_the_checkpoint_reads_stdin_with_or_without_xla(
        trained_run, capsys, monkeypatch, options, minimum_sentences, compiles):
    """From stdin: the same translations whether the decoding is compiled or not, and it
    is compiled from `XLA_MINIMUM_SENTENCES` sentences or with --xla, never with --no-xla;
    graph mode runs with Grappler off, XLA with it on, and the option is restored after."""
    directory, config_path, _, sources, details = trained_run
    assert len(sources) >= 2
    monkeypatch.setattr(decoding_compilation, "XLA_MINIMUM_SENTENCES", minimum_sentences)
    stdin = io.TextIOWrapper(io.BytesIO(("\n".join(sources) + "\n").encode("utf-8")))
    monkeypatch.setattr("sys.stdin", stdin)
    compiled = []
    translate = Translator.translate
    monkeypatch.setattr(Translator, "translate", lambda self, *arguments, **options: (
        compiled.append((options["jit_compile"], graph_optimizer_off()))
        or translate(self, *arguments, **options)))
    status, out, err = run_cli(capsys, "translate", "--config", config_path, "--n-best", "2",
                               "--with-scores", *options)
    assert status == 0, err
    assert compiled and set(compiled) == {(compiles, not compiles)}
    assert not graph_optimizer_off()
    lines = out.splitlines()
    assert [line.split(" ||| ")[1] for line in lines] == [
        h["text"] for n_best in details for h in n_best]


def test_empty_blank_and_long_lines_translate_alike_from_the_checkpoint_and_the_saved_model(
        trained_run, exported_run, capsys):
    """Where `translate --config` and the SavedModel used to disagree: an empty or blank
    line gives an empty translation with score 0 through both (the checkpoint made one
    up), and a line longer than train.maximum_features_length is cut by both."""
    directory, config_path, _, sources, _ = trained_run
    base, _, _ = exported_run
    long_line = " ".join(sources[0].split() * 300)
    lines = [sources[0], "", "   ", long_line, sources[1]]
    (directory / "odd.src").write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = {}
    for name, model in (("checkpoint", ["--config", config_path, "--no-xla"]),
                        ("saved_model", ["--saved-model", base / "1"])):
        status, out, err = run_cli(capsys, "translate", *model, "--input",
                                   directory / "odd.src", "--with-scores")
        assert status == 0, err
        outputs[name] = [line.split(" ||| ") for line in out.splitlines()]
    assert len(outputs["checkpoint"]) == len(lines)
    assert [text for _, text in outputs["checkpoint"]] == [
        text for _, text in outputs["saved_model"]]
    for (score, text), (saved_score, _) in zip(outputs["checkpoint"], outputs["saved_model"]):
        assert float(score) == pytest.approx(float(saved_score), abs=1e-4)
    for index in (1, 2):
        assert outputs["checkpoint"][index][1] == "" and float(outputs["checkpoint"][index][0]) == 0


def test_the_decoding_length_limit_of_the_configuration(trained_run, capsys, tmp_path):
    """params.decoding_length_ratio 0 and decoding_length_offset 1: every translation has
    at most 1 token from the checkpoint and through the export, where the defaults (2 n +
    10) let some run longer."""
    directory, config_path, _, _, details = trained_run
    assert max(len(h["tokens"]) for n_best in details for h in n_best) > 1
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["params"].update(decoding_length_ratio=0, decoding_length_offset=1)
    short = write_config(directory, config, name="short.yml")
    status, out, err = run_cli(capsys, "translate", "--config", short, "--no-xla",
                               "--input", directory / "val.src")
    assert status == 0, err
    from_checkpoint = out.splitlines()
    assert max(len(line.split()) for line in from_checkpoint) == 1
    status, out, err = run_cli(capsys, "export", tmp_path / "short", "--config", short,
                               "--no-xla")
    assert status == 0, err
    status, out, err = run_cli(capsys, "translate", "--saved-model", tmp_path / "short",
                               "--input", directory / "val.src")
    assert status == 0, err
    assert out.splitlines() == from_checkpoint


def test_translate_output_is_replaced_only_when_complete(trained_run, capsys, monkeypatch):
    """A crash halfway keeps the previous --output file; a translation that would add a
    line (a newline in its text) is refused, the previous file kept; a complete run
    replaces it, with no temporary file left beside it."""
    directory, config_path, _, sources, details = trained_run
    output = directory / "results" / "val.out"
    output.parent.mkdir()
    output.write_text("previous\n", encoding="utf-8")
    arguments = ("translate", "--config", config_path, "--input", directory / "val.src",
                 "--output", output, "--no-xla")
    translate_in_order = file_translation.translate_in_order

    def crash_after_the_first(*arguments, **options):
        yield translate_in_order(*arguments, **options)[0]
        raise MemoryError("out of memory on line 2")

    monkeypatch.setattr(file_translation, "translate_in_order", crash_after_the_first)
    with pytest.raises(MemoryError):
        run_cli(capsys, *arguments)
    assert output.read_text(encoding="utf-8") == "previous\n"

    format_hypothesis = file_translation.format_hypothesis
    monkeypatch.setattr(file_translation, "translate_in_order", translate_in_order)
    monkeypatch.setattr(file_translation, "format_hypothesis",
                        lambda *arguments: format_hypothesis(*arguments) + "\nextra")
    status, out, err = run_cli(capsys, *arguments)
    assert status == 2
    assert f"{output}: {2 * len(sources)} lines written where {len(sources)} were expected" in err
    assert output.read_text(encoding="utf-8") == "previous\n"

    monkeypatch.setattr(file_translation, "format_hypothesis", format_hypothesis)
    status, out, err = run_cli(capsys, *arguments)
    assert status == 0, err
    assert output.read_text(encoding="utf-8").splitlines() == [
        n_best[0]["text"] for n_best in details]
    assert os.listdir(output.parent) == ["val.out"]


def test_translate_stops_quietly_when_its_reader_stops_reading(trained_run):
    """`kerasnmt translate ... | head`: once the reader has closed the pipe, the command
    ends with status 0 and nothing on stderr about it (it said `error: [Errno 32] Broken
    pipe` and exited 2)."""
    directory, config_path, *_ = trained_run
    process = subprocess.Popen(
        [sys.executable, "-m", "kerasnmt.cli", "translate", "--config", str(config_path),
         "--input", str(directory / "val.src")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    process.stdout.close()  # the reader is gone before the first translation is written
    errors = process.stderr.read()
    assert process.wait(timeout=300) == 0, errors[-2000:]
    assert "Broken pipe" not in errors and "error" not in errors.lower()


def test_translate_names_the_stdin_line_that_is_not_utf8(trained_run, capsys, monkeypatch):
    _, config_path, *_ = trained_run
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a b\nc \xff d\n")))
    status, out, err = run_cli(capsys, "translate", "--config", config_path, "--no-xla")
    assert status == 2
    assert "stdin, line 2: not valid UTF-8" in err
    assert "byte 0xff at offset 2 of the line, 6 of the file" in err
    assert out == ""


def test_build_shortlist_and_translate_with_it(trained_run, capsys):
    """The reversal task maps each source word to its capitalized self: with one
    translation per source word and no frequent words, the shortlist is that mapping;
    `params.shortlist` then restricts the checkpoint's translations to it."""
    directory, config_path, translator, sources, _ = trained_run
    path = directory / "shortlist.txt"
    status, out, err = run_cli(capsys, "build-shortlist", "--config", config_path,
                               "--output", path, "--per-source", "1", "--frequent", "0")
    assert status == 0, err
    assert "40 sentence pairs: 8 source tokens, 8 translations" in out
    assert path.read_text(encoding="utf-8").splitlines() == ["\t<blank> <s> </s>"] + [
        f"{word}\t{word.upper()}" for word in "abcdefgh"]

    with_shortlist = write_config(directory, tiny_run(params={"shortlist": str(path)}),
                                  name="shortlist.yml")
    status, out, err = run_cli(capsys, "translate", "--config", with_shortlist,
                               "--input", directory / "val.src")
    assert status == 0, err
    shortlist = LexicalShortlist.load(path, translator.preprocessor.source_vocabulary,
                                      translator.preprocessor.target_vocabulary)
    expected = translator.translate(sources, sampler=build_sampler(load_config(with_shortlist)),
                                    shortlist=shortlist, jit_compile=False)
    assert out.splitlines() == expected
    # One batch: its shortlist is the capitalized words of all its sources.
    assert set(" ".join(expected).split()) <= set(" ".join(sources).upper().split())


def test_export_and_translate_with_a_shortlist_file(trained_run, capsys):
    """--shortlist gives a file to a configuration without params.shortlist: one that
    allows a single word the model does not produce without it."""
    directory, config_path, translator, sources, details = trained_run
    produced = set(" ".join(n_best[0]["text"] for n_best in details).split())
    assert produced, "the model translates to nothing: the test shows nothing"
    word = sorted(set(" ".join(sources).upper().split()) - produced)[0]
    path = directory / "one_word_shortlist.txt"
    path.write_text("\t<blank> <s> </s>\n" + "".join(f"{w}\t{word}\n" for w in "abcdefgh"),
                    encoding="utf-8")
    shortlist = LexicalShortlist.load(path, translator.preprocessor.source_vocabulary,
                                      translator.preprocessor.target_vocabulary)
    expected = translator.translate(sources, sampler=build_sampler(load_config(config_path)),
                                    shortlist=shortlist, jit_compile=False)
    assert set(" ".join(expected).split()) <= {word}

    status, out, err = run_cli(capsys, "translate", "--config", config_path,
                               "--shortlist", path, "--input", directory / "val.src", "--no-xla")
    assert status == 0, err
    assert out.splitlines() == expected
    status, out, err = run_cli(capsys, "export", directory / "shortlist_export", "--config",
                               config_path, "--shortlist", path, "--no-xla")
    assert status == 0, err
    serving = tf.saved_model.load(str(directory / "shortlist_export")).signatures[
        "serving_default"]
    texts = [t.decode() for t in serving(source=tf.constant(sources))["translation"].numpy()]
    assert texts == expected


def test_export_and_translate_a_keras_file(trained_run, capsys):
    directory, config_path, translator, sources, _ = trained_run
    translator.save(str(directory / "tiny.keras"))
    status, out, err = run_cli(capsys, "export", directory / "from_keras",
                               "--model", directory / "tiny.keras",
                               "--maximum-source-length", "8", "--early-exit")
    assert status == 0, err
    # BeamSampler() defaults (beam 4, no penalty), with early exit (the same results).
    greedy_free = translator.translate(sources, sampler=BeamSampler(early_exit=True),
                                       jit_compile=False)
    serving = tf.saved_model.load(str(directory / "from_keras")).signatures["serving_default"]
    texts = [t.decode() for t in serving(source=tf.constant(sources))["translation"].numpy()]
    assert texts == greedy_free

    (directory / "in.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    status, out, err = run_cli(capsys, "translate", "--model", directory / "tiny.keras",
                               "--input", directory / "in.txt", "--no-xla")
    assert status == 0, err
    assert out.splitlines() == greedy_free


def test_a_run_trained_in_mixed_precision_is_translated_in_float32(trained_run, capsys):
    """`train.mixed_precision: mixed_bfloat16` builds the run's model in bfloat16 for
    training; `translate --config` decodes its checkpoint in float32, as its export
    does: the scores are the float32 model's, not the bfloat16 model's."""
    directory, config_path, translator, sources, details = trained_run
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["train"]["mixed_precision"] = "mixed_bfloat16"
    mixed_path = write_config(directory, config, name="mixed.yml")
    mixed, _ = restore_translator(load_config(mixed_path))
    assert mixed.compute_dtype == "bfloat16"
    mixed_details = mixed.translate(sources, sampler=build_sampler(load_config(mixed_path)),
                                    return_details=True, jit_compile=False)
    scores = [n_best[0]["score"] for n_best in details]
    assert not np.allclose([n_best[0]["score"] for n_best in mixed_details], scores,
                           atol=1e-4)
    status, out, err = run_cli(capsys, "translate", "--config", mixed_path, "--input",
                               directory / "val.src", "--with-scores", "--no-xla")
    assert status == 0, err
    lines = [line.split(" ||| ") for line in out.splitlines()]
    assert [text for _, text in lines] == [n_best[0]["text"] for n_best in details]
    np.testing.assert_allclose([float(score) for score, _ in lines], scores, atol=1e-5)


def test_usage_and_input_errors(trained_run, capsys, tmp_path):
    directory, config_path, *_ = trained_run
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["translate", "--input", str(directory / "val.src")])
    assert exit_info.value.code == 2
    assert "give --config (a trained run) or --model" in capsys.readouterr().err

    status, out, err = run_cli(capsys, "translate", "--saved-model", tmp_path,
                               "--input", directory / "val.src")
    assert status == 2 and "not a SavedModel directory" in err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["translate", "--saved-model", str(tmp_path), "--no-xla"])
    assert exit_info.value.code == 2
    assert "--no-xla does not apply to --saved-model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["translate", "--saved-model", str(tmp_path), "--shortlist", "vmap.txt"])
    assert exit_info.value.code == 2
    assert "--shortlist does not apply to --saved-model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["translate", "--config", str(config_path), "--xla", "--no-xla",
                  "--input", "unread.txt"])
    assert exit_info.value.code == 2
    assert "--xla and --no-xla do not go together" in capsys.readouterr().err
    status, out, err = run_cli(capsys, "export", tmp_path / "z", "--config", config_path,
                               "--shortlist", tmp_path / "no_vmap.txt")
    assert status == 2 and "no_vmap.txt" in err
    assert not (tmp_path / "z").exists()

    (tmp_path / "bad.txt").write_bytes(b"a b\n\xff c\n")
    status, out, err = run_cli(capsys, "translate", "--config", config_path,
                               "--input", tmp_path / "bad.txt")
    assert status == 2 and "bad.txt, line 2: not valid UTF-8" in err

    status, out, err = run_cli(capsys, "export", tmp_path / "x", "--config", config_path,
                               "--checkpoint", tmp_path / "nothing")
    assert status == 2 and "no such checkpoint" in err

    # The run's beam holds 2 hypotheses (tiny_run's params.beam_width).
    for command in (["translate", "--input", directory / "val.src"], ["export", tmp_path / "w"]):
        status, out, err = run_cli(capsys, *command, "--config", config_path, "--n-best", "3")
        assert status == 2 and "--n-best: 3 is more than params.beam_width (2)" in err
        assert out == "" and not (tmp_path / "w").exists()

    other = tiny_run(model={"num_units": 32})
    other["model_dir"] = str(directory / "model")
    other_path = write_config(directory, other, name="other.yml")
    status, out, err = run_cli(capsys, "export", tmp_path / "y", "--config", other_path)
    assert status == 2 and ("was trained with another model than the configuration's: "
                            "model.num_units: 16 in the checkpoint, 32 in the configuration"
                            ) in err
    assert not (tmp_path / "y").exists()
    # A checkpoint without its run's recipe beside it: restoring it finds the other shapes.
    latest = tf.train.latest_checkpoint(str(directory / "model"))
    (tmp_path / "bare").mkdir()
    for file in pathlib.Path(latest).parent.glob(pathlib.Path(latest).name + ".*"):
        shutil.copy(file, tmp_path / "bare")
    status, out, err = run_cli(capsys, "export", tmp_path / "y", "--config", other_path,
                               "--checkpoint", tmp_path / "bare" / pathlib.Path(latest).name)
    assert status == 2 and "does not match the model of the configuration" in err
    assert not (tmp_path / "y").exists()


def test_alignments_from_the_checkpoint_and_the_saved_model(trained_run, exported_run, capsys):
    directory, config_path, _, sources, details = trained_run
    # The most attended source token of each target token, from translate's details.
    expected = [
        " ".join(f"{source}-{target}" for target, source in
                 enumerate(n_best[0]["alignment"].argmax(-1)))
        for n_best in details
    ]
    status, out, err = run_cli(capsys, "translate", "--config", config_path, "--no-xla",
                               "--input", directory / "val.src", "--with-alignments", "hard")
    assert status == 0, err
    assert [line.split(" ||| ") for line in out.splitlines()] == [
        [n_best[0]["text"], pairs] for n_best, pairs in zip(details, expected)]

    status, out, err = run_cli(capsys, "translate", "--saved-model", exported_run[0] / "1",
                               "--input", directory / "val.src", "--with-alignments", "soft")
    assert status == 0, err
    for line, n_best in zip(out.splitlines(), details):
        text, vectors = line.split(" ||| ")
        assert text == n_best[0]["text"]
        if len(n_best[0]["alignment"]) == 0:  # an empty translation aligns nothing
            assert vectors == ""
            continue
        rows = [[float(v) for v in row.split()] for row in vectors.split(" ; ")]
        np.testing.assert_allclose(rows, n_best[0]["alignment"], atol=1e-5)


def test_export_to_ctranslate2_from_the_run(trained_run, capsys):
    """`--format ctranslate2 --quantization int8`: the configuration's decoding options
    as `translate_batch` arguments (params.beam_width 2, num_hypotheses 2,
    maximum_decoding_length 20; train.maximum_features_length 8), and the int8 model
    returns two hypotheses for each sentence."""
    directory, config_path, _, sources, _ = trained_run
    output = directory / "ct2"
    status, out, err = run_cli(capsys, "export", output, "--config", config_path,
                               "--format", "ctranslate2", "--quantization", "int8")
    assert status == 0, err
    assert f"Exported to {output}" in out
    options = read_translate_options(output)["translate_batch"]
    assert (options["beam_size"], options["num_hypotheses"]) == (2, 2)
    assert (options["max_decoding_length"], options["max_input_length"]) == (20, 8)
    results = ctranslate2.Translator(str(output)).translate_batch(
        [source.split() for source in sources], **options)
    assert [len(result.hypotheses) for result in results] == [2] * len(sources)


def test_export_with_int8_dense_layers_translates_as_the_quantized_translator(
        trained_run, capsys, tmp_path):
    """`--quantization int8` of a SavedModel: Keras int8 kernels in every Dense layer,
    the embeddings float; its n-best lists are those of the restored translator after
    `quantize_dense_layers`, and its scores differ from the float model's."""
    directory, config_path, _, sources, float_details = trained_run
    status, out, err = run_cli(capsys, "export", tmp_path / "int8", "--config", config_path,
                               "--quantization", "int8", "--no-xla", "--no-warmup")
    assert status == 0, err
    translator, _ = restore_translator(load_config(config_path))
    quantize_dense_layers(translator)
    layers = list(translator._flatten_layers())
    dense = [layer for layer in layers if isinstance(layer, keras.layers.Dense)]
    embeddings = [layer for layer in layers if isinstance(layer, keras.layers.Embedding)]
    assert dense and embeddings
    assert all(layer.quantization_mode == "int8" and layer._kernel.dtype == "int8"
               for layer in dense)
    assert all(layer.quantization_mode is None and layer.embeddings.dtype == "float32"
               for layer in embeddings)
    expected = translator.translate(sources, sampler=build_sampler(load_config(config_path)),
                                    return_details=True, jit_compile=False)
    outputs = tf.saved_model.load(str(tmp_path / "int8")).signatures["n_best"](
        source=tf.constant(sources))
    assert [[text.decode() for text in row] for row in outputs["translations"].numpy()] == [
        [hypothesis["text"] for hypothesis in n_best] for n_best in expected]
    scores = [[hypothesis["score"] for hypothesis in n_best] for n_best in expected]
    np.testing.assert_allclose(outputs["scores"], scores, atol=1e-4)
    assert not np.allclose(scores, [[h["score"] for h in n] for n in float_details], atol=1e-4)


def test_export_to_ctranslate2_refuses_bad_input_before_writing(trained_run, capsys,
                                                               tmp_path, monkeypatch):
    directory, config_path, translator, *_ = trained_run
    output = tmp_path / "ct2"
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2",
                               "--config", config_path, "--checkpoint", tmp_path / "nothing")
    assert status == 2 and "no such checkpoint" in err
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2",
                               "--model", tmp_path / "nothing.keras")
    assert status == 2 and "nothing.keras: no such file" in err
    for argv, message in [
        (["--quantization", "int4"], "argument --quantization: invalid choice: 'int4'"),
        (["--shortlist", "vmap.txt"], "--shortlist does not apply to --format ctranslate2"),
        (["--next-version"], "--next-version does not apply to --format ctranslate2"),
        (["--no-warmup"], "--no-warmup does not apply to --format ctranslate2"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["export", str(output), "--format", "ctranslate2", "--config",
                      str(config_path), *argv])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["export", str(output), "--config", str(config_path), "--quantization", "int16"])
    assert ("--quantization int16 goes with --format ctranslate2 (--format savedmodel takes "
            "int8)" in capsys.readouterr().err)
    with pytest.raises(SystemExit):
        cli.main(["export", str(output), "--config", str(config_path), "--force"])
    assert ("--force does not apply to --format savedmodel (it goes with --format "
            "ctranslate2, keras-hub)" in capsys.readouterr().err)
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "ctranslate2", None)  # as if not installed
        with pytest.raises(SystemExit):
            cli.main(["export", str(output), "--format", "ctranslate2", "--config",
                      str(config_path)])
    assert ("--format ctranslate2 needs the ctranslate2 package: pip install "
            "'kerasnmt[ctranslate2]'") in capsys.readouterr().err

    (tmp_path / "vmap.txt").write_text("a\tA\n", encoding="utf-8")
    with_shortlist = tiny_run(params={"shortlist": str(tmp_path / "vmap.txt")})
    with_shortlist["model_dir"] = str(directory / "model")
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2", "--config",
                               write_config(directory, with_shortlist, name="shortlist.yml"))
    assert status == 2 and "params.shortlist cannot be exported to CTranslate2" in err

    unsupported = tiny_translator(ffn_activation="elu")
    unsupported.save(str(tmp_path / "elu.keras"))
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2",
                               "--model", tmp_path / "elu.keras")
    assert status == 2 and "cannot export to CTranslate2: ffn_activation 'elu'" in err
    assert sorted(os.listdir(tmp_path)) == ["elu.keras", "vmap.txt"]

    output.mkdir()
    (output / "model.bin").write_text("a previous model")
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2",
                               "--config", config_path)
    assert status == 2 and f"{output} exists and is not an empty directory" in err
    assert os.listdir(output) == ["model.bin"]
    status, out, err = run_cli(capsys, "export", output, "--format", "ctranslate2",
                               "--config", config_path, "--force")
    assert status == 0, err
    assert read_translate_options(output)["translate_batch"]["beam_size"] == 2


def test_unknown_source_tokens_are_reported_and_still_replaced(tmp_path, capsys):
    """A model whose only possible output is the unknown target token: with
    params.replace_unknown_target each one becomes the source token it attends to most
    (for "zz", the only one); without, it stays <unk>. Either way stderr counts the source
    tokens the vocabulary lacks ("zz"; "yy" and "qq"), in one line."""
    directory = write_corpus(tmp_path)
    translator = tiny_translator(seed=5)
    forbid_outside(translator, [len(translator.preprocessor.target_vocabulary)])
    translator.save(str(directory / "unknown.keras"))
    (directory / "in.txt").write_text("a b\nzz\na yy c qq\nb\n", encoding="utf-8")
    outputs = {}
    for replace in (True, False):
        config = write_config(directory, tiny_run(params={"replace_unknown_target": replace}),
                              name=f"replace_{replace}.yml")
        status, out, err = run_cli(capsys, "translate", "--model", directory / "unknown.keras",
                                   "--config", config, "--input", directory / "in.txt",
                                   "--no-xla")
        assert status == 0, err
        outputs[replace] = out.splitlines()
        warnings = [line for line in err.splitlines() if "warning" in line]
        assert warnings == ["kerasnmt translate: warning: 3 source tokens in 2 of 4 sentences "
                            "were not in the source vocabulary and read as <unk>"]
    assert len(outputs[True]) == 4
    assert set(outputs[True][1].split()) == {"zz"}
    assert set(outputs[False][1].split()) == {"<unk>"}
    assert len(outputs[True][1].split()) == len(outputs[False][1].split())

    # The SavedModel counts them too (its signatures return each sentence's count).
    status, out, err = run_cli(capsys, "export", directory / "unknown_export", "--model",
                               directory / "unknown.keras", "--config", config, "--no-xla",
                               "--no-warmup")
    assert status == 0, err
    status, out, err = run_cli(capsys, "translate", "--saved-model", directory / "unknown_export",
                               "--input", directory / "in.txt")
    assert status == 0, err
    assert out.splitlines() == outputs[False]
    assert [line for line in err.splitlines() if "warning" in line] == [
        "kerasnmt translate: warning: 3 source tokens in 2 of 4 sentences were not in the "
        "source vocabulary and read as <unk>"]
