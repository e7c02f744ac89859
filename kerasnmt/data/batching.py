"""Length filtering, length bucketing and batching of preprocessed translation examples.

Examples are `(features, labels)` pairs as the `TranslationPreprocessor` makes them:
`features = {"ids", "length"(, "tokens")}` and
`labels = {"ids", "ids_out", "length"(, "tokens", "alignment")}`, where the target
`"length"` counts `<s>` (it is the number of tokens + 1). Lengths here are always in
tokens, before `<s>`/`</s>`, as in OpenNMT-tf.

The semantics and option names follow OpenNMT-tf (`opennmt/data/dataset.py`):
`filter_examples_by_length`, `batch_sequence_dataset` (bucket id
`ceil(length / length_bucket_width) - 1` over the larger of the source and target
lengths; with `batch_type="tokens"` a bucket's batch holds
`max((batch_size // ((bucket + 1) * width)) // multiple * multiple, multiple)` examples)
and `filter_irregular_batches`.
"""

import tensorflow as tf

BATCH_TYPES = ("examples", "tokens")


def source_length(features):
    """The source length in tokens."""
    return tf.cast(features["length"], tf.int32)


def target_length(labels):
    """The target length in tokens: the labels' `"length"` counts `<s>`, so subtract 1."""
    return tf.cast(labels["length"], tf.int32) - 1


def filter_examples_by_length(maximum_features_length=None, maximum_labels_length=None):
    """Transformation keeping examples with `0 < length <= maximum` on both sides.

    Args:
        maximum_features_length: the longest source kept, in tokens; `None` for no limit.
        maximum_labels_length: the longest target kept, in tokens (`<s>`, `</s>` not
            counted); `None` for no limit.

    Returns:
        A function `tf.data.Dataset -> tf.data.Dataset` for `Dataset.apply`. Empty
        sources and targets are always dropped, as in OpenNMT-tf.

    Example:
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
    """
    for name, value in (
        ("maximum_features_length", maximum_features_length),
        ("maximum_labels_length", maximum_labels_length),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be None or at least 1, got {value}")

    def _keep(features, labels):
        keep = []
        for length, maximum in (
            (source_length(features), maximum_features_length),
            (target_length(labels), maximum_labels_length),
        ):
            keep.append(tf.greater(length, 0))
            if maximum is not None:
                keep.append(tf.less_equal(length, maximum))
        return tf.reduce_all(tf.stack(keep))

    return lambda dataset: dataset.filter(_keep)


def bucket_id(features, labels, length_bucket_width):
    """The length bucket of an example: `ceil(max(source, target length) / width) - 1`.

    With width 5, lengths 1–5 go to bucket 0, 6–10 to bucket 1, and so on.
    """
    length = tf.maximum(source_length(features), target_length(labels))
    return tf.cast((length + length_bucket_width - 1) // length_bucket_width - 1, tf.int64)


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

    Example:
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


def _padded_shapes(element_spec, boundary):
    """Padded shapes that pad every sequence to the bucket boundary (`boundary` tokens).

    Source sequences get `boundary` positions, target `"ids"`/`"ids_out"` one more (for
    `<s>`/`</s>`), target `"tokens"` `boundary`, and `"alignment"` `[boundary, boundary]`.
    """
    features_spec, labels_spec = element_spec

    def shape(spec, size):
        if spec.shape.rank == 0:
            return tf.constant([], tf.int64)
        return tf.fill([spec.shape.rank], size)

    features_shapes = {key: shape(spec, boundary) for key, spec in features_spec.items()}
    labels_shapes = {}
    for key, spec in labels_spec.items():
        size = boundary + 1 if key in ("ids", "ids_out") else boundary
        labels_shapes[key] = shape(spec, size)
    return features_shapes, labels_shapes


def batch_sequence_dataset(
    batch_size,
    batch_type="examples",
    batch_size_multiple=1,
    length_bucket_width=None,
    pad_to_bucket_boundary=False,
):
    """Transformation that batches `(features, labels)` examples, bucketing them by length.

    Args:
        batch_size: examples per batch (`batch_type="examples"`) or the token budget of a
            batch (`batch_type="tokens"`, counted as the bucket's longest length times the
            number of examples).
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value
            (8 helps float16 kernels).
        length_bucket_width: bucket width in tokens: a batch only holds examples whose
            `max(source, target)` length falls in the same bucket `1..w, w+1..2w, ...`.
            `None` batches in arrival order (not allowed with `"tokens"`).
        pad_to_bucket_boundary: pad sequences to the bucket's longest length instead of
            the batch's, so each bucket has one sequence shape (XLA, TPU).

    Returns:
        A function `tf.data.Dataset -> tf.data.Dataset` for `Dataset.apply`; padding is
        0 for numbers and `""` for strings.

    Example:
    >>> import tensorflow as tf
    >>> def example(length):
    ...     return ({"ids": tf.ones([length], tf.int64), "length": length},
    ...             {"ids": tf.ones([length + 1], tf.int64),
    ...              "ids_out": tf.ones([length + 1], tf.int64), "length": length + 1})
    >>> dataset = tf.data.Dataset.from_tensor_slices([5] * 40).map(example)
    >>> dataset = dataset.apply(batch_sequence_dataset(
    ...     100, batch_type="tokens", length_bucket_width=1))
    >>> [int(features["ids"].shape[0]) for features, _ in dataset]
    [20, 20]
    """
    if batch_type not in BATCH_TYPES:
        raise ValueError(f"batch_type must be one of {BATCH_TYPES}, got {batch_type!r}")
    if batch_size < 1 or batch_size_multiple < 1:
        raise ValueError(
            f"batch_size and batch_size_multiple must be at least 1, got {batch_size} "
            f"and {batch_size_multiple}"
        )
    if length_bucket_width is None:
        if batch_type == "tokens":
            raise ValueError(
                "batch_type='tokens' needs length bucketing: set length_bucket_width "
                "(1 buckets by exact length)"
            )
        if pad_to_bucket_boundary:
            raise ValueError("pad_to_bucket_boundary needs length_bucket_width")
        return lambda dataset: dataset.padded_batch(batch_size)
    if length_bucket_width < 1:
        raise ValueError(f"length_bucket_width must be at least 1, got {length_bucket_width}")

    def _key(features, labels):
        return bucket_id(features, labels, length_bucket_width)

    def _window_size(bucket):
        return bucket_batch_size(bucket, batch_size, length_bucket_width, batch_size_multiple)

    # A window never holds more than this, so each window becomes exactly one batch.
    largest_window = max(batch_size, batch_size_multiple)

    def _batch_bucket(bucket, window):
        if not pad_to_bucket_boundary:
            return window.padded_batch(largest_window)
        boundary = (bucket + 1) * length_bucket_width
        return window.padded_batch(
            largest_window, padded_shapes=_padded_shapes(window.element_spec, boundary)
        )

    if batch_type == "examples":
        return lambda dataset: dataset.group_by_window(
            _key, _batch_bucket, window_size=batch_size
        )
    return lambda dataset: dataset.group_by_window(
        _key, _batch_bucket, window_size_func=_window_size
    )


def filter_irregular_batches(multiple):
    """Transformation dropping batches whose size is not a multiple of `multiple`.

    With `multiple` replicas, each replica then gets the same number of examples.

    Example:
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
