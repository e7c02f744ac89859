"""keras-hub presets: `kerasnmt export --format keras-hub` and `Translator.save_to_preset`
write a directory that `keras_hub.models.Seq2SeqLM.from_preset` loads, in a fresh
process, as a model whose `generate` translates as `kerasnmt translate` does; an
incomplete preset, or one of another version or class, is a one-line error naming the
file."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import kerasnmt
from kerasnmt import cli
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
from kerasnmt.models import Translator, TranslatorSeq2SeqLM
from kerasnmt.models.preset_layout import PRESET_FILES

pytestmark = pytest.mark.heavy(19)

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "written_by_0_1_0" / "run"
VOCABULARY = ["<blank>", "<s>", "</s>", "a", "b", "c"]
SAMPLER = BeamSampler(beam_size=2, length_penalty=0.6, max_length=6)

# Run in a fresh process: load the preset with keras-hub's base class, translate the lines.
GENERATE = """
import json, sys
import keras_hub
import kerasnmt
model = keras_hub.models.Seq2SeqLM.from_preset(sys.argv[1])
sentences = json.loads(sys.argv[2])
print(json.dumps({"class": type(model).__module__ + "." + type(model).__name__,
                  "sampler": model.beam_sampler.get_config(),
                  "options": model.translate_options,
                  "translations": model.generate(sentences),
                  "one": model.generate(sentences[0])}))
"""


def generate_in_a_fresh_process(preset, sentences):
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    completed = subprocess.run(
        [sys.executable, "-c", GENERATE, str(preset), json.dumps(sentences)],
        capture_output=True, text=True, timeout=300, env=environment, cwd=preset.parent)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


def tiny_translator(dtype="float32"):
    preprocessor = TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(),
                                           VOCABULARY, VOCABULARY)
    translator = Translator(preprocessor, num_layers=1, num_units=8, num_heads=2,
                            ffn_inner_dim=16, maximum_relative_position=4, dropout=0.0,
                            dtype=dtype)
    # Weights far from their initialization, so the translations depend on them.
    translator.set_weights([np.random.default_rng(2).normal(0.0, 1.0, weight.shape)
                            .astype(weight.dtype) for weight in translator.get_weights()])
    return translator


@pytest.fixture(scope="module")
def saved_preset(tmp_path_factory):
    translator = tiny_translator()
    preset = tmp_path_factory.mktemp("preset") / "tiny"
    assert translator.save_to_preset(preset, SAMPLER, jit_compile=False) == preset
    return translator, preset


def test_the_export_of_a_run_generates_its_translations_in_a_fresh_process(tmp_path, capsys):
    """The run's committed `val.translations` are what `kerasnmt translate --config` gives
    (tests/test_written_by_0_1_0.py); the preset of that run, loaded by keras-hub in a new
    process, gives the same texts, with the run's decoding options."""
    run = shutil.copytree(RUN, tmp_path / "run")
    preset = tmp_path / "preset"
    status = cli.main(["export", "--format", "keras-hub", str(preset), "--config",
                       str(run / "run.yml")])
    assert status == 0, capsys.readouterr().err
    assert sorted(os.listdir(preset)) == sorted(PRESET_FILES)
    sources = (run / "val.src").read_text(encoding="utf-8").splitlines()
    expected = [line.split(" ||| ")[1] for line in
                (run / "val.translations").read_text(encoding="utf-8").splitlines()]
    result = generate_in_a_fresh_process(preset, sources)
    assert result["class"] == "kerasnmt.models.translator_seq2seq_lm.TranslatorSeq2SeqLM"
    assert result["translations"] == expected
    assert result["one"] == expected[0]
    # run.yml: beam_width 2, num_hypotheses 2, maximum_decoding_length 20,
    # train.maximum_features_length 8, seed 1; the rest are the configuration's defaults.
    sampler = result["sampler"]
    assert (sampler["beam_size"], sampler["n_best"], sampler["max_length"], sampler["seed"],
            sampler["length_penalty"]) == (2, 2, 20, 1, 0.0)
    assert result["options"]["maximum_source_length"] == 8
    assert result["options"]["jit_compile"] is True


