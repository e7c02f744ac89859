"""Length filtering, length bucketing and batching of preprocessed translation examples.

Examples are `(features, labels)` pairs as the `TranslationPreprocessor` makes them:
`features = {"ids", "length"(, "tokens")}` and
`labels = {"ids", "ids_out", "length"(, "tokens", "alignment")}`, where the target
`"length"` counts `<s>` (it is the number of tokens + 1).

Lengths. The length filter and the bucketing count a source in tokens and a target in
tokens plus its end mark `</s>` (`counted_target_length`), as OpenNMT-tf does: its
`labels["length"]` is the target's tokens + 1 (`WordEmbedder.make_features` adds
`<s>`/`</s>` and shifts), and `maximum_labels_length`, `0 < length` and the token budget
of a batch all read that length. So `maximum_labels_length=100` keeps targets of at most
99 tokens, and an empty target (length 1) is kept while an empty source is dropped. The
shard pipeline (`kerasnmt.data.batch_plan`) applies the same rule to its stored lengths.

The semantics and option names follow OpenNMT-tf (`opennmt/data/dataset.py`):
`filter_examples_by_length`, `batch_sequence_dataset` (bucket id
`ceil(length / length_bucket_width) - 1` over the larger of the source and target
lengths; with `batch_type="tokens"` a bucket's batch holds
`max((batch_size // ((bucket + 1) * width)) // multiple * multiple, multiple)` examples)
and `filter_irregular_batches`.

Speed. A `tf.data` function call costs tens of microseconds per element on a small CPU,
so the pipeline works on *chunks*: `CHUNK_SIZE` examples preprocessed, filtered and given
their bucket id at once, as padded tensors. Only the bucket id (a projection, nearly
free) is looked at one example at a time, by `group_by_window`; each batch is then cut
to its own longest sequence (or padded to its bucket boundary), so the batches are
exactly those of an example-by-example pipeline.
"""

import numpy as np
import tensorflow as tf

BATCH_TYPES = ("examples", "tokens")
CHUNK_SIZE = 256


def source_length(features):
    """The source length in tokens (elementwise for a chunk); OpenNMT-tf adds no mark to
    a source, so this is also the length its filter and bucketing count."""
    return tf.cast(features["length"], tf.int32)


def count_target_tokens(labels):
    """The number of target tokens (elementwise): the labels' `"length"` counts `<s>`."""
    return tf.cast(labels["length"], tf.int32) - 1


def counted_target_length(target_tokens):
    """The length of a target of `target_tokens` tokens, as filters and batches count it.

    The tokens plus the end mark `</s>`: OpenNMT-tf's `labels["length"]`, which its
    `maximum_labels_length`, its `0 < length` check and its token batching read. The one
    rule of both the text pipeline and the shard pipeline, so that a run keeps the
    examples and builds the batches OpenNMT-tf would with the same options.

    Args:
        target_tokens: a Python int, a NumPy array or a tensor of token counts.

    Returns:
        The counted lengths, of the same type.

    Examples:
        >>> counted_target_length(99)  # maximum_labels_length=100 keeps it, not 100 tokens
        100
        >>> counted_target_length(0)  # an empty target is kept (0 < length)
        1
    """
    return target_tokens + 1


def example_length(source_tokens, target_tokens):
    """The length an example is bucketed and batched by: the longer of its source and
    its counted target (`counted_target_length`), elementwise."""
    counted = counted_target_length(target_tokens)
    if isinstance(counted, tf.Tensor):
        return tf.maximum(source_tokens, counted)
    return np.maximum(source_tokens, counted)


def sequence_shape(part, key, rank, source_tokens, target_tokens):
    """The unpadded shape of one example's tensor, from its source and target lengths.

    Source sequences have `source_tokens` positions; target `"ids"`/`"ids_out"` one more
    than `target_tokens` (`<s>`/`</s>`), other target sequences (`"tokens"`)
    `target_tokens`; the alignment is `[target_tokens, source_tokens]`.

    Args:
        part: `"features"` or `"labels"`.
        key: the tensor's key in its dict.
        rank: the tensor's rank for one example (0, 1 or 2).
        source_tokens: source length (a Python int or a scalar tensor).
        target_tokens: target length.

    Returns:
        A list of `rank` sizes.
    """
    if rank == 0:
        return []
    if part == "features":
        return [source_tokens] * rank
    if rank == 2:
        return [target_tokens, source_tokens]
    return [target_tokens + 1 if key in ("ids", "ids_out") else target_tokens]


