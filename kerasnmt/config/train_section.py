"""The `train` section of the run configuration: batching, checkpoints, precision, devices.

Examples:
    >>> TRAIN_SECTION["batch_type"].default
    'tokens'
"""

from kerasnmt.config.option_types import Boolean, Choice, Integer, Option, Text
from kerasnmt.data.batching import BATCH_TYPES
from kerasnmt.training.precision import MIXED_PRECISION_SETTINGS


TRAIN_SECTION = {
    "batch_size": Option(
        3072, Integer(minimum=1), "Batch size, counted in `batch_type` units."
    ),
    "batch_type": Option(
        "tokens",
        Choice(*BATCH_TYPES),
        "Count `batch_size` in examples or in tokens (padding included).",
    ),
    "batch_size_multiple": Option(
        1,
        Integer(minimum=1),
        "With `batch_type: tokens`, the number of examples of a batch is a multiple of "
        "this (8 suits float16 kernels; a bucket too long for one multiple still gets one).",
    ),
    "effective_batch_size": Option(
        25000,
        Integer(minimum=1, nullable=True),
        "Accumulate gradients over enough batches to reach at least this batch size "
        "before each update; null updates after every batch.",
    ),
    "length_bucket_width": Option(
        1,
        Integer(minimum=1),
        "Width of the length buckets batches are drawn from; smaller means less padding. "
        "With `data.train_shards`, only the rounding of `pad_to_bucket_boundary` (batches "
        "are cut from examples sorted by length).",
    ),
    "pad_to_bucket_boundary": Option(
        False,
        Boolean(),
        "Pad each batch to its length bucket's longest length instead of its own longest "
        "sequence, so that a bucket has one shape (static shapes for XLA, TPU).",
    ),
    "maximum_features_length": Option(
        100,
        Integer(minimum=1, nullable=True),
        "Drop training pairs whose source has more tokens than this; null keeps all.",
    ),
    "maximum_labels_length": Option(
        100,
        Integer(minimum=1, nullable=True),
        "Drop training pairs whose target is longer than this, counted as OpenNMT-tf "
        "counts it: its tokens plus its end mark `</s>` (so targets of at most this "
        "minus 1 tokens are kept); null keeps all.",
    ),
    "sample_buffer_size": Option(
        -1,
        Integer(minimum=-1, nullable=True),
        "Shuffle buffer, in examples: -1 shuffles the whole corpus, 0 or null does not "
        "shuffle, n shuffles shards of n examples (OpenNMT-tf's behaviour). With "
        "`data.train_shards`: the window of examples sorted and cut into batches together "
        "(-1 the whole corpus; 0 or null the whole corpus, in order, unshuffled).",
    ),
    "prefetch_buffer_size": Option(
        None,
        Integer(minimum=1, nullable=True),
        "Batches prepared ahead of training; null lets tf.data tune it (AUTOTUNE).",
    ),
    "save_checkpoints_steps": Option(
        5000, Integer(minimum=1), "Save a checkpoint every this many steps."
    ),
    "keep_checkpoint_max": Option(
        8, Integer(minimum=1), "Number of recent checkpoints kept on disk."
    ),
    "save_summary_steps": Option(
        100,
        Integer(minimum=1),
        "Every this many steps, log the mean loss, accuracy and perplexity of the steps "
        "since the previous summary, and the learning rate.",
    ),
    "max_step": Option(
        500000,
        Integer(minimum=1, nullable=True),
        "Stop training at this step; null trains until interrupted.",
    ),
    "average_last_checkpoints": Option(
        8,
        Integer(minimum=0),
        "At the end of training, average this many last checkpoints into "
        "`model_dir/avg` (a damaged one is reported and skipped: the newest readable "
        "ones); 0 does not average.",
    ),
    "mixed_precision": Option(
        None,
        Choice(*MIXED_PRECISION_SETTINGS, None),
        "Keras mixed precision policy: `mixed_float16` (GPU, with loss scaling), "
        "`mixed_bfloat16` (CPU, TPU); null trains in float32. `auto` picks "
        "`mixed_bfloat16` on a TPU, `mixed_float16` when a GPU is visible, "
        "`mixed_bfloat16` when the CPU has AVX-512 BF16 or AMX (`avx512_bf16`, "
        "`amx_bf16` in /proc/cpuinfo), float32 otherwise, and logs its choice.",
    ),
    "seed": Option(
        None,
        Integer(minimum=0, nullable=True),
        "Random seed for initialization, shuffling and dropout, and for the sampling of "
        "`params.sampling_topk` when the run's model decodes (evaluations, `translate`, "
        "`export`); null picks one at random. Needed by multi-worker training "
        "(`TF_CONFIG`).",
    ),
    "tpu": Option(
        None,
        Text(),
        "Train on this TPU (`TPUStrategy`): its name or `grpc://` address as "
        "`tf.distribute.cluster_resolver.TPUClusterResolver` takes it, `local` on a TPU "
        "VM. Needs `pad_to_bucket_boundary: true` and both maximum lengths (one shape a "
        "bucket, a bounded number of buckets). Null: the local GPUs or CPU, or the "
        "workers of `TF_CONFIG` (see Running on several devices).",
    ),
}