def test_a_preset_loads_with_its_weights_and_generates_as_translate(saved_preset):
    translator, preset = saved_preset
    loaded = keras_hub.models.Seq2SeqLM.from_preset(str(preset))
    assert isinstance(loaded, TranslatorSeq2SeqLM) and isinstance(loaded.translator, Translator)
    for original, restored in zip(translator.get_weights(), loaded.translator.get_weights(),
                                  strict=True):
        np.testing.assert_array_equal(original, restored)
    sentences = ["a b c", "c c", "", "b a"]
    expected = translator.translate(sentences, SAMPLER, jit_compile=False)
    assert len(set(expected)) > 1
    assert loaded.generate(sentences) == expected
    assert loaded.generate(tf.constant("a b c")) == expected[0]
    assert loaded.generate(tf.data.Dataset.from_tensor_slices(sentences).batch(2)) == expected
    assert loaded.beam_sampler.get_config() == SAMPLER.get_config()


def test_a_preset_loads_after_keras_hub_tasks_were_built(saved_preset):
    """keras-hub's own models in the same process do not get in the way (building a
    keras-hub backbone rebases keras-hub's `Backbone` class: see TransformerBackbone)."""
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=10, num_layers=1, num_heads=1,
                                             hidden_dim=4, intermediate_dim=4,
                                             max_sequence_length=8)
    keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    translator, preset = saved_preset
    loaded = keras_hub.models.Seq2SeqLM.from_preset(str(preset))
    assert loaded.generate(["b a"]) == translator.translate(["b a"], SAMPLER, jit_compile=False)


def test_generate_refuses_keras_hub_options_a_translator_does_not_take(saved_preset):
    loaded = TranslatorSeq2SeqLM.from_preset(saved_preset[1])
    with pytest.raises(ValueError, match="max_length=5 does not apply to a kerasnmt "
                                         "translator: its decoding length limit is "
                                         r"beam_sampler.max_length \(6\)"):
        loaded.generate(["a"], max_length=5)
    with pytest.raises(ValueError, match=r"stop_token_ids=\[2\] does not apply"):
        loaded.generate(["a"], stop_token_ids=[2])


