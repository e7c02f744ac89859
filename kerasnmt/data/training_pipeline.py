"""The training data pipeline, with OpenNMT-tf's semantics and option names.

From parallel text files (sharded TFRecord corpora are batched by
`kerasnmt.data.shard_batches` instead, from their stored lengths):

1. read the files line by line, zipped; files of different lengths are an error;
2. shard across workers (`num_shards`, `shard_index`), then shuffle by
   `sample_buffer_size` (see `kerasnmt.data.shuffling`);
3. map the `(source, target[, alignment])` lines through the model's
   `TranslationPreprocessor` into `(features, labels)` (a chunk of lines at a time, see
   `kerasnmt.data.batching`);
4. keep `0 < length <= maximum_features_length` / `maximum_labels_length` (tokens; a
   target's length counts its end mark `</s>`, as in OpenNMT-tf: see
   `kerasnmt.data.batching.counted_target_length`);
5. repeat each corpus on its own (several are sampled by `train_files_weights`), before
   bucketing, so that every batch is full (OpenNMT-tf repeats after batching, which ends
   each pass with the partial batches of every bucket in length order);
6. bucket by length and batch (`kerasnmt.data.batching`);
7. drop batches whose size is not a multiple of `num_replicas`; prefetch (without
   tf.data's autotuning thread, see `kerasnmt.data.prefetching`).

A pipeline that yields no batch raises an error naming the files and the limits, instead
of ending at once or hanging in `repeat()`.
"""

import dataclasses

import tensorflow as tf

from kerasnmt.data.batching import (
    CHUNK_SIZE,
    batch_keyed_examples,
    filter_chunks_by_length,
    filter_irregular_batches,
    keyed_examples,
    length_limits_description,
)
from kerasnmt.data.batching_options import BatchingOptions
from kerasnmt.data.empty_check import fail_if_empty
from kerasnmt.data.parallel_examples import chunk_preprocessor
from kerasnmt.data.prefetching import prefetch_without_autotuning
from kerasnmt.data.shard_batches import shard_batches
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


def _filter_chunks(chunks, options):
    return chunks.apply(
        filter_chunks_by_length(options.maximum_features_length, options.maximum_labels_length)
    )


def _batch_chunks(chunks, options, what):
    """Filter, bucket, batch, drop irregular batches, and fail if nothing is left."""
    examples = _filter_chunks(chunks, options).apply(keyed_examples(options.length_bucket_width))
    return _batch_keyed(examples, options, what)


