import inspect
import os
import pathlib
import textwrap

import pytest

from kerasnmt.config import ConfigError, check_config, config_reference, default_config, load_config
from kerasnmt.config.schema import SCHEMA, walk
from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.decoding import BeamSampler
from kerasnmt.evaluation import score_translations
from kerasnmt.models import Translator
from kerasnmt.training import FusedAdam
from tests.models.translator_fixtures import preprocessor

DOCS_TRAINING = pathlib.Path(__file__).resolve().parents[1] / "docs" / "training.md"


@pytest.fixture
def run_dir(tmp_path):
    """A run directory with the files a configuration points to."""
    for name in ["vocab.en", "vocab.de", "train.en", "train.de", "train.align", "val.en", "val.de"]:
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    return tmp_path


def write_config(directory, text):
    path = directory / "run.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(path, **kwargs):
    with pytest.raises(ConfigError) as caught:
        load_config(path, **kwargs)
    return caught.value.errors


def test_valid_config_merges_onto_defaults_and_resolves_paths(
    run_dir, tmp_path_factory, monkeypatch
):
    path = write_config(
        run_dir,
        """
        model_dir: runs/ende
        data:
          source_vocabulary: vocab.en
          target_vocabulary: ./vocab.de
          train_features_file: train.en
          train_labels_file: train.de
          train_alignments: train.align
          eval_features_file: val.en
          eval_labels_file: val.de
        model:
          num_layers: [3, 2]
          num_units: 256
          num_heads: 4
        params:
          optimizer_params:
            clipnorm: 1.0
          decay_params:
            warmup_steps: 4000
          guided_alignment_type: ce
          beam_width: 5
          length_penalty: 0.6
        train:
          batch_size: 64
          batch_type: examples
          seed: 1234
        eval:
          scorers: BLEU
          export_on_best: bleu
        """,
    )
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # paths follow the file, not the cwd
    config = load_config(path, required=["model_dir", "data.train_features_file"])

    assert config["model_dir"] == str(run_dir / "runs" / "ende")
    assert config["data"]["source_vocabulary"] == str(run_dir / "vocab.en")
    assert config["data"]["target_vocabulary"] == str(run_dir / "vocab.de")
    assert config["data"]["train_features_file"] == [str(run_dir / "train.en")]
    assert config["data"]["train_alignments"] == [str(run_dir / "train.align")]
    assert config["data"]["source_sentencepiece"] is None
    assert config["model"]["num_layers"] == [3, 2]
    assert config["model"]["ffn_inner_dim"] == 2048  # default kept
    assert config["params"]["optimizer_params"] == {"beta_1": 0.9, "beta_2": 0.998, "clipnorm": 1.0}
    assert config["params"]["decay_params"] == {
        "model_dim": 256, "warmup_steps": 4000, "initial_learning_rate": 0.0
    }
    assert config["params"]["beam_width"] == 5
    assert config["params"]["length_penalty"] == 0.6
    assert config["params"]["coverage_penalty"] == 0.0
    assert config["train"]["batch_size"] == 64
    assert config["train"]["batch_type"] == "examples"
    assert config["train"]["maximum_features_length"] == 100
    assert config["eval"]["scorers"] == ["bleu"]
    assert config["infer"] == default_config()["infer"]


def test_empty_file_gives_the_defaults(tmp_path):
    config = load_config(write_config(tmp_path, ""))
    expected = default_config()
    expected["params"]["decay_params"]["model_dim"] = expected["model"]["num_units"]
    assert config == expected


def test_defaults_follow_opennmt_tf_where_it_has_the_key():
    # OpenNMT-tf 2 documented defaults, with its --auto_config values for a Transformer.
    config = default_config()
    assert config["params"]["learning_rate"] == 2.0
    assert config["params"]["decay_type"] == "NoamDecay"
    assert config["params"]["decay_params"]["warmup_steps"] == 8000
    assert config["params"]["start_decay_steps"] == 0
    assert config["params"]["decay_step_duration"] == 1
    assert config["params"]["minimum_learning_rate"] == 0
    assert config["params"]["label_smoothing"] == 0.1
    assert config["params"]["beam_width"] == 4
    assert config["params"]["maximum_decoding_length"] == 250
    assert config["train"]["batch_size"] == 3072 and config["train"]["batch_type"] == "tokens"
    assert config["train"]["effective_batch_size"] == 25000
    assert config["train"]["sample_buffer_size"] == -1
    assert config["eval"]["batch_size"] == 32 and config["infer"]["batch_size"] == 32


