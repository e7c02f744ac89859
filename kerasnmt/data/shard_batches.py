"""Training batches from prepared shards, planned from their stored lengths.

A dataset/sampler/collate split (examples by index, batches of indices planned from
metadata, batches padded into tensors) on the files `write_shards` (`kerasnmt prepare`)
writes: the *dataset* is the shards, read a window of records at a
time; the *sampler* is `kerasnmt.data.batch_plan`, which sees only the `.lengths.npy`
files; the *collate* step parses a batch's records into padded `(features, labels)`.

Epoch `e` of a stream, with the generator `numpy.random.default_rng([seed, e])`:

1. the stream's shard files in a random order (in order without shuffling), read as one
   sequence of examples;
2. cut into windows of `sample_buffer_size` examples (the whole sequence for `-1`, `0` or
   `None`);
3. each window planned by `plan_batches` (length filter, sort, cut, shuffled batch order);
4. batches whose size is not a multiple of `num_replicas` dropped.

Every epoch's plan is a function of the lengths, the options, the seed and `e` alone, so
`start_batch` resumes the stream exactly: the plans of the skipped batches are computed,
their records never read. No tokenization or vocabulary lookup happens here.
"""

import atexit
import gc

import numpy as np
import tensorflow as tf

from kerasnmt.data.batch_plan import kept_examples, padded_length, plan_batches
from kerasnmt.data.batching import (
    count_target_tokens,
    example_length,
    fit_batch,
    length_limits_description,
    source_length,
)
from kerasnmt.data.shard_examples import parse_chunk_fn
from kerasnmt.data.shards_index import ShardsError, load_shards_index, shard_lengths


# A tf.data iterator over `Dataset.from_generator` that is still alive when the interpreter
# finalizes deadlocks it: its prefetch thread waits for the GIL to call the generator while
# finalization destroys the iterator. Keras' `fit` leaves its iterator in a reference
# cycle; collecting the cycles before finalization, while threads still run, frees it.
atexit.register(gc.collect)


class _Stream:
    """The shard files one worker reads from one or more indexes, and their lengths."""

    def __init__(self, indexes, num_shards, shard_index):
        self.paths, self.lengths = [], []
        for index in indexes:
            self.paths += index["paths"]
            self.lengths += shard_lengths(index)
        self.what = " and ".join(index["path"] for index in indexes)
        if num_shards > 1:
            if len(self.paths) < num_shards:
                raise ShardsError(
                    f"{self.what}: {len(self.paths)} shard files for {num_shards} workers; "
                    f"write at least {num_shards} shards (kerasnmt prepare --num-shards)"
                )
            self.paths = self.paths[shard_index::num_shards]
            self.lengths = self.lengths[shard_index::num_shards]

    def read(self, files, start, stop):
        """The serialized records at positions `[start, stop)` of `files` read in turn."""
        parts = []
        offset = 0
        for file in files:
            count = len(self.lengths[file])
            low, high = max(start - offset, 0), min(stop - offset, count)
            if low < high:
                records = tf.data.TFRecordDataset(self.paths[file]).skip(low).take(high - low)
                try:
                    part = next(iter(records.batch(high - low))).numpy()
                except StopIteration:
                    part = np.zeros([0], dtype=object)
                except tf.errors.OpError as error:
                    raise ShardsError(f"{self.paths[file]}: unreadable ({error.message})") from None
                if len(part) != high - low:
                    raise ShardsError(
                        f"{self.paths[file]}: {low + len(part)} records, but its lengths "
                        f"file lists {count}"
                    )
                parts.append(part)
            offset += count
        return np.concatenate(parts)


def _epoch_plan(stream, epoch, seed, shuffle, window_size, plan_options, limits, num_replicas):
    """`[(files, start, stop, batches)]`: each window of epoch `epoch` and its batches
    (positions in the window's file sequence)."""
    rng = np.random.default_rng([seed, epoch]) if shuffle else None
    files = rng.permutation(len(stream.paths)) if shuffle else np.arange(len(stream.paths))
    lengths = np.concatenate([stream.lengths[file] for file in files])
    window_size = window_size or len(lengths)
    windows = []
    for start in range(0, len(lengths), window_size):
        stop = min(start + window_size, len(lengths))
        kept = kept_examples(lengths[start:stop], *limits)
        batches = [
            start + kept[batch]
            for batch in plan_batches(lengths[start:stop][kept], rng=rng, **plan_options)
            if len(batch) % num_replicas == 0
        ]
        windows.append((files, start, stop, batches))
    return windows


