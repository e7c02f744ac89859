"""The training batches of a run, from its `data` and `train` sections.

Examples:
    >>> import inspect
    >>> list(inspect.signature(run_training_dataset).parameters)
    ['config', 'preprocessor', 'start_batch']
"""

import tensorflow as tf

from kerasnmt.data.shards import check_shards_preprocessor
from kerasnmt.data.training_pipeline import training_dataset

# The `train` options that `training_dataset` takes under the same names.
TRAIN_DATASET_OPTIONS = (
    "batch_size", "batch_type", "batch_size_multiple", "length_bucket_width",
    "maximum_features_length", "maximum_labels_length", "pad_to_bucket_boundary",
    "sample_buffer_size", "seed",
)


def run_training_dataset(config, preprocessor, start_batch=0):
    """The training batches `kerasnmt train` reads for `config` (its `data` and `train`
    keys), from `kerasnmt.data.training_dataset`: global batches of `train.batch_size`
    per replica of the current `tf.distribute` strategy, from the text files or from the
    shards of `data.train_shards` (checked against `preprocessor`, and started at batch
    `start_batch`)."""
    data, train_section = config["data"], config["train"]
    if data["train_shards"] is not None:
        corpus = dict(
            shards=data["train_shards"],
            start_batch=start_batch,
            preprocessor_check=lambda index: check_shards_preprocessor(index, preprocessor),
        )
    else:
        corpus = dict(
            source_file=data["train_features_file"],
            target_file=data["train_labels_file"],
            preprocessor=preprocessor,
            alignment_file=data["train_alignments"],
        )
    return training_dataset(
        **corpus,
        **{name: train_section[name] for name in TRAIN_DATASET_OPTIONS},
        num_replicas=tf.distribute.get_strategy().num_replicas_in_sync,
        prefetch_buffer_size=train_section["prefetch_buffer_size"] or tf.data.AUTOTUNE,
        train_files_weights=data["train_files_weights"],
    )