def test_decoding_options_default_to_the_python_apis():
    """One default an option: the `params` decoding keys are those of `BeamSampler()`,
    and `infer.batch_size`, the length limit and the shortlist width those of
    `Translator.translate` and `LexicalShortlist`."""
    params = default_config()["params"]
    sampler = BeamSampler()
    assert params["beam_width"] == sampler.beam_size == 4
    assert params["num_hypotheses"] == sampler.n_best
    assert params["sampling_topk"] == sampler.top_k
    assert params["sampling_temperature"] == sampler.temperature
    assert params["maximum_decoding_length"] == sampler.max_length
    assert params["minimum_decoding_length"] == sampler.min_length
    assert params["length_penalty"] == sampler.length_penalty
    assert params["coverage_penalty"] == sampler.coverage_penalty
    assert params["length_normalization"] == sampler.length_normalization == "gnmt"
    assert params["finished_hypotheses"] == sampler.finished_hypotheses == "in_beam"
    assert params["freeze_finished_scores"] == sampler.freeze_finished_scores
    assert params["early_exit"] == sampler.early_exit
    assert params["compact_batch"] == sampler.compact_batch
    translate = inspect.signature(Translator.translate).parameters
    assert default_config()["infer"]["batch_size"] == translate["batch_size"].default
    assert params["decoding_length_ratio"] == translate["length_ratio"].default
    assert params["decoding_length_offset"] == translate["length_offset"].default
    width = inspect.signature(LexicalShortlist.load).parameters["width"].default
    assert params["shortlist_width"] == width


def test_optimizer_and_loss_options_default_to_the_translators():
    """`Translator()` and `Translator.compile()` train as the configuration's defaults say:
    Adam (run as FusedAdam) with betas 0.9 and 0.998 on NoamDecay(2.0, num_units, 8000),
    label smoothing 0.1, no guided alignment."""
    config = default_config()
    params = config["params"]
    translator = Translator(preprocessor(), num_layers=1, num_units=8, num_heads=2,
                            ffn_inner_dim=8)
    translator.compile()
    optimizer = translator.optimizer
    assert params["optimizer"] == "Adam" and isinstance(optimizer, FusedAdam)
    assert params["optimizer_params"] == {"beta_1": optimizer.beta_1, "beta_2": optimizer.beta_2}
    assert params["optimizer_params"] == {"beta_1": 0.9, "beta_2": 0.998}
    schedule = optimizer._learning_rate
    assert params["decay_type"] == type(schedule).__name__ == "NoamDecay"
    assert (schedule.scale, schedule.model_dim, schedule.warmup_steps) == (
        params["learning_rate"], 8, params["decay_params"]["warmup_steps"])
    assert (params["label_smoothing"], params["guided_alignment_type"],
            params["guided_alignment_weight"]) == (
        translator.label_smoothing, translator.guided_alignment_type,
        translator.guided_alignment_weight) == (0.1, None, 1.0)
    assert config["eval"]["target_language"] == "en" == inspect.signature(
        score_translations).parameters["language"].default


def test_unknown_keys_get_suggestions(tmp_path):
    path = write_config(
        tmp_path,
        """
        trian:
          batch_size: 32
        train:
          batch_sizes: 64
          train_steps: 100
        params:
          dropout: 0.3
          warmup_steps: 10
          zzz_unrelated: 1
          average_loss_in_time: true
          decay_params:
            scale: 2.0
        eval:
          length_bucket_width: 5
        """,
    )
    assert errors_of(path) == [
        "eval.length_bucket_width: an OpenNMT-tf option kerasnmt does not use (translations "
        "are grouped by source width, see docs/decoding.md); remove it",
        "params.average_loss_in_time: an OpenNMT-tf option that kerasnmt does not have",
        "params.decay_params.scale: unknown key (kerasnmt calls it params.learning_rate)",
        "params.dropout: unknown key here (did you mean model.dropout?)",
        "params.warmup_steps: unknown key here (did you mean params.decay_params.warmup_steps?)",
        "params.zzz_unrelated: unknown key",
        "train.batch_sizes: unknown key (did you mean train.batch_size?)",
        "train.train_steps: unknown key (kerasnmt calls it train.max_step)",
        "trian: unknown key (did you mean train?)",
    ]


