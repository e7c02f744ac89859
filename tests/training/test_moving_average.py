import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.config import load_config
from kerasnmt.data.text_files import read_line_aligned
from kerasnmt.models import Translator
from kerasnmt.training import MovingAverage
from kerasnmt.runner.run_checkpoints import restore_translator
from kerasnmt.runner.run_model import build_sampler
from kerasnmt.runner.training_run import TRAINING_KEYS, _read_history, evaluate_run, train
from tests.run_fixtures import tiny_run, write_config, write_corpus

# Long tests (training runs): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(17)


def expected_averages(weights_by_update, decay, first_update):
    """OpenNMT-tf's averages (tf.train.ExponentialMovingAverage, num_updates the step) after
    each update, from the weights after each update; the first one is `first_update`."""
    averages = [weights_by_update[0]]
    for index, weights in enumerate(weights_by_update[1:], start=1):
        step = first_update + index
        d = min(decay, (1 + step) / (10 + step))
        averages.append([d * a + (1 - d) * w for a, w in zip(averages[-1], weights)])
    return averages


class _Recorder(keras.callbacks.Callback):
    """After each batch: the weights, and the weights inside `swapped_in()`."""

    def __init__(self, averaging):
        super().__init__()
        self.averaging = averaging
        self.raw, self.averaged, self.steps = [], [], []

    def on_train_batch_end(self, batch, logs=None):
        raw = [w.numpy() for w in self.model.trainable_weights]
        with self.averaging.swapped_in():
            self.averaged.append([w.numpy() for w in self.model.trainable_weights])
        for weight, value in zip(self.model.trainable_weights, raw):  # put back
            np.testing.assert_array_equal(weight.numpy(), value)
        self.raw.append(raw)
        self.steps.append(int(self.model.optimizer.iterations))


def _regression(accumulation=None):
    keras.utils.set_random_seed(2)
    x = np.random.normal(size=(48, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32") + 3.0
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1, gradient_accumulation_steps=accumulation),
                  loss="mse")
    return model, tf.data.Dataset.from_tensor_slices((x, y)).batch(4)


@pytest.mark.parametrize("decay", [0.3, 0.9])  # 0.3: min() takes each side (0.25, then 0.3)
def test_averages_follow_opennmt_tfs_formula_and_a_new_fit_starts_them_again(decay):
    model, dataset = _regression()
    averaging = MovingAverage(decay)
    recorder = _Recorder(averaging)
    model.fit(dataset.take(6), epochs=1, verbose=0, callbacks=[averaging, recorder])
    expected = expected_averages(recorder.raw, decay, first_update=1)
    for averaged, wanted in zip(recorder.averaged, expected, strict=True):
        for a, w in zip(averaged, wanted):
            np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-6)
    # The model ends with the averages (decay 0.3 and 0.9 give different ones).
    for weight, wanted in zip(model.trainable_weights, expected[-1]):
        np.testing.assert_allclose(weight.numpy(), wanted, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected[-1][0], recorder.raw[-1][0])

    # Another fit (a resumed run) starts the averages at its first update, step 7.
    recorder = _Recorder(averaging)
    model.fit(dataset.take(3), epochs=1, verbose=0, callbacks=[averaging, recorder])
    assert recorder.steps == [7, 8, 9]
    expected = expected_averages(recorder.raw, decay, first_update=7)
    for a, w in zip(recorder.averaged[-1], expected[-1]):
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-6)


def test_batches_that_only_accumulate_gradients_change_nothing():
    model, dataset = _regression(accumulation=2)
    averaging = MovingAverage(0.9)
    recorder = _Recorder(averaging)
    model.fit(dataset.take(6), epochs=1, verbose=0, callbacks=[averaging, recorder])
    assert recorder.steps == [0, 1, 1, 2, 2, 3]
    # Before the first update there is no average: the weights are their own.
    np.testing.assert_array_equal(recorder.averaged[0][0], recorder.raw[0][0])
    updates = [1, 3, 5]  # the batches after which the weights changed
    expected = expected_averages([recorder.raw[i] for i in updates], 0.9, first_update=1)
    for index, wanted in zip(updates, expected):
        np.testing.assert_allclose(recorder.averaged[index][0], wanted[0], rtol=1e-5)
    for index in (2, 4):  # accumulated only: the average of the update before
        np.testing.assert_array_equal(recorder.averaged[index][0],
                                      recorder.averaged[index - 1][0])


def test_a_run_checkpoints_and_evaluates_the_averages(tmp_path, monkeypatch):
    """The same run without and with `params.moving_average_decay`: the raw weights of
    each step (checkpoints 1 to 3 of the first) give the averages the second run's last
    checkpoint, evaluation and trained model hold."""
    # Evaluations decode without XLA: a compilation less.
    monkeypatch.setattr(Translator, "translate",
                        functools.partialmethod(Translator.translate, jit_compile=False))
    write_corpus(tmp_path)
    train_section = {"max_step": 3, "save_checkpoints_steps": 1, "keep_checkpoint_max": 3,
                     "average_last_checkpoints": 0}
    raw_path = write_config(tmp_path, tiny_run(model_dir="raw", train=train_section),
                            name="raw.yml")
    train(load_config(raw_path, required=TRAINING_KEYS), verbose=0)
    raw_translators = [
        restore_translator(load_config(raw_path), str(tmp_path / "raw" / f"ckpt-{step}"))[0]
        for step in (1, 2, 3)]
    raw = [[w.numpy() for w in translator.trainable_weights] for translator in raw_translators]

    averaged = tiny_run(model_dir="averaged", train=train_section,
                        params={"moving_average_decay": 0.5},
                        eval={"steps": 3, "export_on_best": None})
    averaged["data"].update(eval_features_file="val.src", eval_labels_file="val.tgt")
    averaged_path = write_config(tmp_path, averaged, name="averaged.yml")
    result = train(load_config(averaged_path, required=TRAINING_KEYS), verbose=0)
    expected = expected_averages(raw, 0.5, first_update=1)[-1]
    checkpoint, _ = restore_translator(load_config(averaged_path), result.checkpoint)
    assert result.checkpoint.endswith("ckpt-3")
    for in_checkpoint, trained, wanted in zip(checkpoint.trainable_weights,
                                              result.translator.trainable_weights, expected,
                                              strict=True):
        np.testing.assert_allclose(in_checkpoint.numpy(), wanted, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(trained.numpy(), in_checkpoint.numpy())
    assert any(not np.allclose(w, r) for w, r in zip(expected, raw[-1]))

    # The evaluation at step 3 is that of the averages, not of the raw weights (an export
    # on the best evaluation happens in the same context).
    config = load_config(averaged_path)
    sampler = build_sampler(config, n_best=1)
    sources, references = read_line_aligned(tmp_path / "val.src", tmp_path / "val.tgt")
    (record,) = _read_history(tmp_path / "averaged" / "evaluations.jsonl")
    assert record["step"] == 3
    for translator in (checkpoint, raw_translators[-1]):
        translator.compile()  # Keras' evaluate needs it; the loss is the model's own
    of_averages = evaluate_run(checkpoint, config, sampler, sources, references)["loss"]
    of_raw_weights = evaluate_run(raw_translators[-1], config, sampler, sources,
                                  references)["loss"]
    assert record["loss"] == pytest.approx(of_averages, rel=1e-5)
    assert abs(of_raw_weights - of_averages) > 1e-4


def test_decay_out_of_range():
    with pytest.raises(ValueError, match=r"decay must be in \(0, 1\), got 1"):
        MovingAverage(1)