def _length_checks(maximum_features_length, maximum_labels_length):
    for name, value in (
        ("maximum_features_length", maximum_features_length),
        ("maximum_labels_length", maximum_labels_length),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be None or at least 1, got {value}")


def length_limits_description(maximum_features_length=None, maximum_labels_length=None):
    """What `keep_mask` asks of an example, in words, for the errors of empty pipelines.

    Examples:
        >>> print(length_limits_description(50, None))  # doctest: +NORMALIZE_WHITESPACE
        every example needs 0 < source length <= maximum_features_length=50 and
        0 < target length <= maximum_labels_length=None (in tokens, targets counted
        with their end mark </s>)
    """
    return (
        f"every example needs 0 < source length <= maximum_features_length="
        f"{maximum_features_length} and 0 < target length <= maximum_labels_length="
        f"{maximum_labels_length} (in tokens, targets counted with their end mark </s>)"
    )


def keep_mask(features, labels, maximum_features_length=None, maximum_labels_length=None):
    """`0 < length <= maximum` on both sides, elementwise (one example or a chunk); the
    target's length is `counted_target_length`."""
    source, target = source_length(features), counted_target_length(count_target_tokens(labels))
    keep = tf.logical_and(source > 0, target > 0)
    if maximum_features_length is not None:
        keep = tf.logical_and(keep, source <= maximum_features_length)
    if maximum_labels_length is not None:
        keep = tf.logical_and(keep, target <= maximum_labels_length)
    return keep


def filter_examples_by_length(maximum_features_length=None, maximum_labels_length=None):
    """Transformation keeping examples with `0 < length <= maximum` on both sides.

    Args:
        maximum_features_length: the longest source kept, in tokens; `None` for no limit.
        maximum_labels_length: the longest target kept, counted with its end mark `</s>`
            (`counted_target_length`: at most `maximum_labels_length - 1` tokens), as
            OpenNMT-tf counts it; `None` for no limit.

    Returns:
        A function `tf.data.Dataset -> tf.data.Dataset` for `Dataset.apply`, on a
        dataset of single examples. Empty sources are always dropped and empty targets
        kept (their length is 1), as in OpenNMT-tf.

    Examples:
        >>> import tensorflow as tf
        >>> def example(source_tokens, target_tokens):
        ...     return ({"ids": tf.ones([source_tokens], tf.int64), "length": source_tokens},
        ...             {"ids": tf.ones([target_tokens + 1], tf.int64),
        ...              "ids_out": tf.ones([target_tokens + 1], tf.int64),
        ...              "length": target_tokens + 1})
        >>> dataset = tf.data.Dataset.from_tensor_slices(([0, 1, 2, 3], [1, 1, 2, 1]))
        >>> dataset = dataset.map(example)
        >>> dataset = dataset.apply(filter_examples_by_length(maximum_features_length=2))
        >>> [int(features["length"]) for features, _ in dataset]
        [1, 2]
        >>> dataset = tf.data.Dataset.from_tensor_slices(([1, 1, 1], [0, 2, 3])).map(example)
        >>> dataset = dataset.apply(filter_examples_by_length(maximum_labels_length=3))
        >>> [int(labels["length"]) - 1 for _, labels in dataset]  # target tokens
        [0, 2]
    """
    _length_checks(maximum_features_length, maximum_labels_length)
    return lambda dataset: dataset.filter(
        lambda features, labels: keep_mask(
            features, labels, maximum_features_length, maximum_labels_length
        )
    )


def filter_chunks_by_length(maximum_features_length=None, maximum_labels_length=None):
    """`filter_examples_by_length` for a dataset of chunks (batched padded examples).

    Chunks left empty are dropped.
    """
    _length_checks(maximum_features_length, maximum_labels_length)

    def _keep(features, labels):
        keep = keep_mask(features, labels, maximum_features_length, maximum_labels_length)
        return tf.nest.map_structure(lambda t: tf.boolean_mask(t, keep), (features, labels))

    def _not_empty(features, labels):
        return tf.size(features["length"]) > 0

    return lambda chunks: chunks.map(_keep).filter(_not_empty)


def bucket_id(features, labels, length_bucket_width):
    """The length bucket: `ceil(example_length / width) - 1`, elementwise.

    With width 5, lengths 1–5 go to bucket 0, 6–10 to bucket 1, and so on; a target of 5
    tokens has length 6.
    """
    length = example_length(source_length(features), count_target_tokens(labels))
    bucket = (length + length_bucket_width - 1) // length_bucket_width - 1
    return tf.cast(tf.maximum(bucket, 0), tf.int64)


def bucket_batch_size(bucket, batch_size, length_bucket_width, batch_size_multiple=1):
    """The number of examples a `batch_type="tokens"` batch of a bucket holds.

    `max((batch_size // ((bucket + 1) * width)) // multiple * multiple, multiple)`: the
    most examples of the bucket's longest length that fit in `batch_size` tokens, rounded
    down to a multiple of `batch_size_multiple` but never below it.

    Args:
        bucket: the bucket id (a Python int or an int64 tensor).
        batch_size: the token budget of a batch.
        length_bucket_width: the bucket width in tokens.
        batch_size_multiple: the batch size is a multiple of this value.

    Examples:
        >>> bucket_batch_size(4, batch_size=100, length_bucket_width=1)
        20
        >>> bucket_batch_size(4, batch_size=100, length_bucket_width=1, batch_size_multiple=8)
        16
    """
    size = batch_size // ((bucket + 1) * length_bucket_width)
    size = size // batch_size_multiple * batch_size_multiple
    if isinstance(size, int):
        return max(size, batch_size_multiple)
    return tf.maximum(size, batch_size_multiple)


def _fit(tensor, sizes):
    """Cuts or pads (0 or "") the non-batch dimensions of `tensor` to `sizes`."""
    if not sizes:
        return tensor
    tensor = tensor[(slice(None),) + tuple(slice(None, size) for size in sizes)]
    missing = [size - tf.shape(tensor)[i + 1] for i, size in enumerate(sizes)]
    padding = "" if tensor.dtype == tf.string else 0
    return tf.pad(tensor, [[0, 0]] + [[0, m] for m in missing], constant_values=padding)


def fit_batch(features, labels, boundary=None):
    """Cuts a batch's padding to its longest sequences, or pads it to `boundary` tokens.

    Args:
        features: batched features, padded to any length at least the longest.
        labels: batched labels, likewise.
        boundary: `None` to fit the longest source and target of the batch; else the
            bucket's longest `example_length`, for one shape per bucket: sources and
            target ids (`<s>` or `</s>` included) padded to `boundary` positions, target
            tokens to `boundary - 1` (see `sequence_shape`).

    Returns:
        `(features, labels)` with exact shapes.
    """
    if boundary is None:
        source_tokens = tf.reduce_max(source_length(features))
        longest_target = tf.reduce_max(count_target_tokens(labels))
    else:
        source_tokens = tf.cast(boundary, tf.int32)
        # A target whose counted length is at most `boundary` has at most `boundary - 1` tokens.
        longest_target = source_tokens - counted_target_length(0)
    fitted = []
    for part, values in (("features", features), ("labels", labels)):
        fitted.append({
            key: _fit(value, sequence_shape(part, key, value.shape.rank - 1, source_tokens, longest_target))
            for key, value in values.items()
        })
    return tuple(fitted)


def check_batch_size(batch_size, batch_type, batch_size_multiple):
    """Raises `ValueError` for an unknown `batch_type` or a size or multiple below 1."""
    if batch_type not in BATCH_TYPES:
        raise ValueError(f"batch_type must be one of {BATCH_TYPES}, got {batch_type!r}")
    if batch_size < 1 or batch_size_multiple < 1:
        raise ValueError(
            f"batch_size and batch_size_multiple must be at least 1, got {batch_size} "
            f"and {batch_size_multiple}"
        )


def _check_batching(batch_size, batch_type, batch_size_multiple, length_bucket_width, pad_to_bucket_boundary):
    check_batch_size(batch_size, batch_type, batch_size_multiple)
    if length_bucket_width is None:
        if batch_type == "tokens":
            raise ValueError(
                "batch_type='tokens' needs length bucketing: set length_bucket_width "
                "(1 buckets by exact length)"
            )
        if pad_to_bucket_boundary:
            raise ValueError("pad_to_bucket_boundary needs length_bucket_width")
    elif length_bucket_width < 1:
        raise ValueError(f"length_bucket_width must be at least 1, got {length_bucket_width}")


def keyed_examples(length_bucket_width):
    """Transformation from chunks to single `(bucket, features, labels)` examples.

    The bucket ids are computed a chunk at a time (0 for all without bucketing); the
    examples keep their chunk's padding until `batch_keyed_examples` cuts it.
    """

    def _with_buckets(features, labels):
        if length_bucket_width is None:
            buckets = tf.zeros_like(features["length"], tf.int64)
        else:
            buckets = bucket_id(features, labels, length_bucket_width)
        return buckets, features, labels

    return lambda chunks: chunks.map(_with_buckets).unbatch()


def batch_keyed_examples(
    batch_size,
    batch_type="examples",
    batch_size_multiple=1,
    length_bucket_width=None,
    pad_to_bucket_boundary=False,
):
    """Transformation from `(bucket, features, labels)` examples to batches.

    See `batch_sequence_dataset` for the arguments.
    """
    _check_batching(batch_size, batch_type, batch_size_multiple, length_bucket_width, pad_to_bucket_boundary)
    # A window never holds more than this, so each window becomes exactly one batch.
    largest_window = max(batch_size, batch_size_multiple)

    def _batch_bucket(bucket, window):
        batches = window.padded_batch(largest_window)
        if not pad_to_bucket_boundary:
            return batches.map(lambda buckets, features, labels: fit_batch(features, labels))
        boundary = (bucket + 1) * length_bucket_width
        return batches.map(lambda buckets, features, labels: fit_batch(features, labels, boundary))

    def _bucket(bucket, features, labels):
        return bucket

    if batch_type == "examples":
        return lambda examples: examples.group_by_window(
            _bucket, _batch_bucket, window_size=batch_size
        )

    def _window_size(bucket):
        return bucket_batch_size(bucket, batch_size, length_bucket_width, batch_size_multiple)

    return lambda examples: examples.group_by_window(
        _bucket, _batch_bucket, window_size_func=_window_size
    )


def batch_sequence_dataset(
    batch_size,
    batch_type="examples",
    batch_size_multiple=1,
    length_bucket_width=None,
    pad_to_bucket_boundary=False,
    chunked=False,
):
    """Transformation that batches `(features, labels)` examples, bucketing them by length.

    Args:
        batch_size: examples per batch (`batch_type="examples"`) or the token budget of a
            batch (`batch_type="tokens"`, counted as the bucket's longest length times the
            number of examples, a target's length counting its `</s>`).
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value
            (8 helps float16 kernels).
        length_bucket_width: bucket width in tokens: a batch only holds examples whose
            `example_length` (the longer of the source and the target with its `</s>`)
            falls in the same bucket `1..w, w+1..2w, ...`.
            `None` batches in arrival order (not allowed with `"tokens"`).
        pad_to_bucket_boundary: pad sequences to the bucket's longest length instead of
            the batch's, so each bucket has one sequence shape (XLA, TPU).
        chunked: the dataset holds chunks (examples batched and padded, e.g. by a
            preprocessor called on `[B]` strings) instead of single examples.

    Returns:
        A function `tf.data.Dataset -> tf.data.Dataset` for `Dataset.apply`; padding is
        0 for numbers and `""` for strings.

    Examples:
        >>> import tensorflow as tf
        >>> def example(length):  # a source of 5 tokens, a target of 4 (length 5)
        ...     return ({"ids": tf.ones([length], tf.int64), "length": length},
        ...             {"ids": tf.ones([length], tf.int64),
        ...              "ids_out": tf.ones([length], tf.int64), "length": length})
        >>> dataset = tf.data.Dataset.from_tensor_slices([5] * 40).map(example)
        >>> dataset = dataset.apply(batch_sequence_dataset(
        ...     100, batch_type="tokens", length_bucket_width=1))
        >>> [int(features["ids"].shape[0]) for features, _ in dataset]
        [20, 20]
    """
    _check_batching(batch_size, batch_type, batch_size_multiple, length_bucket_width, pad_to_bucket_boundary)
    batch = batch_keyed_examples(
        batch_size, batch_type, batch_size_multiple, length_bucket_width, pad_to_bucket_boundary
    )
    keys = keyed_examples(length_bucket_width)
    if chunked:
        return lambda chunks: chunks.apply(keys).apply(batch)
    return lambda dataset: dataset.padded_batch(CHUNK_SIZE).apply(keys).apply(batch)


def filter_irregular_batches(multiple):
    """Transformation dropping batches whose size is not a multiple of `multiple`.

    With `multiple` replicas, each replica then gets the same number of examples.

    Examples:
        >>> import tensorflow as tf
        >>> dataset = tf.data.Dataset.range(10).batch(3).apply(filter_irregular_batches(3))
        >>> [batch.numpy().tolist() for batch in dataset]
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """
    if multiple < 1:
        raise ValueError(f"multiple must be at least 1, got {multiple}")
    if multiple == 1:
        return lambda dataset: dataset

    def _regular(*batch):
        size = tf.shape(tf.nest.flatten(batch)[0])[0]
        return tf.equal(size % multiple, 0)

    return lambda dataset: dataset.filter(_regular)