def test_wrong_types(tmp_path):
    path = write_config(
        tmp_path,
        """
        data: [1, 2]
        model:
          num_units: "512"
          pre_norm: "yes"
          num_layers: [3]
        params:
          beam_width: true
          learning_rate: fast
          optimizer_params: [0.9]
        """,
    )
    assert errors_of(path) == [
        "data: expected a mapping of options, got [1, 2]",
        "model.num_layers: expected an integer >= 1, or a list [encoder_layers, decoder_layers], "
        "got [3]",
        "model.num_units: expected an integer >= 1, got '512'",
        "model.pre_norm: expected true or false, got 'yes'",
        "params.beam_width: expected an integer >= 1, got true",
        "params.learning_rate: expected a number > 0, got 'fast'",
        "params.optimizer_params: expected a mapping of names to values, got [0.9]",
    ]


def test_optimizer_arguments_of_the_wrong_type(tmp_path):
    # The kind each takes follows its default in keras.optimizers.Adam.
    path = write_config(
        tmp_path,
        """
        params:
          optimizer_params:
            beta_1: high
            amsgrad: 1
            clipnorm: true
            weight_decay: null
            epsilon: 1
        """,
    )
    assert errors_of(path) == [
        "params.optimizer_params.amsgrad: expected true or false, got 1",
        "params.optimizer_params.beta_1: expected a number, got 'high'",
        "params.optimizer_params.clipnorm: expected a number or null, got true",
    ]


def test_values_out_of_range(tmp_path):
    path = write_config(
        tmp_path,
        """
        model:
          dropout: 1.0
          maximum_relative_position: 0
        params:
          label_smoothing: -0.1
          sampling_temperature: 0
        train:
          sample_buffer_size: -2
          batch_size: 0
        """,
    )
    assert errors_of(path) == [
        "model.dropout: expected a number in [0, 1), got 1.0",
        "model.maximum_relative_position: expected an integer >= 1, or null, got 0",
        "params.label_smoothing: expected a number in [0, 1), got -0.1",
        "params.sampling_temperature: expected a number > 0, got 0",
        "train.batch_size: expected an integer >= 1, got 0",
        "train.sample_buffer_size: expected an integer >= -1, or null, got -2",
    ]


def test_values_not_among_the_choices(tmp_path):
    path = write_config(
        tmp_path,
        """
        train:
          batch_type: token
          mixed_precision: true
        params:
          optimizer: adam
          guided_alignment_type: kl
        eval:
          scorers: [bleu, ter]
        """,
    )
    assert errors_of(path) == [
        "eval.scorers: expected one or a list of bleu, chrf, got 'ter'",
        "params.guided_alignment_type: expected one of ce, mse, or null, got 'kl'",
        "params.optimizer: expected the name of an optimizer class in keras.optimizers, "
        "got 'adam' (did you mean 'Adam'?)",
        "train.batch_type: expected one of examples, tokens, got 'token' (did you mean 'tokens'?)",
        "train.mixed_precision: expected one of auto, mixed_float16, mixed_bfloat16, or null, "
        "got true",
    ]


def test_missing_files_are_named_with_their_resolved_path(run_dir):
    path = write_config(
        run_dir,
        """
        model_dir: vocab.en
        data:
          source_vocabulary: vocab.missing
          train_features_file: [train.en, corpus2.en]
          train_labels_file: [train.de, /nonexistent/corpus2.de]
        """,
    )
    assert errors_of(path) == [
        f"data.source_vocabulary: file not found: {run_dir / 'vocab.missing'} "
        f"(relative to {run_dir})",
        f"data.train_features_file: [1] file not found: {run_dir / 'corpus2.en'} "
        f"(relative to {run_dir})",
        "data.train_labels_file: [1] file not found: /nonexistent/corpus2.de",
        f"model_dir: {run_dir / 'vocab.en'} exists and is not a directory",
    ]


