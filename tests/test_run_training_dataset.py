"""The `train` keys of a YAML configuration reach the training pipeline and the model."""

import inspect
import math

import pytest

from kerasnmt.config import load_config
from kerasnmt.config.train_section import TRAIN_SECTION
from kerasnmt.data.training_pipeline import training_dataset
from kerasnmt.training import precision
from kerasnmt.runner.run_dataset import TRAIN_DATASET_OPTIONS, run_training_dataset
from kerasnmt.runner.run_model import build_preprocessor, build_translator
from tests.run_fixtures import tiny_run, write_config, write_corpus


def _config(tmp_path, **train):
    write_corpus(tmp_path)
    return load_config(write_config(tmp_path, tiny_run(train=train)))


def test_the_options_passed_by_name_are_train_keys_and_training_dataset_arguments():
    arguments = inspect.signature(training_dataset).parameters
    assert [name for name in TRAIN_DATASET_OPTIONS
            if name not in TRAIN_SECTION or name not in arguments] == []


def test_batch_size_multiple_and_pad_to_bucket_boundary_shape_the_batches(tmp_path):
    # The corpus's pairs have 2 to 6 tokens on each side, so lengths max(source, target
    # + 1) of 3 to 7 (a target counts its </s>). Buckets of width 3 and 30-token batches:
    # bucket 0 (lengths 1-3) takes 30 // 3 = 10 examples, rounded down to a multiple of
    # 4: 8; bucket 1 (4-6) 30 // 6 = 5, so 4; bucket 2 (7-9) 30 // 9 = 3, so 4 (never
    # below the multiple). Padded to the bucket's boundary: 3, 6 or 9 source positions
    # and as many target ids.
    config = _config(tmp_path, batch_type="tokens", batch_size=30, batch_size_multiple=4,
                     length_bucket_width=3, pad_to_bucket_boundary=True,
                     prefetch_buffer_size=3)
    dataset = run_training_dataset(config, build_preprocessor(config))
    shapes = set()
    for features, labels in dataset.take(20):
        # The labels' "length" counts <s>: the target's tokens + 1, its counted length.
        longest = max(int(features["length"].numpy().max()),
                      int(labels["length"].numpy().max()))
        boundary = math.ceil(longest / 3) * 3
        assert features["ids"].shape[1] == boundary
        assert labels["ids_out"].shape[1] == boundary
        shapes.add((boundary, features["ids"].shape[0]))
    assert shapes == {(3, 8), (6, 4), (9, 4)}
    # The pipeline's last stages: its prefetch, then the options that turn autotuning off.
    assert int(dataset._input_dataset._buffer_size) == 3


def test_without_the_keys_batches_fit_their_longest_pair(tmp_path):
    config = _config(tmp_path, batch_type="tokens", batch_size=30, length_bucket_width=3)
    dataset = run_training_dataset(config, build_preprocessor(config))
    sizes = set()
    for features, labels in dataset.take(20):
        assert features["ids"].shape[1] == int(features["length"].numpy().max())
        sizes.add(features["ids"].shape[0])
    assert sizes == {10, 5, 3}  # 30 // 3, 30 // 6 and 30 // 9: the bucket boundaries, not rounded.
    assert int(dataset._input_dataset._buffer_size) == -1  # tf.data.AUTOTUNE


@pytest.mark.parametrize("flags, policy", [({"avx2", "avx512_bf16"}, "mixed_bfloat16"),
                                           ({"avx2"}, "float32")])
def test_mixed_precision_auto_gives_the_translator_the_policy_of_the_cpu(
        tmp_path, monkeypatch, flags, policy):
    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    monkeypatch.setattr(precision.tf.config, "list_physical_devices", lambda kind: [])
    translator = build_translator(_config(tmp_path, mixed_precision="auto"))
    assert translator.dtype_policy.name == policy
