"""`kerasnmt train` from the shards `kerasnmt prepare` writes (`data.train_shards`): an exact
resume at the batch where a run stopped, a clean exit, foreign shards refused."""

import glob
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kerasnmt import cli
from kerasnmt.config import load_config
from kerasnmt.runner.training_run import TRAINING_KEYS, train
from tests.run_fixtures import checkpoint_weights, tiny_run, write_config, write_corpus

# Long tests (training): run first (tests/conftest.py), in a file of their own so that
# `pytest -n 2 --dist loadfile` can run it beside tests/test_training_run.py.
pytestmark = pytest.mark.heavy(12)


@pytest.fixture
def run_dir(tmp_path):
    return write_corpus(tmp_path)


def test_training_from_shards_resumes_at_the_batch_where_it_stopped(run_dir, capsys):
    def prepare(target_vocabulary, output):
        return cli.main(["prepare", str(run_dir / "train.src"), str(run_dir / "train.tgt"),
                         "-o", str(run_dir / output), "--num-shards", "2",
                         "--source-vocabulary", str(run_dir / "vocab.src"),
                         "--target-vocabulary", str(run_dir / target_vocabulary)])

    assert prepare("vocab.tgt", "shards") == 0
    config = tiny_run(train={"max_step": 4, "save_checkpoints_steps": 2, "keep_checkpoint_max": 3,
                             "average_last_checkpoints": 0, "batch_size": 60,
                             "batch_type": "tokens", "sample_buffer_size": -1})
    del config["data"]["train_features_file"], config["data"]["train_labels_file"]
    config["data"]["train_shards"] = "shards/train.index.json"
    # A process of its own: one whose tf.data iterator over the shards outlives `fit`
    # must still exit.
    straight = write_config(run_dir, dict(config, model_dir="straight"))
    process = subprocess.run(
        [sys.executable, "-m", "kerasnmt.cli", "train", "--config", str(straight), "--verbose", "0"],
        capture_output=True, text=True, timeout=300,
    )
    assert process.returncode == 0, process.stderr
    assert "Training stopped at step 4" in process.stdout
    # A run stopped at step 2 resumes on batch 2 of the planned stream: its weights at
    # step 4 are those of the run that never stopped.
    resumed_dir = run_dir / "resumed"
    resumed_dir.mkdir()
    for path in glob.glob(str(run_dir / "straight" / "ckpt-2.*")):
        shutil.copy(path, resumed_dir)
    (resumed_dir / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n'
        "all_model_checkpoint_timestamps: 1.0\n")
    resumed = load_config(write_config(run_dir, dict(config, model_dir="resumed")),
                          required=TRAINING_KEYS)
    capsys.readouterr()
    assert train(resumed, verbose=0).step == 4
    assert f"Restored {resumed_dir / 'ckpt-2'} (step 2)" in capsys.readouterr().out
    config_path = run_dir / "run.yml"
    for expected, got in zip(checkpoint_weights(config_path, str(run_dir / "straight" / "ckpt-4")),
                             checkpoint_weights(config_path, str(resumed_dir / "ckpt-4"))):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # Shards of another vocabulary stop the run before the first step, naming the index.
    other_vocabulary = run_dir / "vocab.other"
    other_vocabulary.write_text((run_dir / "vocab.tgt").read_text() + "extra\n")
    assert prepare("vocab.other", "other") == 0
    config["data"]["train_shards"] = "other/train.index.json"
    capsys.readouterr()
    status = cli.main(["train", "--config", str(write_config(run_dir, dict(config, model_dir="o"))),
                       "--verbose", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"kerasnmt train: error: {run_dir}/other/train.index.json: these shards were written " \
           "with other tokenizers or vocabularies than the model's" in err
    assert not glob.glob(str(run_dir / "o" / "ckpt-*"))