def test_options_that_contradict_each_other(run_dir):
    path = write_config(
        run_dir,
        """
        data:
          train_features_file: [train.en, val.en]
          train_labels_file: [train.de, val.de]
          train_files_weights: [0.7]
          eval_features_file: val.en
        model:
          num_units: 100
          num_heads: 8
        params:
          beam_width: 2
          num_hypotheses: 3
          minimum_decoding_length: 300
          guided_alignment_type: mse
          optimizer_params:
            beta1: 0.8
            learning_rate: 0.1
            gradient_accumulation_steps: 4
            use_ema: true
        train:
          keep_checkpoint_max: 3
        eval:
          scorers: chrf
          export_on_best: bleu
          early_stopping:
            metric: bleu
            steps: 4
        infer:
          n_best: 4
        """,
    )
    assert errors_of(path) == [
        "data.eval_labels_file: required with the other evaluation file but not set",
        "data.train_files_weights: 1 entries for 2 files in data.train_features_file",
        "eval.early_stopping.metric: 'bleu' is not among eval.scorers",
        "eval.export_on_best: 'bleu' is not among eval.scorers",
        "infer.n_best: 4 is more than params.beam_width (2)",
        "model.num_heads: 8 does not divide model.num_units (100)",
        "params.guided_alignment_type: 'mse' needs data.train_alignments",
        "params.minimum_decoding_length: 300 is more than params.maximum_decoding_length (250)",
        "params.num_hypotheses: 3 is more than params.beam_width (2)",
        "params.optimizer_params.beta1: not an argument of keras.optimizers.Adam (did you mean "
        "beta_1? it takes beta_1, beta_2, epsilon, amsgrad, weight_decay, clipnorm, clipvalue, "
        "global_clipnorm, loss_scale_factor)",
        "params.optimizer_params.gradient_accumulation_steps: set train.effective_batch_size "
        "instead",
        "params.optimizer_params.learning_rate: set params.learning_rate instead",
        "params.optimizer_params.use_ema: set params.moving_average_decay instead (with the "
        "optimizer's own, the checkpoints, evaluations and exports would hold the raw "
        "weights)",
        "train.average_last_checkpoints: 8 is more than train.keep_checkpoint_max (3)",
    ]


def test_set_aside_finished_hypotheses_refuse_early_exit_and_sampling(run_dir):
    path = write_config(run_dir, """
        params:
          finished_hypotheses: set_aside
          early_exit: true
          sampling_topk: 3
        """)
    assert errors_of(path) == [
        "params.early_exit: must be False with params.finished_hypotheses: set_aside (a "
        "deterministic search with its own end), got True",
        "params.sampling_topk: must be 1 with params.finished_hypotheses: set_aside (a "
        "deterministic search with its own end), got 3",
    ]
    path = write_config(run_dir, "params:\n  finished_hypotheses: dropped\n")
    assert len(errors_of(path)) == 1 and "finished_hypotheses" in errors_of(path)[0]


def test_default_optimizer_params_the_optimizer_does_not_take_are_dropped(tmp_path):
    # beta_1 and beta_2 (the default, for Adam) are not arguments of SGD; given, they are
    # an error.
    config = load_config(write_config(tmp_path, "params:\n  optimizer: SGD\n"))
    assert config["params"]["optimizer_params"] == {}
    path = write_config(tmp_path, """
        params:
          optimizer: AdamW
          optimizer_params:
            weight_decay: 0.01
        """)
    assert load_config(path)["params"]["optimizer_params"] == {
        "beta_1": 0.9, "beta_2": 0.998, "weight_decay": 0.01}
    path = write_config(tmp_path, """
        params:
          optimizer: SGD
          optimizer_params:
            momentum: 0.9
            beta_2: 0.99
        """)
    assert errors_of(path) == [
        "params.optimizer_params.beta_2: not an argument of keras.optimizers.SGD (it takes "
        "momentum, nesterov, weight_decay, clipnorm, clipvalue, global_clipnorm, "
        "loss_scale_factor)"
    ]


def test_schedule_options_need_a_schedule(tmp_path):
    path = write_config(
        tmp_path,
        """
        params:
          decay_type: null
          start_decay_steps: 100
          decay_step_duration: 1
          minimum_learning_rate: 0.0001
        """,
    )
    assert errors_of(path) == [
        "params.minimum_learning_rate: has no effect without a params.decay_type",
        "params.start_decay_steps: has no effect without a params.decay_type",
    ]


