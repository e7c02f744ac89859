"""A SavedModel directory that lost files is named as such, before TensorFlow reads it."""

import os
import shutil

import pytest
import tensorflow as tf

from kerasnmt import cli
from kerasnmt.export.saved_model_directory import check_saved_model_directory


class _Doubler(tf.Module):
    def __init__(self):
        super().__init__()
        self.factor = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, values):
        return values * self.factor


@pytest.fixture
def saved_model(tmp_path):
    path = str(tmp_path / "exported")
    module = _Doubler()
    tf.saved_model.save(module, path, signatures=module.__call__)
    return path


def test_a_complete_saved_model_passes(saved_model):
    check_saved_model_directory(saved_model)
    assert tf.saved_model.load(saved_model)(tf.constant([1.5])).numpy().tolist() == [3.0]


def test_missing_variables_are_named_instead_of_tensorflow_s_device_hint(saved_model, capsys):
    data = os.path.join(saved_model, "variables", "variables.data-00000-of-00001")
    os.remove(data)
    with pytest.raises(OSError) as raised:
        check_saved_model_directory(saved_model)
    assert str(raised.value) == (
        f"{saved_model}: the SavedModel's variables are missing (no "
        "variables/variables.data-00000-of-00001): copy the whole exported directory, or "
        "export it again")

    shutil.rmtree(os.path.join(saved_model, "variables"))
    status = cli.main(["translate", "--saved-model", saved_model, "--input", "unread.txt"])
    err = capsys.readouterr().err
    assert status == 2
    assert err == (
        f"kerasnmt translate: error: {saved_model}: the SavedModel's variables are missing "
        "(no variables/variables.index): copy the whole exported directory, or export it "
        "again\n")


def test_a_directory_without_saved_model_pb_is_not_a_saved_model(saved_model):
    os.remove(os.path.join(saved_model, "saved_model.pb"))
    with pytest.raises(OSError, match="not a SavedModel directory \\(no saved_model.pb\\)"):
        check_saved_model_directory(saved_model)