def test_a_preset_is_written_whole_and_replaced_only_with_force(saved_preset, tmp_path):
    translator, _ = saved_preset
    preset = tmp_path / "preset"
    preset.mkdir()
    (preset / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not an empty directory: pass force=True"):
        translator.save_to_preset(preset)
    assert os.listdir(preset) == ["notes.txt"]
    translator.save_to_preset(preset, force=True)
    assert sorted(os.listdir(preset)) == sorted(PRESET_FILES)
    with pytest.raises(TypeError, match=r"unknown translate options \['beam_size'\]"):
        translator.save_to_preset(tmp_path / "other", beam_size=3)
    assert not (tmp_path / "other").exists()


def test_a_mixed_precision_model_is_written_in_float32_and_a_quantized_one_refused(tmp_path):
    """As the SavedModel export decodes: in float32, the same weight values."""
    translator = tiny_translator("mixed_bfloat16")
    translator.save_to_preset(tmp_path / "mixed")
    config = json.loads((tmp_path / "mixed" / "config.json").read_text(encoding="utf-8"))
    assert config["config"]["dtype"]["config"]["name"] == "float32"
    loaded = TranslatorSeq2SeqLM.from_preset(tmp_path / "mixed")
    assert loaded.translator.dtype_policy.name == "float32"
    for original, restored in zip(translator.get_weights(), loaded.translator.get_weights(),
                                  strict=True):
        np.testing.assert_array_equal(original, restored)
    quantized = tiny_translator()
    quantized.quantize("int8")
    with pytest.raises(ValueError, match=r"are quantized; a keras-hub preset holds float "
                                         "weights: save the model before quantizing it"):
        quantized.save_to_preset(tmp_path / "quantized")
    assert not (tmp_path / "quantized").exists()


@pytest.mark.parametrize("missing", PRESET_FILES)
def test_an_incomplete_preset_names_the_missing_file(saved_preset, tmp_path, missing):
    preset = shutil.copytree(saved_preset[1], tmp_path / "preset")
    os.remove(preset / missing)
    with pytest.raises(ValueError) as error:
        TranslatorSeq2SeqLM.from_preset(preset)
    assert str(error.value).startswith(
        f"{preset}: not a complete keras-hub preset: {missing} is missing")


def edit_json(path, edit):
    value = json.loads(path.read_text(encoding="utf-8"))
    edit(value)
    path.write_text(json.dumps(value), encoding="utf-8")


@pytest.mark.parametrize("name, edit, message", [
    ("metadata.json", lambda metadata: metadata.update(kerasnmt_preset_format=2,
                                                       kerasnmt_version="0.9.0"),
     "metadata.json: written by kerasnmt 0.9.0 (preset format 2); "
     f"kerasnmt {kerasnmt.__version__} reads preset format 1"),
    ("metadata.json", lambda metadata: metadata.pop("kerasnmt_preset_format"),
     "metadata.json: written by not kerasnmt (no kerasnmt_preset_format); "
     f"kerasnmt {kerasnmt.__version__} reads preset format 1"),
    ("task.json", lambda task: task.update(registered_name="keras_hub>BartSeq2SeqLM"),
     "task.json: holds keras_hub>BartSeq2SeqLM, expected kerasnmt>TranslatorSeq2SeqLM"),
    ("config.json", lambda config: config.update(registered_name="keras_hub>BartBackbone"),
     "config.json: holds keras_hub>BartBackbone, expected kerasnmt>TransformerBackbone"),
    ("preprocessor.json", lambda config: config.pop("registered_name"),
     "preprocessor.json: holds None, expected kerasnmt>TranslationPreprocessor"),
])
def test_a_preset_of_another_version_or_class_names_the_file(saved_preset, tmp_path, name,
                                                             edit, message):
    preset = shutil.copytree(saved_preset[1], tmp_path / "preset")
    edit_json(preset / name, edit)
    with pytest.raises(ValueError) as error:
        TranslatorSeq2SeqLM.from_preset(preset)
    assert str(error.value).startswith(f"{preset / message.split(':')[0]}:")
    assert message in str(error.value)


def test_a_preset_file_that_is_not_json_is_named(saved_preset, tmp_path):
    preset = shutil.copytree(saved_preset[1], tmp_path / "preset")
    (preset / "task.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"task.json: not valid JSON \(Expecting property "
                                         r"name enclosed in double quotes: line 1 column 2"):
        TranslatorSeq2SeqLM.from_preset(preset)
    with pytest.raises(ValueError, match="nothing: no such preset directory"):
        TranslatorSeq2SeqLM.from_preset(tmp_path / "nothing")


def test_the_command_refuses_what_a_preset_cannot_hold_before_writing(tmp_path, capsys):
    run = shutil.copytree(RUN, tmp_path / "run")
    output = tmp_path / "preset"
    for argv, message in [
        (["--next-version"], "--next-version does not apply to --format keras-hub (it goes "
                             "with --format savedmodel)"),
        (["--with-alignments"], "--with-alignments does not apply to --format keras-hub"),
        (["--no-warmup"], "--no-warmup does not apply to --format keras-hub"),
        (["--quantization", "int8"], "--quantization int8 goes with --format savedmodel, "
                                     "ctranslate2 (--format keras-hub takes none)"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["export", str(output), "--format", "keras-hub", "--config",
                      str(run / "run.yml"), *argv])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    output.mkdir()
    (output / "model.bin").write_text("")
    status = cli.main(["export", str(output), "--format", "keras-hub", "--config",
                       str(run / "run.yml")])
    error = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in error
    assert f"{output} exists and is not an empty directory" in error
    assert os.listdir(output) == ["model.bin"]
    (run / "vmap.txt").write_text("a\tA\n", encoding="utf-8")
    config = (run / "run.yml").read_text(encoding="utf-8")
    (run / "run.yml").write_text(config.replace("params:\n", "params:\n  shortlist: vmap.txt\n"),
                                 encoding="utf-8")
    status = cli.main(["export", str(tmp_path / "other"), "--format", "keras-hub", "--config",
                       str(run / "run.yml")])
    assert status == 2
    assert ("params.shortlist cannot be written in a keras-hub preset"
            in capsys.readouterr().err)
    assert not (tmp_path / "other").exists()


def test_the_command_writes_its_decoding_options_in_the_preset(tmp_path, capsys):
    run = shutil.copytree(RUN, tmp_path / "run")
    preset = tmp_path / "preset"
    status = cli.main(["export", str(preset), "--format", "keras-hub", "--config",
                       str(run / "run.yml"), "--no-xla", "--early-exit", "--n-best", "1",
                       "--maximum-source-length", "5"])
    assert status == 0, capsys.readouterr().err
    config = json.loads((preset / "task.json").read_text(encoding="utf-8"))["config"]
    assert (config["jit_compile"], config["maximum_source_length"]) == (False, 5)
    sampler = config["beam_sampler"]["config"]
    assert (sampler["early_exit"], sampler["n_best"], sampler["beam_size"]) == (True, 1, 2)

