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

Layout and determinism. Shard `s` of `K` holds the corpus lines
`[s * N // K, (s + 1) * N // K)` (N lines), so its content depends only on the corpus,
the preprocessor, `K`, `seed` and `s`: never on the number of processes, which only
decides who writes which shard (ELECTRA's writer, with a seed). With `seed` set, the
examples of shard `s` are shuffled with a generator seeded by `(seed, s)`, so each run
writes byte-identical shards. One indexing pass (`kerasnmt.data.shuffling.index_lines`)
counts the lines of every file (files of different lengths are an error naming both),
checks UTF-8 and records the byte offset of each shard's first line; a worker then seeks
straight to its lines.

Atomicity. A shard is written under a temporary name (`...tfrecord.tmp-PID`) and renamed
once complete; the index is written last, the same way, and removed first when a
directory is rewritten. A killed run therefore leaves no partial file under a final
name, and no index: `read_shards` refuses the directory until a run completes. Reading
checks the index before the first record: its format, that every shard and lengths file
exists, and that each shard has the size the index recorded (a truncated or replaced
file is named).
"""

import hashlib
import json
import multiprocessing
import os
import queue as queue_module
import re

import keras
import numpy as np
import tensorflow as tf

from kerasnmt.data.batching import CHUNK_SIZE, count_target_tokens, sequence_shape, source_length
from kerasnmt.data.parallel_examples import chunk_preprocessor
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.shuffling import index_lines, read_block
from kerasnmt.data.text_files import CorpusError

INDEX_FORMAT = "kerasnmt-shards-2"


class ShardsError(ValueError):
    """A shard directory that cannot be read (missing index or shard, wrong count)."""


def shard_file_name(name, shard, num_shards):
    """`NAME-00003-of-00016.tfrecord`."""
    return f"{name}-{shard:05d}-of-{num_shards:05d}.tfrecord"


def lengths_file_name(shard_file):
    """`NAME-00003-of-00016.lengths.npy`, beside the shard `NAME-00003-of-00016.tfrecord`."""
    return shard_file[: -len(".tfrecord")] + ".lengths.npy"


def index_file_name(name):
    """`NAME.index.json`."""
    return f"{name}.index.json"


def _without_names(value):
    if isinstance(value, dict):
        return {key: _without_names(item) for key, item in value.items() if key != "name"}
    if isinstance(value, list):
        return [_without_names(item) for item in value]
    return value


def preprocessor_fingerprint(preprocessor):
    """A SHA-256 of what decides the ids: the tokenizers' configs (a SentencePiece model
    included) and the two vocabularies, layer names left out.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
        >>> def preprocessor(vocabulary):
        ...     return TranslationPreprocessor(
        ...         WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary)
        >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
        >>> fingerprint = preprocessor_fingerprint(preprocessor(vocabulary))
        >>> fingerprint == preprocessor_fingerprint(preprocessor(list(vocabulary)))
        True
        >>> fingerprint == preprocessor_fingerprint(preprocessor(vocabulary[:3] + ["b", "a"]))
        False
    """
    config = preprocessor.get_config()
    content = {
        key: _without_names(config[key])
        for key in ("source_tokenizer", "target_tokenizer", "source_vocabulary", "target_vocabulary")
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


# --- Schema: how each tensor of (features, labels) is stored in a tf.train.Example. ---


def _schema(chunk_spec):
    """The stored tensors, from the element spec of preprocessed chunks (`[B, ...]`)."""
    schema = []
    for part, specs in zip(("features", "labels"), chunk_spec):
        for key, spec in specs.items():
            rank = spec.shape.rank - 1
            if rank not in (0, 1, 2) or (rank == 2 and not spec.dtype.is_floating):
                raise ValueError(f"cannot store {part}[{key!r}] of spec {spec} in a shard")
            schema.append({"name": f"{part}/{key}", "dtype": spec.dtype.name, "rank": rank})
    return schema


def _kind(dtype_name):
    dtype = tf.as_dtype(dtype_name)
    return "float" if dtype.is_floating else "bytes" if dtype == tf.string else "int"


def _feature(kind, values):
    if kind == "int":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def serialize_chunk(features, labels, schema):
    """`tf.train.Example` strings for a chunk of padded `(features, labels)` NumPy arrays.

    Each example is cut to its own lengths (`sequence_shape`). Scalars and vectors are
    stored as lists; a matrix (the alignment) as its shape, the flat positions of its
    non-zero entries and their values. Keys are serialized in sorted order, so the bytes
    are the same on every run.
    """
    parts = {"features": features, "labels": labels}
    source_tokens = np.asarray(features["length"]).astype(np.int64)
    target_tokens = np.asarray(labels["length"]).astype(np.int64) - 1
    records = []
    for i in range(len(source_tokens)):
        stored = {}
        for entry in schema:
            part, key = entry["name"].split("/", 1)
            shape = sequence_shape(part, key, entry["rank"], int(source_tokens[i]), int(target_tokens[i]))
            value = np.asarray(parts[part][key][i])[tuple(slice(0, size) for size in shape)]
            if entry["rank"] == 2:
                flat = value.reshape(-1)
                positions = np.flatnonzero(flat)
                stored[entry["name"] + "/shape"] = _feature("int", list(value.shape))
                stored[entry["name"] + "/positions"] = _feature("int", positions.tolist())
                stored[entry["name"] + "/values"] = _feature("float", flat[positions].tolist())
            else:
                stored[entry["name"]] = _feature(_kind(entry["dtype"]), value.reshape(-1).tolist())
        example = tf.train.Example(features=tf.train.Features(feature=stored))
        records.append(example.SerializeToString(deterministic=True))
    return records


def _parse_spec(schema):
    spec = {}
    for entry in schema:
        stored_dtype = {"int": tf.int64, "float": tf.float32, "bytes": tf.string}[_kind(entry["dtype"])]
        if entry["rank"] == 0:
            spec[entry["name"]] = tf.io.FixedLenFeature([], stored_dtype)
        elif entry["rank"] == 1:
            spec[entry["name"]] = tf.io.RaggedFeature(stored_dtype, row_splits_dtype=tf.int64)
        else:
            spec[entry["name"] + "/shape"] = tf.io.FixedLenFeature([2], tf.int64)
            spec[entry["name"] + "/positions"] = tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64)
            spec[entry["name"] + "/values"] = tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int64)
    return spec


def _dense_matrices(shapes, positions, values):
    """`[B, max rows, max columns]` from each example's shape and non-zero entries."""
    rows = positions.value_rowids()
    columns = tf.gather(shapes[:, 1], rows)
    flat_positions = positions.flat_values
    indices = tf.stack([rows, flat_positions // columns, flat_positions % columns], axis=1)
    dense_shape = tf.stack([tf.shape(shapes, out_type=tf.int64)[0], *tf.unstack(
        tf.reduce_max(tf.concat([shapes, [[0, 0]]], axis=0), axis=0))])
    return tf.scatter_nd(indices, values.flat_values, dense_shape)


def parse_chunk_fn(schema):
    """A function mapping `[B]` serialized examples to a padded `(features, labels)` chunk."""
    spec = _parse_spec(schema)

    def _parse(serialized):
        stored = tf.io.parse_example(serialized, spec)
        parts = {"features": {}, "labels": {}}
        for entry in schema:
            part, key = entry["name"].split("/", 1)
            dtype = tf.as_dtype(entry["dtype"])
            if entry["rank"] == 2:
                value = _dense_matrices(
                    stored[entry["name"] + "/shape"],
                    stored[entry["name"] + "/positions"],
                    stored[entry["name"] + "/values"],
                )
            elif entry["rank"] == 1:
                value = stored[entry["name"]].to_tensor("" if dtype == tf.string else 0)
            else:
                value = stored[entry["name"]]
            parts[part][key] = tf.cast(value, dtype) if value.dtype != dtype else value
        return parts["features"], parts["labels"]

    return _parse


def _unpad_example(features, labels):
    """One example of a chunk cut to its own lengths."""
    source_tokens, target_tokens = source_length(features), count_target_tokens(labels)
    unpadded = []
    for part, values in (("features", features), ("labels", labels)):
        unpadded.append({
            key: value[tuple(slice(0, size) for size in sequence_shape(
                part, key, value.shape.rank, source_tokens, target_tokens))]
            for key, value in values.items()
        })
    return tuple(unpadded)


# --- Writing. ---


def _line_ranges(num_lines, num_shards):
    return [(s * num_lines // num_shards, (s + 1) * num_lines // num_shards) for s in range(num_shards)]


def _write_atomically(path, records):
    temporary = f"{path}.tmp-{os.getpid()}"
    with tf.io.TFRecordWriter(temporary) as writer:
        for record in records:
            writer.write(record)
    os.replace(temporary, path)


def _save_atomically(path, array):
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "wb") as file:
        np.save(file, array)
    os.replace(temporary, path)


class ShardTask:
    """What a worker needs to write one shard; plain data, so it pickles for any process."""

    def __init__(self, shard, first_line, indexes, alignment_path, output_path, seed):
        self.shard = shard
        self.first_line = first_line
        self.indexes = indexes
        self.alignment_path = alignment_path
        self.output_path = output_path
        self.seed = seed


_worker_preprocessor = None
_worker_queue = None


def _load_preprocessor(config, queue=None):
    global _worker_preprocessor, _worker_queue
    _worker_preprocessor = keras.saving.deserialize_keras_object(config)
    _worker_queue = queue


def write_shard(task, preprocessor=None, progress=None):
    """Preprocesses the lines of one shard and writes it atomically.

    This is the per-shard function run by `write_shards` worker processes and by the
    Apache Beam pipeline (`kerasnmt.data.beam_shards`).

    Args:
        task: a `ShardTask` (which lines, where to write, the seed).
        preprocessor: the preprocessor; `None` in a worker process, which loaded it.
        progress: called with the number of examples of each chunk once it is
            preprocessed, or None.

    Returns:
        `(shard, number_of_examples)`.
    """
    preprocessor = preprocessor or _worker_preprocessor
    preprocess, schema = _compiled_preprocessor(preprocessor, task.alignment_path)
    columns = [np.array(read_block(index, task.shard), dtype=object) for index in task.indexes]
    numbers = np.arange(task.first_line + 1, task.first_line + 1 + len(columns[0]), dtype=np.int64)
    records, lengths = [], []
    for start in range(0, len(numbers), CHUNK_SIZE):
        chunk = [numbers[start : start + CHUNK_SIZE]]
        chunk += [column[start : start + CHUNK_SIZE].astype(bytes) for column in columns]
        try:
            features, labels = preprocess(*chunk)
        except tf.errors.InvalidArgumentError as error:
            bad_input = corpus_error(error)
            if bad_input is None:
                raise
            raise bad_input from None
        features, labels = tf.nest.map_structure(lambda t: t.numpy(), (features, labels))
        records.extend(serialize_chunk(features, labels, schema))
        lengths.append(np.stack([source_length(features), count_target_tokens(labels)], axis=1))
        if progress is not None:
            progress(len(chunk[0]))
    lengths = np.concatenate(lengths).astype(np.int32) if lengths else np.zeros([0, 2], np.int32)
    if task.seed is not None:
        order = np.random.default_rng([task.seed, task.shard]).permutation(len(records))
        records = [records[i] for i in order]
        lengths = lengths[order]
    _save_atomically(lengths_file_name(task.output_path), lengths)
    _write_atomically(task.output_path, records)
    return task.shard, len(records)


def _write_job(job_and_tasks):
    """A worker's job: its shards in turn, each chunk's example count sent to the parent's
    progress queue."""
    job, tasks = job_and_tasks
    return [write_shard(task, progress=lambda examples: _worker_queue.put((job, examples)))
            for task in tasks]


_compiled = {}


def _compiled_preprocessor(preprocessor, alignment_path):
    """`chunk_preprocessor` as a `tf.function` traced once per process, and the schema."""
    key = (id(preprocessor), alignment_path)
    if key not in _compiled:
        signature = [tf.TensorSpec([None], tf.int64)] + [tf.TensorSpec([None], tf.string)] * (
            3 if alignment_path else 2
        )
        function = tf.function(chunk_preprocessor(preprocessor, alignment_path), input_signature=signature)
        chunk_spec = tf.nest.map_structure(
            lambda t: tf.TensorSpec(t.shape, t.dtype), function.get_concrete_function().structured_outputs
        )
        _compiled[key] = (function, _schema(chunk_spec), preprocessor)
    return _compiled[key][:2]


def plan_shards(
    source_file, target_file, preprocessor, output_dir, name, alignment_file=None,
    num_shards=16, seed=0,
):
    """Indexes the corpus and returns one task a shard, plus the index to write.

    The first half of `write_shards`, shared with the Beam pipeline: counts and checks
    the files (an empty corpus is an error), records the byte offset of each shard's
    first line, removes the previous index, shards and temporary files of `name`, and
    describes the examples (the schema).

    Returns:
        `(tasks, index, index_path)`.
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")
    paths = [source_file, target_file] + ([alignment_file] if alignment_file else [])
    num_lines = index_lines(paths[0]).num_lines
    ranges = _line_ranges(num_lines, num_shards)
    boundaries = [start for start, _ in ranges] + [num_lines]
    indexes = []
    for path in paths:
        index = index_lines(path, boundaries=boundaries)
        if index.num_lines != num_lines:
            raise CorpusError(
                f"parallel files differ in length: {paths[0]} has {num_lines} lines but "
                f"{path} has {index.num_lines}"
            )
        indexes.append(index)
    if num_lines == 0:
        raise CorpusError(f"{source_file} is empty: no sentence pair to prepare")
    os.makedirs(output_dir, exist_ok=True)
    index_path = os.path.join(output_dir, index_file_name(name))
    if os.path.exists(index_path):
        os.remove(index_path)  # Readers must not trust shards that are being rewritten.
    # Temporary files of killed runs, and shards of earlier runs with another count.
    leftover = re.compile(re.escape(name) + r"-\d{5}-of-\d{5}\.(tfrecord|lengths\.npy)(\.tmp-\d+)?")
    for file_name in os.listdir(output_dir):
        if leftover.fullmatch(file_name):
            os.remove(os.path.join(output_dir, file_name))
    tasks = [
        ShardTask(
            shard,
            start,
            indexes,
            alignment_file,
            os.path.join(output_dir, shard_file_name(name, shard, num_shards)),
            seed,
        )
        for shard, (start, _) in enumerate(ranges)
    ]
    index = {
        "format": INDEX_FORMAT,
        "name": name,
        "num_examples": num_lines,
        "num_shards": num_shards,
        "seed": seed,
        "corpus": {"source": str(source_file), "target": str(target_file),
                   "alignment": str(alignment_file) if alignment_file else None,
                   "num_lines": num_lines},
        "shards": [
            {"file": shard_file_name(name, shard, num_shards),
             "lengths": lengths_file_name(shard_file_name(name, shard, num_shards)),
             "first_line": start + 1, "num_examples": end - start}
            for shard, (start, end) in enumerate(ranges)
        ],
        "schema": _compiled_preprocessor(preprocessor, alignment_file)[1],
        "preprocessor": preprocessor_fingerprint(preprocessor),
    }
    return tasks, index, index_path


def finish_shards(index, index_path, counts):
    """Checks every shard was written with its expected count, records each shard's size
    in bytes, then writes the index.

    The last step of `write_shards` and of the Beam pipeline; the index is written under
    a temporary name and renamed.
    """
    written = dict(counts)
    directory = os.path.dirname(index_path)
    for shard, entry in enumerate(index["shards"]):
        if written.get(shard) != entry["num_examples"]:
            raise ShardsError(
                f"shard {shard} has {written.get(shard)} examples, expected {entry['num_examples']}"
            )
        entry["bytes"] = os.path.getsize(os.path.join(directory, entry["file"]))
    temporary = f"{index_path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(index, file, indent=1)
        file.write("\n")
    os.replace(temporary, index_path)
    return index_path


def write_shards(
    source_file,
    target_file,
    preprocessor,
    output_dir,
    name="train",
    alignment_file=None,
    num_shards=16,
    num_processes=1,
    seed=0,
    progress=None,
):
    """Preprocesses a parallel corpus once into sharded TFRecord files.

    Args:
        source_file: the source text, one sentence a line (`.gz` decompressed).
        target_file: the target text, line-aligned with `source_file`.
        preprocessor: the model's `TranslationPreprocessor` (Keras-serializable, so that
            worker processes can rebuild it); it should not truncate.
        output_dir: where to write `NAME-SSSSS-of-KKKKK.tfrecord` and `NAME.index.json`.
        name: the file name prefix.
        alignment_file: optional Pharaoh alignments, line-aligned with the corpus.
        num_shards: the number of shard files `K`.
        num_processes: worker processes (each rebuilds the preprocessor from its
            config); the files written do not depend on it.
        seed: shuffles the examples inside each shard reproducibly; `None` keeps the
            corpus order.
        progress: a function of the number of examples of each writing job (a list,
            one a process) that returns what follows the writing: an object with
            `update(job, examples)`, called as each chunk is preprocessed, and
            `finish()`, called once every shard is written
            (`kerasnmt.data.progress.WriterProgress`); None shows nothing. Process `j`
            writes shards `j, j + num_processes, ...`, as ELECTRA's writer splits its
            files.

    Returns:
        The path of the index file, for `read_shards` and `training_dataset(shards=...)`.

    Raises:
        CorpusError: an empty corpus, files of different lengths (naming both files and
            counts), invalid UTF-8, or a malformed or out-of-range alignment line (naming
            the file and line).
    """
    if num_processes < 1:
        raise ValueError(f"num_processes must be at least 1, got {num_processes}")
    tasks, index, index_path = plan_shards(
        source_file, target_file, preprocessor, output_dir, name, alignment_file, num_shards, seed
    )
    num_processes = min(num_processes, len(tasks))
    jobs = [tasks[job::num_processes] for job in range(num_processes)]
    totals = [sum(index["shards"][task.shard]["num_examples"] for task in job) for job in jobs]
    reporter = None if progress is None else progress(totals)
    if num_processes == 1:
        update = None if reporter is None else (lambda examples: reporter.update(0, examples))
        counts = [write_shard(task, preprocessor, update) for task in tasks]
    else:
        counts = _write_jobs(jobs, preprocessor, reporter, sum(totals))
    if reporter is not None:
        reporter.finish()
    return finish_shards(index, index_path, counts)


def _write_jobs(jobs, preprocessor, reporter, num_examples):
    """Writes each job's shards in its own spawned process; with a `reporter`, forwards
    the workers' chunk counts to it while they run."""
    config = keras.saving.serialize_keras_object(preprocessor)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue() if reporter is not None else None
    with context.Pool(len(jobs), initializer=_load_preprocessor,
                      initargs=(config, queue)) as pool:
        if reporter is None:
            results = pool.map(_write_job_silently, jobs, chunksize=1)
        else:
            pending = pool.map_async(_write_job, list(enumerate(jobs)), chunksize=1)
            forwarded = 0
            while not pending.ready():
                forwarded += _forward(queue, reporter, timeout=0.1)
            results = pending.get()
            # A worker's last counts may still be in the queue's pipe after its result.
            while forwarded < num_examples:
                count = _forward(queue, reporter, timeout=5.0)
                if not count:
                    break
                forwarded += count
    return [count for job in results for count in job]


def _write_job_silently(tasks):
    return [write_shard(task) for task in tasks]


def _forward(queue, reporter, timeout):
    """Passes the queued `(job, examples)` counts to `reporter`, waiting up to `timeout`
    seconds for the first; returns the number of examples passed."""
    forwarded = 0
    try:
        while True:
            job, examples = queue.get(timeout=timeout) if not forwarded else queue.get_nowait()
            reporter.update(job, examples)
            forwarded += examples
    except queue_module.Empty:
        return forwarded


# --- Reading. ---


def load_shards_index(path):
    """Reads and checks `NAME.index.json`: every listed shard and lengths file must exist
    and every shard must have the size in bytes the index recorded.

    Args:
        path: the index file, or the directory holding exactly one index.

    Returns:
        The index as a dict, with `"directory"` and absolute `"paths"` of the shards.

    Raises:
        ShardsError: no index (an unfinished or killed `write_shards`), an index of
            another format (written by another version of kerasnmt), a missing shard or
            lengths file, or a shard whose size differs from the index (truncated or
            replaced).
    """
    path = str(path)
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".index.json"))
        if len(found) != 1:
            raise ShardsError(
                f"{path}: expected one NAME.index.json, found {found or 'none'} (an "
                "unfinished or killed write_shards leaves no index)"
            )
        path = os.path.join(path, found[0])
    if not os.path.exists(path):
        raise ShardsError(
            f"{path}: no shard index (an unfinished or killed write_shards leaves none)"
        )
    with open(path, encoding="utf-8") as file:
        index = json.load(file)
    if index.get("format") != INDEX_FORMAT:
        raise ShardsError(
            f"{path}: shard index of format {index.get('format')!r}, but this version of "
            f"kerasnmt reads {INDEX_FORMAT!r}: write the shards again with kerasnmt prepare"
        )
    directory = os.path.dirname(os.path.abspath(path))
    index["directory"] = directory
    index["path"] = os.path.abspath(path)
    index["paths"] = [os.path.join(directory, shard["file"]) for shard in index["shards"]]
    for shard, shard_path in zip(index["shards"], index["paths"]):
        lengths_path = os.path.join(directory, shard["lengths"])
        for needed in (shard_path, lengths_path):
            if not os.path.exists(needed):
                raise ShardsError(f"{path}: shard file {needed} is missing")
        size = os.path.getsize(shard_path)
        if size != shard["bytes"]:
            raise ShardsError(
                f"{shard_path}: {size} bytes, but the index {path} recorded {shard['bytes']} "
                "(a truncated or replaced shard): write the shards again with kerasnmt prepare"
            )
    return index