def test_inv_sqrt_decay_takes_the_peak_learning_rate(tmp_path):
    from kerasnmt.training import InvSqrtDecay, ScheduleWrapper
    from kerasnmt.training.run_optimizer import build_optimizer

    path = write_config(
        tmp_path,
        """
        params:
          learning_rate: 0.005
          decay_type: InvSqrtDecay
          decay_params:
            warmup_steps: 2000
            initial_learning_rate: 1.0e-4
        train:
          batch_size: 100
          effective_batch_size: 300
        """,
    )
    config = load_config(path)
    assert config["params"]["decay_type"] == "InvSqrtDecay"
    assert config["params"]["decay_params"] == {
        "model_dim": None, "warmup_steps": 2000, "initial_learning_rate": 1e-4
    }
    assert check_config(config, str(tmp_path)) == config  # checked again: still valid
    optimizer = build_optimizer(config)
    assert optimizer.gradient_accumulation_steps == 3
    schedule = optimizer._learning_rate
    assert isinstance(schedule, ScheduleWrapper) and isinstance(schedule.schedule, InvSqrtDecay)
    assert schedule.schedule.get_config() == {
        "learning_rate": 0.005, "warmup_steps": 2000, "initial_learning_rate": 1e-4,
        "step_duration": 1,
    }
    # Optimizer steps (batches) 3 * 1999 to 3 * 1999 + 2 are weight update 1999: the peak.
    for step in (3 * 1999, 3 * 1999 + 2):
        assert abs(float(schedule(step)) - 0.005) < 1e-9
    assert abs(float(schedule(0)) - (1e-4 + 4.9e-3 / 2000)) < 1e-9
    assert abs(float(schedule(3 * 7999)) - 0.0025) < 1e-9


def test_decay_params_of_the_other_schedule_are_refused(tmp_path):
    path = write_config(
        tmp_path,
        """
        params:
          learning_rate: 0.005
          decay_type: InvSqrtDecay
          decay_params:
            model_dim: 512
        """,
    )
    assert errors_of(path) == [
        "params.decay_params.model_dim: has no effect with params.decay_type InvSqrtDecay "
        "(its params.learning_rate is the peak)"
    ]
    path = write_config(tmp_path, "params:\n  decay_params:\n    initial_learning_rate: 1.0e-7\n")
    assert errors_of(path) == [
        "params.decay_params.initial_learning_rate: has no effect with params.decay_type "
        "NoamDecay (only InvSqrtDecay has one)"
    ]
    path = write_config(
        tmp_path,
        "params:\n  decay_type: null\n  decay_params:\n    initial_learning_rate: 0.001\n",
    )
    assert errors_of(path) == [
        "params.decay_params.initial_learning_rate: has no effect with params.decay_type "
        "null (only InvSqrtDecay has one)"
    ]
    # The defaults, written out, are not refused.
    path = write_config(
        tmp_path,
        "params:\n  decay_params:\n    model_dim: null\n    initial_learning_rate: 0\n",
    )
    assert load_config(path)["params"]["decay_params"]["model_dim"] == 512


def test_eval_target_language_is_a_moses_language_code(tmp_path):
    assert default_config()["eval"]["target_language"] == "en"
    config = load_config(write_config(tmp_path, "eval:\n  target_language: de\n"))
    assert config["eval"]["target_language"] == "de"
    expected = "a language code of 2 or 3 lowercase letters (en, de, fr, cs, ...)"
    for value, got in [("DE", "'DE'"), ("german", "'german'"), ("d", "'d'"), ("1", "1"),
                       ("[de]", "['de']")]:
        path = write_config(tmp_path, f"eval:\n  target_language: {value}\n")
        assert errors_of(path) == [f"eval.target_language: expected {expected}, got {got}"]
    # YAML 1.1 reads an unquoted `no` (Norwegian) as false.
    path = write_config(tmp_path, "eval:\n  target_language: no\n")
    assert errors_of(path) == [
        f'eval.target_language: expected {expected}, got false (quote the code: "no")']
    assert load_config(write_config(tmp_path, 'eval:\n  target_language: "no"\n'))[
        "eval"]["target_language"] == "no"


