"""The training data pipeline, with OpenNMT-tf's semantics and option names.

From parallel text files (or sharded TFRecord corpora, see `kerasnmt.data.shards`):

1. read the files line by line, zipped; files of different lengths are an error;
2. shard across workers (`num_shards`, `shard_index`), then shuffle by
   `sample_buffer_size` (see `kerasnmt.data.shuffling`);
3. map each `(source, target[, alignment])` line through the model's
   `TranslationPreprocessor` into `(features, labels)`;
4. keep `0 < length <= maximum_features_length` / `maximum_labels_length` (tokens,
   before `<s>`/`</s>`);
5. bucket by length and batch (`kerasnmt.data.batching`);
6. drop batches whose size is not a multiple of `num_replicas`;
7. repeat (several corpora are repeated each on its own and sampled by
   `train_files_weights`), prefetch.

A pipeline that yields no batch raises an error naming the files and the limits, instead
of ending at once or hanging in `repeat()`.
"""

import tensorflow as tf

from kerasnmt.data.batching import (
    batch_sequence_dataset,
    filter_examples_by_length,
    filter_irregular_batches,
    source_length,
    target_length,
)
from kerasnmt.data.empty_check import fail_if_empty
from kerasnmt.data.shuffling import shuffled_parallel_lines

AUTOTUNE = tf.data.AUTOTUNE


def _check_preprocessor_does_not_truncate(preprocessor):
    for name in ("maximum_source_length", "maximum_target_length"):
        if getattr(preprocessor, name, None) is not None:
            raise ValueError(
                f"the preprocessor truncates sentences ({name}="
                f"{getattr(preprocessor, name)}): training must drop long examples, not "
                "cut them; give the training pipeline a preprocessor without maximum "
                "lengths and use maximum_features_length / maximum_labels_length instead"
            )


def _limits_description(maximum_features_length, maximum_labels_length, num_replicas):
    text = (
        f"every example needs 0 < source length <= maximum_features_length="
        f"{maximum_features_length} and 0 < target length <= maximum_labels_length="
        f"{maximum_labels_length} (in tokens)"
    )
    if num_replicas > 1:
        text += f", and batches need a size divisible by num_replicas={num_replicas}"
    return text


def _batch_examples(
    examples,
    batch_size,
    batch_type,
    batch_size_multiple,
    length_bucket_width,
    maximum_features_length,
    maximum_labels_length,
    pad_to_bucket_boundary,
    num_replicas,
    what,
    filter_lengths=True,
):
    if num_replicas < 1:
        raise ValueError(f"num_replicas must be at least 1, got {num_replicas}")
    if filter_lengths:
        examples = examples.apply(
            filter_examples_by_length(maximum_features_length, maximum_labels_length)
        )
    batches = examples.apply(
        batch_sequence_dataset(
            batch_size * num_replicas,
            batch_type=batch_type,
            batch_size_multiple=batch_size_multiple * num_replicas,
            length_bucket_width=length_bucket_width,
            pad_to_bucket_boundary=pad_to_bucket_boundary,
        )
    )
    batches = batches.apply(filter_irregular_batches(num_replicas))
    return fail_if_empty(
        batches,
        f"no training batch from {what}: "
        + _limits_description(maximum_features_length, maximum_labels_length, num_replicas),
    )


def make_training_batches(
    dataset,
    preprocessor,
    batch_size,
    batch_type="examples",
    batch_size_multiple=1,
    length_bucket_width=1,
    maximum_features_length=None,
    maximum_labels_length=None,
    pad_to_bucket_boundary=False,
    num_replicas=1,
    num_parallel_calls=AUTOTUNE,
):
    """Preprocesses, filters and batches raw `(source, target[, alignment])` strings.

    This is the core of `training_dataset`, without reading files, shuffling, repeating
    or prefetching, for a `tf.data.Dataset` of raw string pairs that already exists.

    Args:
        dataset: a `tf.data.Dataset` of `(source, target)` or `(source, target,
            alignment)` string scalars (alignment: Pharaoh `"s-t s-t ..."`).
        preprocessor: a `TranslationPreprocessor` (or any callable
            `preprocessor(source, target[, alignment]) -> (features, labels)` with its
            conventions) that does not truncate.
        batch_size: examples (`batch_type="examples"`) or tokens (`"tokens"`) per batch,
            per replica.
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value.
        length_bucket_width: batches hold examples whose `max(source, target)` length is
            in the same bucket of this width; `None` for no bucketing.
        maximum_features_length: drop examples whose source is longer (tokens).
        maximum_labels_length: drop examples whose target is longer (tokens, `<s>` and
            `</s>` not counted).
        pad_to_bucket_boundary: pad to the bucket's longest length (static shapes).
        num_replicas: batches hold `batch_size * num_replicas` (examples or tokens) and
            their size is a multiple of `num_replicas`; other batches are dropped.
        num_parallel_calls: parallelism of the preprocessing map.

    Returns:
        A finite `tf.data.Dataset` of batched `(features, labels)`. Iterating it raises
        `tf.errors.InvalidArgumentError` if no batch is left after filtering.

    Example:
    >>> import tensorflow as tf
    >>> from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
    >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
    >>> preprocessor = TranslationPreprocessor(
    ...     WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary)
    >>> pairs = tf.data.Dataset.from_tensor_slices(
    ...     (["a b", "a", "b a", "b", "a"], ["a", "b", "a", "a", ""]))
    >>> batches = make_training_batches(pairs, preprocessor, batch_size=2)
    >>> [features["ids"].numpy().tolist() for features, labels in batches]
    [[[3, 4], [4, 3]], [[3], [4]]]
    """
    _check_preprocessor_does_not_truncate(preprocessor)
    arity = len(dataset.element_spec) if isinstance(dataset.element_spec, tuple) else 1
    if arity not in (2, 3):
        raise ValueError(
            "make_training_batches expects (source, target) or (source, target, alignment) "
            f"elements, got {dataset.element_spec}"
        )
    examples = dataset.map(preprocessor, num_parallel_calls=num_parallel_calls)
    return _batch_examples(
        examples,
        batch_size,
        batch_type,
        batch_size_multiple,
        length_bucket_width,
        maximum_features_length,
        maximum_labels_length,
        pad_to_bucket_boundary,
        num_replicas,
        what="the dataset",
    )
