"""Every pipeline kerasnmt builds ends without tf.data's autotuning thread
(`kerasnmt.data.prefetching`), and still yields its elements."""

import pytest
import tensorflow as tf

from kerasnmt.data import inference_dataset, training_dataset, write_shards
from kerasnmt.training.fitting import training_batches
from tests.models.translator_fixtures import corpus, preprocessor, tiny_translator


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    sources, targets = corpus(12)
    for name, lines in (("src", sources), ("tgt", targets)):
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _assert_untuned_and_yields(dataset):
    assert dataset.options().autotune.enabled is False
    assert next(iter(dataset)) is not None


@pytest.mark.parametrize("repeat", [True, False])
def test_text_training_pipelines(files, repeat):
    _assert_untuned_and_yields(training_dataset(
        str(files / "src"), str(files / "tgt"), preprocessor(), batch_size=4,
        sample_buffer_size=0, repeat=repeat))


def test_shard_training_pipeline(files, tmp_path):
    index = write_shards(str(files / "src"), str(files / "tgt"), preprocessor(),
                         str(tmp_path / "shards"), num_shards=1)
    _assert_untuned_and_yields(training_dataset(shards=index, batch_size=4))


def test_inference_pipelines(files):
    for width in (None, 2):
        _assert_untuned_and_yields(inference_dataset(
            str(files / "src"), preprocessor(), batch_size=4, length_bucket_width=width))


def test_the_batches_fit_and_evaluate_read():
    sources, targets = corpus(8)
    pairs = tf.data.Dataset.from_tensor_slices((sources, targets))
    for x, y in ((sources, targets), (pairs, None)):
        _assert_untuned_and_yields(training_batches(
            tiny_translator(), x, y, batch_size=4, shuffle=False, batching={},
            what="fit", training=True))