def _batch_keyed(examples, options, what):
    """Batch keyed examples as `options` (a `BatchingOptions`) say, drop irregular batches,
    and fail if nothing is left."""
    num_replicas = options.num_replicas
    batches = examples.apply(
        batch_keyed_examples(
            options.batch_size * num_replicas,
            batch_type=options.batch_type,
            batch_size_multiple=options.batch_size_multiple * num_replicas,
            length_bucket_width=options.length_bucket_width,
            pad_to_bucket_boundary=options.pad_to_bucket_boundary,
        )
    )
    batches = batches.apply(filter_irregular_batches(num_replicas))
    return fail_if_empty(
        batches, f"no training batch from {what}: {options.limits_description()}"
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
    training=True,
):
    """Preprocesses, filters and batches raw `(source, target[, alignment])` strings.

    This is the core of `training_dataset`, without reading files, shuffling, repeating
    or prefetching, for a `tf.data.Dataset` of raw string pairs that already exists.

    Args:
        dataset: a `tf.data.Dataset` of `(source, target)` or `(source, target,
            alignment)` string scalars (alignment: Pharaoh `"s-t s-t ..."`).
        preprocessor: a `TranslationPreprocessor` (or any callable
            `preprocessor(source, target[, alignment], training=...) -> (features,
            labels)` with its conventions) that does not truncate.
        batch_size: examples (`batch_type="examples"`) or tokens (`"tokens"`) per batch,
            per replica.
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value.
        length_bucket_width: batches hold examples whose length (the longer of the
            source and the target with its `</s>`) is in the same bucket of this width;
            `None` for no bucketing.
        maximum_features_length: drop examples whose source is longer (tokens).
        maximum_labels_length: drop examples whose target is longer, counted with its
            end mark `</s>` (`counted_target_length`: at most `maximum_labels_length - 1`
            tokens are kept), as in OpenNMT-tf.
        pad_to_bucket_boundary: pad to the bucket's longest length (static shapes).
        num_replicas: batches hold `batch_size * num_replicas` (examples or tokens) and
            their size is a multiple of `num_replicas`; other batches are dropped.
        num_parallel_calls: parallelism of the preprocessing map.
        training: passed to `preprocessor` (a `SentencePieceTokenizer` with
            `sampling_alpha` then samples a segmentation of each pair at each pass; a
            `TranslationPreprocessor` never samples aligned triples); False for
            validation batches.

    Returns:
        A finite `tf.data.Dataset` of batched `(features, labels)`. Iterating it raises
        `tf.errors.InvalidArgumentError` if no batch is left after filtering.

    Examples:
        >>> import tensorflow as tf
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> pairs = tf.data.Dataset.from_tensor_slices(
        ...     (["a b", "a", "b a", "b", "a"], ["a", "b", "a", "a", ""]))
        >>> batches = make_training_batches(pairs, preprocessor, batch_size=2)
        >>> [features["ids"].numpy().tolist() for features, labels in batches]
        [[[3, 4], [3, 0]], [[4, 3], [4, 0]], [[3]]]
    """
    options = BatchingOptions(
        batch_size, batch_type, batch_size_multiple, length_bucket_width,
        maximum_features_length, maximum_labels_length, pad_to_bucket_boundary, num_replicas,
    )
    _check_preprocessor_does_not_truncate(preprocessor)
    arity = len(dataset.element_spec) if isinstance(dataset.element_spec, tuple) else 1
    if arity not in (2, 3):
        raise ValueError(
            "make_training_batches expects (source, target) or (source, target, alignment) "
            f"elements, got {dataset.element_spec}"
        )
    def preprocess(*strings):
        return preprocessor(*strings, training=training)

    chunks = dataset.batch(CHUNK_SIZE).map(preprocess, num_parallel_calls=num_parallel_calls)
    return _batch_chunks(chunks, options, "the dataset")