def _batch_records(stream, seed, shuffle, window_size, plan_options, limits, num_replicas,
                   start_batch, repeat):
    """A generator of each planned batch's serialized records, from batch `start_batch`."""
    skip = start_batch
    epoch = 0
    while True:
        for files, start, stop, batches in _epoch_plan(
            stream, epoch, seed, shuffle, window_size, plan_options, limits, num_replicas
        ):
            if len(batches) <= skip:
                skip -= len(batches)
                continue
            records = stream.read(files, start, stop)
            for batch in batches[skip:]:
                yield records[batch - start]
            skip = 0
        epoch += 1
        if not repeat:
            return


def _collate(schema, length_bucket_width):
    parse = parse_chunk_fn(schema)

    def _batch(records):
        features, labels = parse(records)
        if length_bucket_width is None:
            return fit_batch(features, labels)
        longest = tf.reduce_max(example_length(source_length(features), count_target_tokens(labels)))
        return fit_batch(features, labels, padded_length(longest, length_bucket_width))

    return _batch


def _choices(probabilities, seed):
    """An endless generator of corpus indices drawn with `probabilities`."""
    rng = np.random.default_rng([seed, len(probabilities)])
    while True:
        yield from rng.choice(len(probabilities), size=1024, p=probabilities)


def shard_batches(
    shards,
    *,
    batch_size,
    batch_type="tokens",
    batch_size_multiple=1,
    maximum_features_length=None,
    maximum_labels_length=None,
    sample_buffer_size=-1,
    seed=None,
    num_replicas=1,
    pad_to_bucket_boundary=False,
    length_bucket_width=1,
    train_files_weights=None,
    num_shards=1,
    shard_index=0,
    start_batch=0,
    repeat=True,
    num_parallel_calls=tf.data.AUTOTUNE,
    preprocessor_check=None,
):
    """Training batches read from shards, planned from their stored lengths.

    Args:
        shards: an index written by `write_shards` (or its directory), or a list of them:
            read as one corpus without `train_files_weights`, as corpora sampled batch by
            batch with probability proportional to `weight * examples` with them.
        batch_size: tokens or examples (`batch_type`) per batch, per replica.
        batch_type: `"tokens"` or `"examples"`.
        batch_size_multiple: full batches hold a multiple of this many examples (times
            `num_replicas`).
        maximum_features_length: drop examples with a longer source (tokens).
        maximum_labels_length: drop examples with a longer target, counted with its end
            mark `</s>` as OpenNMT-tf counts it (`counted_target_length`).
        sample_buffer_size: examples sorted and cut together; `-1` the whole corpus; `0`
            or `None` the whole corpus without shuffling (files, ties and batches in
            order).
        seed: seeds each epoch's plan (`None`: 0).
        num_replicas: batches hold `batch_size * num_replicas`; those of another size
            than a multiple of `num_replicas` are dropped.
        pad_to_bucket_boundary: pad each batch to its longest length rounded up to a
            multiple of `length_bucket_width` (few static shapes, for XLA and TPU).
        length_bucket_width: the rounding of `pad_to_bucket_boundary`.
        train_files_weights: with several indexes, their sampling weights.
        num_shards: workers reading this data: worker `i` reads the shard files `i,
            i + num_shards, ...` (there must be at least `num_shards` files).
        shard_index: this worker.
        start_batch: the first batch to yield: a run resumed at optimizer step `s` with
            `a` accumulated batches a step starts at `s * a`.
        repeat: one epoch after another forever (`False`: epoch 0 only).
        num_parallel_calls: parallelism of the parsing.
        preprocessor_check: a function called with each loaded index before anything is
            read (`kerasnmt.data.shards.check_shards_preprocessor` bound to the model's
            preprocessor).

    Returns:
        A `tf.data.Dataset` of batched `(features, labels)`.

    Raises:
        ShardsError: before the first batch, for a missing, truncated or foreign shard
            (see `load_shards_index`), or when no example passes the length limits.

    Examples:
        >>> import os, tempfile
        >>> from kerasnmt.data.shards import write_shards
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("src", "a\\nb a\\na b a\\nb\\n"), ("tgt", "b\\na a\\nb b a\\na\\n")):
        ...     with open(os.path.join(directory, name), "w") as file:
        ...         _ = file.write(text)
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> index = write_shards(os.path.join(directory, "src"), os.path.join(directory, "tgt"),
        ...     preprocessor, os.path.join(directory, "shards"), num_shards=2, seed=None)
        >>> batches = shard_batches(index, batch_size=4, sample_buffer_size=0, repeat=False)
        >>> [features["ids"].numpy().tolist() for features, _ in batches]
        [[[3], [4]], [[4, 3]], [[3, 4, 3]]]
    """
    num_replicas = int(num_replicas)
    indexes = [load_shards_index(index) if not isinstance(index, dict) else index
               for index in (shards if isinstance(shards, (list, tuple)) else [shards])]
    for index in indexes:
        if index["schema"] != indexes[0]["schema"]:
            raise ShardsError(
                f"{index['path']} stores other tensors than {indexes[0]['path']} (written "
                "with and without alignments?): the batches of a run need one schema"
            )
        if preprocessor_check is not None:
            preprocessor_check(index)
    if train_files_weights is None:
        streams = [_Stream(indexes, num_shards, shard_index)]
    else:
        if len(train_files_weights) != len(indexes):
            raise ValueError(f"got {len(indexes)} shard indexes but {len(train_files_weights)} weights")
        streams = [_Stream([index], num_shards, shard_index) for index in indexes]
    seed = 0 if seed is None else seed
    shuffle = sample_buffer_size not in (0, None)
    window_size = None if sample_buffer_size in (-1, 0, None) else sample_buffer_size
    plan_options = dict(
        batch_size=batch_size * num_replicas,
        batch_type=batch_type,
        batch_size_multiple=batch_size_multiple * num_replicas,
        length_bucket_width=length_bucket_width if pad_to_bucket_boundary else None,
    )
    limits = (maximum_features_length, maximum_labels_length)
    for stream in streams:
        lengths = np.concatenate(stream.lengths)
        if not len(kept_examples(lengths, *limits)):
            raise ShardsError(
                f"no training example in {stream.what}: "
                + length_limits_description(maximum_features_length, maximum_labels_length)
            )
    starts = [start_batch]
    if len(streams) > 1:
        if not repeat:
            raise ValueError("several weighted corpora are sampled forever: repeat must be True")
        sizes = [sum(len(lengths) for lengths in stream.lengths) for stream in streams]
        weights = np.asarray(train_files_weights, dtype=np.float64) * sizes
        probabilities = weights / weights.sum()
        choices = _choices(probabilities, seed)
        replayed = np.array([next(choices) for _ in range(start_batch)], dtype=np.int64)
        starts = [int(np.sum(replayed == i)) for i in range(len(streams))]
    record_signature = tf.TensorSpec([None], tf.string)
    datasets = [
        tf.data.Dataset.from_generator(
            lambda stream=stream, start=start: _batch_records(
                stream, seed, shuffle, window_size, plan_options, limits, num_replicas,
                start, repeat,
            ),
            output_signature=record_signature,
        )
        for stream, start in zip(streams, starts)
    ]
    if len(datasets) == 1:
        records = datasets[0]
    else:
        chosen = tf.data.Dataset.from_generator(
            lambda: _choices(probabilities, seed), output_signature=tf.TensorSpec([], tf.int64)
        ).skip(start_batch)
        records = tf.data.Dataset.choose_from_datasets(datasets, chosen)
    collate = _collate(indexes[0]["schema"], length_bucket_width if pad_to_bucket_boundary else None)
    return records.map(collate, num_parallel_calls=num_parallel_calls)
