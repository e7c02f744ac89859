"""The `tf.distribute` strategy `kerasnmt train` runs in, chosen in this one place.

- `train.tpu` names a TPU: `TPUStrategy` over its cores;
- `TF_CONFIG` is set: `MultiWorkerMirroredStrategy`, one process a worker (checked
  first by `parse_tf_config`);
- several GPUs are visible: `MirroredStrategy` over them;
- otherwise the default strategy (one device).

`train.batch_size` is per replica (OpenNMT-tf's meaning): a step takes `batch_size *
num_replicas_in_sync` examples or tokens, which Keras' `fit` cuts into one slice a replica,
and `train.effective_batch_size` counts all replicas. Only the chief (see `is_chief`)
writes to `model_dir`; every worker restores from it.
"""

import dataclasses
import json
import os

import tensorflow as tf

WORKERS_DIRECTORY = "workers"


class WorkerLostError(RuntimeError):
    """A worker of a multi-worker run stopped answering: the others abort their collectives
    (TensorFlow checks its peers every 30 s) and end with this, instead of waiting forever."""


@dataclasses.dataclass(frozen=True)
class ClusterTask:
    """This process's place in a `TF_CONFIG` cluster.

    Attributes:
        cluster: job name -> list of `host:port` addresses.
        task_type: this process's job (`worker` or `chief`).
        task_index: its index in that job.
    """

    cluster: dict
    task_type: str
    task_index: int

    @property
    def is_chief(self):
        """The `chief` task, or `worker` 0 in a cluster without one (TensorFlow's rule)."""
        if "chief" in self.cluster:
            return self.task_type == "chief"
        return self.task_type == "worker" and self.task_index == 0


