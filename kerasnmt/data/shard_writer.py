"""Writing a sharded corpus: tokenize and look up once, in worker processes or Apache
Beam (`kerasnmt.data.beam_shards`), then train from ids (`kerasnmt.data.shards`).

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
name, and no index, which reading refuses.

Examples:
    >>> import pathlib, tempfile
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> corpus = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (corpus / "en").write_text("a b\\nb\\na\\n"), (corpus / "de").write_text("b\\na\\nb\\n")
    >>> index_path = write_shards(str(corpus / "en"), str(corpus / "de"),
    ...     TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
    ...     str(corpus / "shards"), num_shards=2)
    >>> sorted(path.name for path in (corpus / "shards").iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['train-00000-of-00002.lengths.npy', 'train-00000-of-00002.tfrecord',
     'train-00001-of-00002.lengths.npy', 'train-00001-of-00002.tfrecord', 'train.index.json']
"""

import json
import multiprocessing
import os
import queue as queue_module
import re

import keras
import numpy as np
import tensorflow as tf

from kerasnmt.data.batching import CHUNK_SIZE, count_target_tokens, source_length
from kerasnmt.data.parallel_examples import chunk_preprocessor
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.shard_examples import example_schema, serialize_chunk
from kerasnmt.data.shards_index import (
    INDEX_FORMAT,
    ShardsError,
    index_file_name,
    lengths_file_name,
    preprocessor_fingerprint,
    shard_file_name,
)
from kerasnmt.data.shuffling import index_lines, read_block
from kerasnmt.data.text_files import CorpusError


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
        _compiled[key] = (function, example_schema(chunk_spec), preprocessor)
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
