"""Sharded TFRecord corpora: tokenize and look up once, then train from ids.

`write_shards` runs the model's `TranslationPreprocessor` over a parallel corpus once and
writes `NAME-00000-of-00016.tfrecord` ... files of serialized `tf.train.Example`, plus
`NAME.index.json`, the index that lists the shards, their example counts and sizes in
bytes, the corpus line count, the schema of the examples and a fingerprint of the
preprocessor (its tokenizers and vocabularies). Beside each shard,
`NAME-00000-of-00016.lengths.npy` holds the source and target length of every example
(tokens, in record order), so that batches can be planned without reading the records
(`kerasnmt.data.shard_batches`). `read_shards` reads the records back as exactly the
`(features, labels)` examples the preprocessor gives for the text.

The files are written by `kerasnmt.data.shard_writer` (layout, determinism and atomicity
are described there), their index is checked by `kerasnmt.data.shards_index`, and each
example is stored as `kerasnmt.data.shard_examples` says. This module reads the records
back, and is where the public names of the three are imported from.
"""

import tensorflow as tf

from kerasnmt.data.batching import CHUNK_SIZE
from kerasnmt.data.shard_examples import parse_chunk_fn, serialize_chunk, unpad_example
from kerasnmt.data.shards_index import (
    ShardsError,
    check_shards_preprocessor,
    load_shards_index,
    preprocessor_fingerprint,
    shard_lengths,
)
from kerasnmt.data.shard_writer import finish_shards, plan_shards, write_shard, write_shards

__all__ = [
    "ShardsError",
    "check_shards_preprocessor",
    "finish_shards",
    "load_shards_index",
    "parse_chunk_fn",
    "plan_shards",
    "preprocessor_fingerprint",
    "read_shards",
    "serialize_chunk",
    "shard_lengths",
    "shard_records",
    "write_shard",
    "write_shards",
]


def shard_records(index, shuffle_files=False, seed=None, cycle_length=None, num_shards=1, shard_index=0):
    """The serialized examples of a sharded corpus, before parsing.

    Args:
        index: the index file written by `write_shards` (or its directory, or the dict
            `load_shards_index` returns).
        shuffle_files: read the shard files in a random order (a new one each epoch),
            interleaved `cycle_length` at a time, one example from each in turn;
            otherwise one file after the other in order (the corpus order when the
            shards were written with `seed=None`).
        seed: seeds the file order.
        cycle_length: how many shard files are read at once when shuffling (default:
            all of them, at most 16).
        num_shards: split the data across workers: by whole files when there are at least
            `num_shards` files (worker `i` reads files `i, i + num_shards, ...`), else by
            examples (worker `i` keeps examples `i, i + num_shards, ...`).
        shard_index: this worker.

    Returns:
        `(records, num_examples, index)`: a `tf.data.Dataset` of serialized
        `tf.train.Example`, how many this worker reads, and the index dict.
    """
    if not isinstance(index, dict):
        index = load_shards_index(index)
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise ValueError(f"need 0 <= shard_index < num_shards, got {shard_index} and {num_shards}")
    paths = index["paths"]
    counts = [shard["num_examples"] for shard in index["shards"]]
    by_files = num_shards > 1 and len(paths) >= num_shards
    if by_files:
        paths, counts = paths[shard_index::num_shards], counts[shard_index::num_shards]
    num_examples = sum(counts)
    files = tf.data.Dataset.from_tensor_slices(paths)
    if shuffle_files:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)
        cycle = cycle_length or min(len(paths), 16)
        records = files.interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle,
            block_length=1,
            num_parallel_calls=min(cycle, 4),
            deterministic=True,
        )
    else:
        records = files.flat_map(tf.data.TFRecordDataset)
    if num_shards > 1 and not by_files:
        records = records.shard(num_shards, shard_index)
        num_examples = len(range(shard_index, num_examples, num_shards))
    return records, num_examples, index


def read_shards(index, num_parallel_calls=tf.data.AUTOTUNE, **kwargs):
    """Reads a sharded corpus back as the `(features, labels)` the preprocessor gave.

    Args:
        index: the index file written by `write_shards` (or its directory).
        num_parallel_calls: parallelism of the parsing map.
        **kwargs: `shuffle_files`, `seed`, `cycle_length`, `num_shards`, `shard_index`
            of `shard_records`.

    Returns:
        A `tf.data.Dataset` of `(features, labels)`; without `shuffle_files`, in shard
        order.

    Examples:
        >>> import os, tempfile
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("src", "a b\\nb\\n"), ("tgt", "b\\na a\\n")):
        ...     with open(os.path.join(directory, name), "w") as file:
        ...         _ = file.write(text)
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> index = write_shards(os.path.join(directory, "src"), os.path.join(directory, "tgt"),
        ...     preprocessor, os.path.join(directory, "shards"), num_shards=2, seed=None)
        >>> [(f["ids"].tolist(), l["ids_out"].tolist())
        ...  for f, l in read_shards(index).as_numpy_iterator()]
        [([3, 4], [4, 2]), ([4], [3, 3, 2])]
    """
    records, _, index = shard_records(index, **kwargs)
    chunks = records.batch(CHUNK_SIZE).map(
        parse_chunk_fn(index["schema"]), num_parallel_calls=num_parallel_calls
    )
    return chunks.unbatch().map(unpad_example)