def shard_lengths(index):
    """The `[num_examples, 2]` source and target lengths (tokens) of each shard, in record
    order, from the `.lengths.npy` files beside the shards.

    Raises:
        ShardsError: a lengths file whose row count differs from its shard's example count.
    """
    lengths = []
    for shard in index["shards"]:
        path = os.path.join(index["directory"], shard["lengths"])
        array = np.load(path)
        if array.shape != (shard["num_examples"], 2):
            raise ShardsError(
                f"{path}: lengths of shape {array.shape}, but the index {index['path']} "
                f"recorded {shard['num_examples']} examples (expected ({shard['num_examples']}, 2))"
            )
        lengths.append(array)
    return lengths


def check_shards_preprocessor(index, preprocessor):
    """Raises `ShardsError` naming the index when its shards were written by another
    preprocessor (other tokenizers or vocabularies) than `preprocessor`."""
    if index["preprocessor"] != preprocessor_fingerprint(preprocessor):
        raise ShardsError(
            f"{index['path']}: these shards were written with other tokenizers or "
            "vocabularies than the model's (the preprocessor fingerprints differ): write "
            "them again with kerasnmt prepare and the model's data.source_vocabulary, "
            "data.target_vocabulary and SentencePiece models"
        )


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
        >>> from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("src", "a b\\nb\\n"), ("tgt", "b\\na a\\n")):
        ...     with open(os.path.join(directory, name), "w") as file:
        ...         _ = file.write(text)
        >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
        >>> preprocessor = TranslationPreprocessor(
        ...     WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary)
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
    return chunks.unbatch().map(_unpad_example)