def test_early_stopping_needs_the_validation_files(run_dir):
    path = write_config(run_dir, "eval:\n  early_stopping:\n    steps: 4\n")
    assert errors_of(path) == [
        "eval.early_stopping.steps: needs data.eval_features_file and data.eval_labels_file"
    ]


def test_a_mistake_is_not_reported_again_as_a_contradiction(run_dir):
    path = write_config(
        run_dir,
        """
        data:
          train_features_file: missing.en
          train_labels_file: train.de
          train_alignments: train.align
        model:
          num_units: 100
          num_heads: 0
        params:
          beam_width: 0
          num_hypotheses: 3
        """,
    )
    assert errors_of(path) == [
        f"data.train_features_file: file not found: {run_dir / 'missing.en'} "
        f"(relative to {run_dir})",
        "model.num_heads: expected an integer >= 1, got 0",
        "params.beam_width: expected an integer >= 1, got 0",
    ]


def test_required_keys(tmp_path):
    path = write_config(tmp_path, "train:\n  batch_size: 0\n")
    required = ["model_dir", "data.train_features_file", "train.batch_size"]
    assert errors_of(path, required=required) == [
        "data.train_features_file: required but not set",
        "model_dir: required but not set",
        "train.batch_size: expected an integer >= 1, got 0",
    ]


def test_every_error_is_in_the_one_message(tmp_path):
    path = write_config(tmp_path, "train:\n  batch_type: token\nmodel:\n  dropout: 2\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: 2 errors in the configuration:\n")
    for error in caught.value.errors:
        assert f"\n  {error}" in message


def test_yaml_problems(tmp_path):
    path = write_config(tmp_path, "train:\n  batch_size: 32\n  max_step: 10\n  batch_size: 64\n")
    assert errors_of(path) == ["line 4: key 'batch_size' given twice (first on line 2)"]

    path = write_config(tmp_path, "train:\n  batch_size: [32\n")
    [error] = errors_of(path)
    assert error.startswith("not valid YAML:") and "line 3" in error

    path = write_config(tmp_path, "- train\n- eval\n")
    assert errors_of(path) == ["expected a mapping of sections at the top, got ['train', 'eval']"]

    assert errors_of(tmp_path / "absent.yml") == ["the configuration file does not exist"]


def test_scientific_notation_without_a_dot_is_a_number(tmp_path):
    # YAML 1.1 (PyYAML) reads 1e-4 as a string; a learning rate written that way still counts.
    config = load_config(write_config(tmp_path, "params:\n  learning_rate: 1e-4\n"))
    assert config["params"]["learning_rate"] == pytest.approx(1e-4)


def test_check_config_takes_a_dict(run_dir):
    config = check_config(
        {"data": {"source_vocabulary": "vocab.en"}, "train": {"max_step": None}}, str(run_dir)
    )
    assert config["data"]["source_vocabulary"] == str(run_dir / "vocab.en")
    assert config["train"]["max_step"] is None


def test_docs_training_page_carries_the_generated_reference():
    text = DOCS_TRAINING.read_text(encoding="utf-8")
    begin = "<!-- BEGIN config reference: python -m kerasnmt.config -->\n"
    end = "<!-- END config reference -->"
    assert begin in text and end in text, f"{DOCS_TRAINING} lost its reference markers"
    embedded = text.split(begin, 1)[1].split(end, 1)[0]
    assert embedded.strip() == config_reference().strip(), (
        f"{DOCS_TRAINING} is out of date: replace the text between the markers with the "
        "output of `python -m kerasnmt.config`"
    )
    for key_path, option in walk(SCHEMA):
        assert f"`{key_path}`" in embedded


def test_paths_inside_home_are_expanded(run_dir, monkeypatch):
    monkeypatch.setenv("HOME", str(run_dir))
    config = check_config({"data": {"source_vocabulary": "~/vocab.en"}}, "/")
    assert config["data"]["source_vocabulary"] == os.path.join(str(run_dir), "vocab.en")