def _as_list(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _text_corpus_chunks(
    source_file, target_file, alignment_file, preprocessor, sample_buffer_size, seed,
    num_shards, shard_index, num_parallel_calls,
):
    paths = [source_file, target_file] + ([alignment_file] if alignment_file else [])
    lines, num_lines = shuffled_parallel_lines(
        paths, sample_buffer_size, seed=seed, num_shards=num_shards, shard_index=shard_index
    )
    preprocess = chunk_preprocessor(preprocessor, alignment_file, training=True)
    chunks = lines.batch(CHUNK_SIZE).map(preprocess, num_parallel_calls=num_parallel_calls)
    return chunks, num_lines, f"{source_file} and {target_file}"


def sampling_probabilities(weights, sizes):
    """OpenNMT-tf's corpus sampling probabilities: proportional to `weight * size`.

    A weight scales a corpus's natural share, so that equal weights sample every example
    equally often whatever the corpus sizes; `None` weights are all equal.

    Examples:
        >>> sampling_probabilities([1, 1], [300, 100])
        [0.75, 0.25]
        >>> sampling_probabilities([1, 3], [300, 100])
        [0.5, 0.5]
    """
    if weights is None:
        weights = [1.0] * len(sizes)
    if len(weights) != len(sizes):
        raise ValueError(f"got {len(sizes)} training corpora but {len(weights)} weights")
    if any(weight < 0 for weight in weights):
        raise ValueError(f"train_files_weights must not be negative, got {weights}")
    shares = [weight * size for weight, size in zip(weights, sizes)]
    total = sum(shares)
    if total <= 0:
        raise ValueError(f"no corpus can be sampled: weights {weights} for sizes {sizes}")
    return [share / total for share in shares]


def training_dataset(
    source_file=None,
    target_file=None,
    preprocessor=None,
    alignment_file=None,
    *,
    shards=None,
    batch_size,
    batch_type="examples",
    batch_size_multiple=1,
    length_bucket_width=1,
    maximum_features_length=None,
    maximum_labels_length=None,
    sample_buffer_size=500000,
    seed=None,
    num_replicas=1,
    repeat=True,
    prefetch_buffer_size=AUTOTUNE,
    pad_to_bucket_boundary=False,
    train_files_weights=None,
    num_shards=1,
    shard_index=0,
    num_parallel_calls=AUTOTUNE,
    start_batch=0,
    preprocessor_check=None,
):
    """The training `tf.data` pipeline of OpenNMT-tf, from text files or shards.

    Args:
        source_file: the source text file (`.gz` read compressed), or a list of files
            for several corpora sampled by `train_files_weights`.
        target_file: the target file(s), line-aligned with `source_file`.
        preprocessor: the model's `TranslationPreprocessor` (without maximum lengths),
            called with `training=True` (so a `SentencePieceTokenizer` with
            `sampling_alpha` samples a segmentation of each sentence at each pass) unless
            there are alignments; not needed with `shards`, which hold preprocessed
            examples.
        alignment_file: optional Pharaoh alignment file(s) (`labels["alignment"]`).
        shards: instead of text files, a shard index written by `write_shards` (or
            `kerasnmt prepare`), or a list of them for several corpora: the batches are
            then planned from the stored lengths (`kerasnmt.data.shard_batches`: a
            window of `sample_buffer_size` examples sorted by length and cut, the batch
            order shuffled; `length_bucket_width` only rounds `pad_to_bucket_boundary`).
        batch_size: examples or tokens (`batch_type`) per batch, per replica.
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value.
        length_bucket_width: bucket width for length bucketing (`None`: no bucketing,
            only with `"examples"`).
        maximum_features_length: drop examples with a longer source (tokens).
        maximum_labels_length: drop examples with a longer target, counted with its end
            mark `</s>` (at most `maximum_labels_length - 1` tokens are kept), as in
            OpenNMT-tf.
        sample_buffer_size: `-1` shuffles the whole corpus, `0`/`None` not at all, `n`
            reads blocks of `n` lines in random order then shuffles with a buffer of `n`
            (OpenNMT-tf's `random_shard`, at one read per epoch). With shards, the
            window of examples sorted and cut together (`-1`: all of them; `0`: all, in
            order, unshuffled).
        seed: makes the order reproducible.
        num_replicas: batches hold `batch_size * num_replicas` and their size is a
            multiple of `num_replicas` (irregular batches are dropped), for
            `tf.distribute` strategies.
        repeat: repeat forever (`False`: one pass, e.g. for epoch-based `fit`).
        prefetch_buffer_size: batches prepared ahead (`tf.data.AUTOTUNE` by default).
        pad_to_bucket_boundary: pad sequences to their bucket's longest length, so each
            bucket has one sequence shape (XLA, TPU).
        train_files_weights: with several corpora, their sampling weights; a corpus is
            sampled with probability proportional to `weight * size` (OpenNMT-tf: equal
            weights sample every example equally often). Each corpus is repeated on its
            own, so `repeat` must be True.
        num_shards: the number of workers reading this data (multi-worker training).
        shard_index: this worker's index: text lines `i` with `i % num_shards ==
            shard_index` (OpenNMT-tf), or whole shard files when there are enough.
        num_parallel_calls: parallelism of preprocessing and parsing.
        start_batch: with shards, the first batch of the planned stream (a resumed run
            skips those it trained on); text pipelines start over.
        preprocessor_check: with shards, called with each index before reading
            (`kerasnmt.data.shards.check_shards_preprocessor`).

    Returns:
        A `tf.data.Dataset` of batched `(features, labels)`.

    Raises:
        CorpusError: parallel files with different line counts (naming both files and
            counts) or invalid UTF-8. While iterating, `tf.errors.InvalidArgumentError`
            when no batch is left after filtering, or on a malformed or out-of-range
            alignment line (naming the alignment file and the line).

    Examples:
        >>> import os, tempfile
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("src", "a\\nb a\\na b a\\n"), ("tgt", "b\\na a\\nb b a\\n")):
        ...     with open(os.path.join(directory, name), "w") as file:
        ...         _ = file.write(text)
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> dataset = training_dataset(
        ...     os.path.join(directory, "src"), os.path.join(directory, "tgt"), preprocessor,
        ...     batch_size=6, batch_type="tokens", sample_buffer_size=0, repeat=False)
        >>> sorted(labels["ids_out"].numpy().tolist() for _, labels in dataset)  # any order
        [[[3, 3, 2]], [[4, 2]], [[4, 4, 3, 2]]]
    """
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise ValueError(f"need 0 <= shard_index < num_shards, got {shard_index} and {num_shards}")
    if start_batch and shards is None:
        raise ValueError("start_batch needs shards: a text pipeline cannot skip batches")
    options = BatchingOptions(
        batch_size=batch_size, batch_type=batch_type, batch_size_multiple=batch_size_multiple,
        length_bucket_width=length_bucket_width, pad_to_bucket_boundary=pad_to_bucket_boundary,
        maximum_features_length=maximum_features_length,
        maximum_labels_length=maximum_labels_length, num_replicas=num_replicas,
    )
    if shards is not None:
        if source_file is not None or target_file is not None or alignment_file is not None:
            raise ValueError("give either shards or text files, not both")
        batches = shard_batches(
            _as_list(shards), **dataclasses.asdict(options),
            sample_buffer_size=sample_buffer_size, seed=seed,
            train_files_weights=train_files_weights, num_shards=num_shards,
            shard_index=shard_index, start_batch=start_batch, repeat=repeat,
            num_parallel_calls=num_parallel_calls, preprocessor_check=preprocessor_check,
        )
        return prefetch_without_autotuning(batches, prefetch_buffer_size)
    if source_file is None or target_file is None or preprocessor is None:
        raise ValueError("training_dataset needs source_file, target_file and preprocessor (or shards)")
    _check_preprocessor_does_not_truncate(preprocessor)
    sources, targets = _as_list(source_file), _as_list(target_file)
    alignments = _as_list(alignment_file) or [None] * len(sources)
    if not len(sources) == len(targets) == len(alignments):
        raise ValueError(
            f"got {len(sources)} source files, {len(targets)} target files and "
            f"{len(alignments)} alignment files"
        )
    corpora = [
        _text_corpus_chunks(
            source, target, alignment, preprocessor, sample_buffer_size, seed,
            num_shards, shard_index, num_parallel_calls,
        )
        for source, target, alignment in zip(sources, targets, alignments)
    ]
    if not repeat:
        if len(corpora) > 1:
            raise ValueError("several weighted corpora are sampled forever: repeat must be True")
        chunks, _, what = corpora[0]
        batches = _batch_chunks(chunks, options, what)
        return prefetch_without_autotuning(batches, prefetch_buffer_size)
    # Each corpus is repeated before bucketing, so a bucket's batch fills across passes and
    # every batch is full. Bucketing one pass at a time (OpenNMT-tf) ends each pass with
    # the left-over examples of every bucket, flushed in length order: with 8,192-token
    # batches on Multi30k's 29,000 pairs, half of all updates, some of one or two examples.
    limits = length_limits_description(maximum_features_length, maximum_labels_length)
    streams = []
    for chunks, _, what in corpora:
        chunks = fail_if_empty(
            _filter_chunks(chunks, options), f"no training batch from {what}: {limits}"
        )
        streams.append(chunks.repeat().apply(keyed_examples(length_bucket_width)))
    if len(streams) == 1:
        examples, what = streams[0], corpora[0][2]
    else:
        probabilities = sampling_probabilities(
            train_files_weights, [size for _, size, _ in corpora]
        )
        examples = tf.data.Dataset.sample_from_datasets(streams, weights=probabilities, seed=seed)
        what = "the training corpora"
    batches = _batch_keyed(examples, options, what)
    return prefetch_without_autotuning(batches, prefetch_buffer_size)
