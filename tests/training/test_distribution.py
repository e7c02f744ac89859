"""The strategy `kerasnmt train` chooses, and the TF_CONFIG and TPU settings it refuses."""

import json

import pytest

from kerasnmt.config import default_config
from kerasnmt.training.distribution import parse_tf_config, strategy_kind, training_strategy

TWO_WORKERS = {"worker": ["localhost:2222", "localhost:2223"]}


def tf_config(cluster=TWO_WORKERS, task_type="worker", index=0):
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def test_a_valid_tf_config_gives_the_task_and_its_chief():
    assert parse_tf_config(tf_config(index=0)).is_chief
    assert not parse_tf_config(tf_config(index=1)).is_chief
    with_chief = {"chief": ["host0:2222"], **TWO_WORKERS}
    assert parse_tf_config(tf_config(with_chief, "chief", 0)).is_chief
    assert not parse_tf_config(tf_config(with_chief, "worker", 0)).is_chief


@pytest.mark.parametrize("text, message", [
    ("{'cluster': {}}", "TF_CONFIG is not valid JSON (Expecting property name enclosed in "
                        "double quotes: line 1 column 2 (char 1))"),
    ("[1, 2]", "TF_CONFIG: expected a JSON object with cluster and task, got '[1, 2]'"),
    (json.dumps({"task": {"type": "worker", "index": 0}}), "TF_CONFIG: no cluster (expected"),
    (json.dumps({"cluster": TWO_WORKERS}), "TF_CONFIG: no task (expected"),
    (json.dumps({}), "TF_CONFIG: no cluster and no task (expected"),
    (tf_config({"worker": []}), "TF_CONFIG: cluster.worker must be a non-empty list of "
                                "host:port addresses, got []"),
    (tf_config({"worker": ["a:1", "b:1", "a:1"]}, index=2),
     "TF_CONFIG: address a:1 is given twice in cluster (worker[0] and worker[2]); each task "
     "needs its own host:port"),
    (tf_config({"chief": ["a:1"], "worker": ["a:1"]}),
     "TF_CONFIG: address a:1 is given twice in cluster (chief[0] and worker[0])"),
    (tf_config(index=2), "TF_CONFIG: task.index 2 is out of range: cluster.worker has 2 "
                         "addresses (indices 0 to 1)"),
    (tf_config(index=-1), "TF_CONFIG: task.index -1 is out of range"),
    (tf_config(index="0"), "TF_CONFIG: task.index '0' is out of range"),
    (tf_config(task_type="ps"), "TF_CONFIG: task.type 'ps' is not a job of the cluster (worker)"),
])
def test_a_bad_tf_config_is_refused_naming_what_is_wrong(text, message):
    with pytest.raises(ValueError) as caught:
        parse_tf_config(text)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("tpu, config, gpus, kind", [
    (None, None, 0, "default"),
    (None, None, 1, "default"),
    (None, None, 4, "mirrored"),
    (None, tf_config(), 0, "multi_worker"),
    (None, tf_config(), 4, "multi_worker"),  # Each worker mirrors its own GPUs.
    ("local", None, 0, "tpu"),
    ("grpc://10.0.0.2:8470", "", 2, "tpu"),  # An empty TF_CONFIG is none.
])
def test_the_strategy_of_each_setting(tpu, config, gpus, kind):
    assert strategy_kind(tpu, config, gpus) == kind


def _config(**train):
    config = default_config()
    config["train"].update(train)
    return config


def test_training_strategy_refuses_before_building_anything():
    with pytest.raises(ValueError, match="train.tpu names a TPU .'my-tpu'. and TF_CONFIG is set"):
        training_strategy(_config(tpu="my-tpu"), environ={"TF_CONFIG": tf_config()})
    with pytest.raises(ValueError, match="TF_CONFIG: task.index 5 is out of range"):
        training_strategy(_config(seed=1), environ={"TF_CONFIG": tf_config(index=5)})
    with pytest.raises(ValueError, match=r"^train.seed: training on several workers "
                                         r"\(TF_CONFIG is set\) needs a seed"):
        training_strategy(_config(seed=None), environ={"TF_CONFIG": tf_config()})


def test_without_tf_config_or_tpu_the_strategy_is_todays_default():
    import tensorflow as tf

    assert training_strategy(_config(), environ={}) is tf.distribute.get_strategy()