@pytest.mark.parametrize("page", ["getting_started.md", "training.md", "decoding.md", "cli.md"])
def test_yaml_examples_in_the_docs_are_valid_configurations(page, tmp_path):
    import re

    import yaml

    text = (DOCS_TRAINING.parent / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks, f"docs/{page} has no YAML example"
    for block in blocks:
        values = yaml.safe_load(block)
        for value in values.get("data", {}).values():  # the data files the example names
            for name in value if isinstance(value, list) else [value]:
                if not isinstance(name, str):
                    continue
                (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / name).write_text("x\n", encoding="utf-8")
        check_config(values, str(tmp_path), source=f"docs/{page}")


def test_batch_size_multiple_needs_token_batches(tmp_path):
    path = write_config(tmp_path, """
        train:
          batch_type: examples
          batch_size_multiple: 8
        """)
    assert errors_of(path) == [
        "train.batch_size_multiple: has no effect with train.batch_type examples (batches "
        "hold train.batch_size examples); use batch_type tokens"
    ]
    path = write_config(tmp_path, """
        train:
          batch_type: tokens
          batch_size_multiple: 8
          prefetch_buffer_size: 4
          pad_to_bucket_boundary: true
          mixed_precision: auto
        """)
    train = load_config(path)["train"]
    assert [train[key] for key in ("batch_size_multiple", "prefetch_buffer_size",
                                   "pad_to_bucket_boundary", "mixed_precision")] == [
        8, 4, True, "auto"]


def test_a_tpu_needs_static_shapes(tmp_path):
    path = write_config(tmp_path, """
        train:
          tpu: local
          maximum_labels_length: null
        """)
    assert errors_of(path) == [
        "train.maximum_labels_length: must be set with train.tpu (a bounded number of batch "
        "shapes)",
        "train.pad_to_bucket_boundary: must be true with train.tpu (a TPU compiles one "
        "program a batch shape)",
    ]
    path = write_config(tmp_path, """
        train:
          tpu: local
          pad_to_bucket_boundary: true
        """)
    assert load_config(path)["train"]["tpu"] == "local"


def test_sentencepiece_sampling_needs_a_sentencepiece_model(run_dir):
    (run_dir / "sp.model").write_text("x\n", encoding="utf-8")
    path = write_config(run_dir, """
        data:
          sentencepiece_sampling_alpha: 0.1
        """)
    assert errors_of(path) == [
        "data.sentencepiece_sampling_alpha: given without a SentencePiece model "
        "(data.source_sentencepiece or data.target_sentencepiece)",
    ]
    path = write_config(run_dir, """
        data:
          target_sentencepiece: sp.model
          sentencepiece_sampling_alpha: 1.0
        """)
    assert errors_of(path) == [
        "data.sentencepiece_sampling_alpha: expected a number in (0, 1), or null, got 1.0"]
    path = write_config(run_dir, """
        data:
          target_sentencepiece: sp.model
          train_features_file: train.en
          train_labels_file: train.de
          sentencepiece_sampling_alpha: 0.1
        """)
    assert load_config(path)["data"]["sentencepiece_sampling_alpha"] == 0.1


@pytest.mark.parametrize("key, training_data", [
    ("train_alignments", "train_features_file: train.en\n  train_labels_file: train.de\n"
                         "  train_alignments: train.align"),
    ("train_shards", "train_shards: train.index.json"),
])
def test_sentencepiece_sampling_needs_data_of_free_segmentation(run_dir, key, training_data):
    (run_dir / "sp.model").write_text("x\n", encoding="utf-8")
    (run_dir / "train.index.json").write_text("{}\n", encoding="utf-8")
    path = run_dir / "run.yml"
    path.write_text("data:\n  source_sentencepiece: sp.model\n  sentencepiece_sampling_alpha: "
                    f"0.1\n  {training_data}\n", encoding="utf-8")
    assert errors_of(path) == [
        f"data.sentencepiece_sampling_alpha: given with data.{key}, which hold one "
        "segmentation of each sentence",
    ]


def test_translation_batches_count_sentences_and_tokens_are_refused(run_dir):
    """`kerasnmt translate` batches sentences: an OpenNMT-tf `infer.batch_type: tokens` is
    an error, not a setting read as a number of sentences."""
    path = write_config(run_dir, "infer:\n  batch_type: tokens\n  batch_size: 2048\n")
    assert errors_of(path) == ["infer.batch_type: expected one of examples, got 'tokens'"]
    for section in ("train", "eval"):
        path = write_config(run_dir, f"{section}:\n  batch_type: tokens\n")
        assert load_config(path)[section]["batch_type"] == "tokens"
