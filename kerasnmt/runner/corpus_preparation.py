"""`kerasnmt prepare`: a parallel corpus tokenized and looked up once, into sharded
TFRecord files that training reads instead of the text."""

import sys
import time

from kerasnmt.data.progress import WriterProgress
from kerasnmt.data.shards import write_shards
from kerasnmt.runner.run_config import run_configuration
from kerasnmt.runner.run_model import MODEL_KEYS, build_preprocessor, preprocessor_of


def prepare(source, target, output_dir, name="train", alignments=None, config=None,
            source_vocabulary=None, target_vocabulary=None, source_sentencepiece=None,
            target_sentencepiece=None, num_shards=16, num_processes=1, seed=0,
            no_shuffle=False, progress_every=None):
    """Tokenize and look up a parallel corpus once, into sharded TFRecord files.

    Runs the model's preprocessing (SentencePiece or whitespace tokenization, then the
    vocabulary lookup) over SOURCE and TARGET (and --alignments) and writes
    OUTPUT_DIR/NAME-00000-of-00016.tfrecord ... of tf.train.Example, plus
    OUTPUT_DIR/NAME.index.json, which training reads instead of the text
    (kerasnmt.data.training_dataset(shards=...)). Shard k holds the k-th slice of the
    corpus lines; --seed shuffles the examples inside each shard. The files are the
    same whatever --num-processes, and each run with the same seed writes the same
    bytes. Shards are written under temporary names and renamed when complete, and the
    index last: an interrupted run leaves no index, so no half-written corpus is read.

    On a terminal (stderr), a bar per writing process shows its examples, examples/s
    and ETA while it runs (process j writes shards j, j + N, ...); elsewhere nothing,
    or a line per process every --progress-every examples. The summary at the end gives
    the examples, the time and the rate.

    Args:
        source: source text, one sentence a line
        target: target text, line-aligned with SOURCE
        output_dir: where to write the shards
        name: file name prefix
        alignments: Pharaoh alignments of the pairs
        config: take the vocabularies and SentencePiece models from this run
            configuration's data section (the preprocessing of the run that will train
            on data.train_shards); a path, or a configuration `load_config` returned
        source_vocabulary: OpenNMT-format vocabulary
        target_vocabulary: OpenNMT-format vocabulary
        source_sentencepiece: SentencePiece model for the source (default: split on
            whitespace)
        target_sentencepiece: SentencePiece model for the target (default: split on
            whitespace)
        num_shards: shard files
        num_processes: worker processes
        seed: seed of the shuffle inside each shard
        no_shuffle: keep the corpus order inside each shard
        progress_every: when stderr is not a terminal, print each writing process's
            progress line every N examples (default: nothing until the summary; on a
            terminal a bar per process is always shown)

    Returns:
        The path of the index file.

    Raises:
        ValueError: preprocessing given twice or not at all, or bad input.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> for name, text in (("vocab", "<blank>\\n<s>\\n</s>\\na\\nb\\n"), ("train.src", "a b\\n"),
        ...                    ("train.tgt", "b a\\n")):
        ...     with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        ...         _ = file.write(text)
        >>> paths = [os.path.join(directory, name) for name in ("train.src", "train.tgt")]
        >>> vocabulary = os.path.join(directory, "vocab")
        >>> index = prepare(*paths, os.path.join(directory, "shards"), num_shards=1,
        ...                 source_vocabulary=vocabulary, target_vocabulary=vocabulary)
        ... # doctest: +ELLIPSIS
        wrote 1 shards and /.../train.index.json: 1 examples in ...
        >>> os.path.basename(index)
        'train.index.json'
    """
    given = {"source_vocabulary": source_vocabulary, "target_vocabulary": target_vocabulary,
             "source_sentencepiece": source_sentencepiece,
             "target_sentencepiece": target_sentencepiece}
    given = [name for name, value in given.items() if value is not None]
    if config is not None:
        if given:
            raise ValueError(f"--config takes the preprocessing from {config}: give no "
                             + ", ".join("--" + name.replace("_", "-") for name in given))
        preprocessor = build_preprocessor(run_configuration(config, required=MODEL_KEYS))
    else:
        if source_vocabulary is None or target_vocabulary is None:
            raise ValueError("give --source-vocabulary and --target-vocabulary, or --config")
        preprocessor = preprocessor_of(source_vocabulary, target_vocabulary,
                                       source_sentencepiece, target_sentencepiece)
    started = time.monotonic()
    job_totals = []

    def progress(totals):
        job_totals.extend(totals)
        return WriterProgress(totals, sys.stderr, every=progress_every)

    index = write_shards(
        source, target, preprocessor, output_dir, name=name, alignment_file=alignments,
        num_shards=num_shards, num_processes=num_processes,
        seed=None if no_shuffle else seed, progress=progress,
    )
    seconds = time.monotonic() - started
    examples = sum(job_totals)
    print(f"wrote {num_shards} shards and {index}: {examples} examples in "
          f"{seconds:.1f} s ({examples / max(seconds, 1e-9):.0f} examples/s, "
          f"{len(job_totals)} process{'es' * (len(job_totals) != 1)})")
    return index