def parse_tf_config(text):
    """Reads and checks the `TF_CONFIG` of a multi-worker run.

    Args:
        text: the value of the `TF_CONFIG` environment variable, e.g.
            `{"cluster": {"worker": ["host1:2222", "host2:2222"]},
            "task": {"type": "worker", "index": 0}}`.

    Returns:
        A `ClusterTask`.

    Raises:
        ValueError: naming TF_CONFIG and what is wrong with it: not JSON, no `cluster` or
            `task`, a job without addresses, an address given twice, a task whose type is
            not a job of the cluster or whose index is out of range.

    Examples:
        >>> task = parse_tf_config('{"cluster": {"worker": ["a:1", "b:1"]}, '
        ...                        '"task": {"type": "worker", "index": 1}}')
        >>> task.task_index, task.is_chief
        (1, False)
        >>> parse_tf_config('{"cluster": {"worker": ["a:1", "a:1"]}, '
        ...                 '"task": {"type": "worker", "index": 0}}')
        Traceback (most recent call last):
        ...
        ValueError: TF_CONFIG: address a:1 is given twice in cluster (worker[0] and worker[1]); each task needs its own host:port
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"TF_CONFIG: expected a JSON object with cluster and task, got {text!r}")
    missing = [key for key in ("cluster", "task") if not isinstance(value.get(key), dict)]
    if missing:
        raise ValueError(
            f"TF_CONFIG: no {' and no '.join(missing)} (expected an object like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            f'"task": {{"type": "worker", "index": 0}}}}), got {text!r}'
        )
    cluster, task = value["cluster"], value["task"]
    seen = {}
    for job, addresses in cluster.items():
        if not isinstance(addresses, list) or not addresses:
            raise ValueError(f"TF_CONFIG: cluster.{job} must be a non-empty list of host:port "
                             f"addresses, got {addresses!r}")
        for index, address in enumerate(addresses):
            if address in seen:
                raise ValueError(
                    f"TF_CONFIG: address {address} is given twice in cluster ({seen[address]} "
                    f"and {job}[{index}]); each task needs its own host:port"
                )
            seen[address] = f"{job}[{index}]"
    task_type, task_index = task.get("type"), task.get("index")
    if task_type not in cluster:
        raise ValueError(f"TF_CONFIG: task.type {task_type!r} is not a job of the cluster "
                         f"({', '.join(cluster)})")
    if isinstance(task_index, bool) or not isinstance(task_index, int) or not (
            0 <= task_index < len(cluster[task_type])):
        raise ValueError(
            f"TF_CONFIG: task.index {task_index!r} is out of range: cluster.{task_type} has "
            f"{len(cluster[task_type])} addresses (indices 0 to {len(cluster[task_type]) - 1})"
        )
    return ClusterTask(cluster, task_type, task_index)


def strategy_kind(tpu, tf_config, num_gpus):
    """Which strategy a run takes: `"tpu"`, `"multi_worker"`, `"mirrored"` or `"default"`.

    Args:
        tpu: `train.tpu` (a TPU name or address), or None.
        tf_config: the `TF_CONFIG` environment variable, or None.
        num_gpus: the number of GPUs visible.

    Examples:
        >>> strategy_kind(None, None, 1), strategy_kind(None, None, 2)
        ('default', 'mirrored')
        >>> strategy_kind("my-tpu", None, 0), strategy_kind(None, '{"cluster": {}}', 8)
        ('tpu', 'multi_worker')
    """
    if tpu is not None:
        if tf_config:
            raise ValueError(
                f"train.tpu names a TPU ({tpu!r}) and TF_CONFIG is set: a TPU finds its own "
                "hosts; unset TF_CONFIG, or set train.tpu to null for multi-worker training"
            )
        return "tpu"
    if tf_config:
        return "multi_worker"
    return "mirrored" if num_gpus > 1 else "default"


def training_strategy(config, environ=None):
    """The strategy a training run of `config` takes (see `strategy_kind`), built.

    Call it before TensorFlow runs any operation: a multi-worker strategy must configure
    the process's collectives first.

    Args:
        config: a checked configuration.
        environ: the environment (`os.environ` by default), where `TF_CONFIG` is read.

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: a `TF_CONFIG` that `parse_tf_config` refuses; `TF_CONFIG` without
            `train.seed` (every worker must draw the same batches); `TF_CONFIG` and
            `train.tpu` both set; a TPU that cannot be reached.
    """
    environ = os.environ if environ is None else environ
    tpu, tf_config = config["train"]["tpu"], environ.get("TF_CONFIG")
    gpus = tf.config.list_physical_devices("GPU")
    kind = strategy_kind(tpu, tf_config, len(gpus))
    if kind == "tpu":
        return _tpu_strategy(tpu)
    if kind == "multi_worker":
        parse_tf_config(tf_config)
        if config["train"]["seed"] is None:
            raise ValueError(
                "train.seed: training on several workers (TF_CONFIG is set) needs a seed: "
                "every worker builds the same global batches and takes its own slice of each"
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == "mirrored":
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def _tpu_strategy(name):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=name)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        raise ValueError(f"train.tpu: cannot reach the TPU {name!r}: {error}") from None
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy):
    """Whether this process writes the run's checkpoints, logs and exports to `model_dir`
    (the only process, or the chief of a multi-worker cluster)."""
    return strategy.extended.should_checkpoint


def output_directory(model_dir, strategy):
    """Where this process writes: `model_dir` for the chief, else its own
    `model_dir/workers/TYPE-INDEX` (every worker takes part in saving checkpoints, whose
    variables it holds too; only the chief's are the run's)."""
    if is_chief(strategy):
        return model_dir
    resolver = strategy.cluster_resolver
    return os.path.join(model_dir, WORKERS_DIRECTORY, f"{resolver.task_type}-{resolver.task_id}")


def distributed_input(dataset):
    """`dataset`, a stream of global batches that every worker builds alike (same files,
    same `train.seed`), with the sharding Keras' `fit` then applies: each worker keeps its
    replicas' slices of every batch (`AutoShardPolicy.DATA`), so that a step's examples
    are those of one batch of the pipeline, as with one process."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)
