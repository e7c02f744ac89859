"""Benchmark of the training data pipeline: from text files and from TFRecord shards.

For Multi30k train (29,000 pairs) and for the same corpus repeated 10 times, prints
examples/s and tokens/s (source + target tokens, without <s>/</s>) over one epoch, the
milliseconds the pipeline alone takes a batch (no model step: compare with a training
step), the share of padded positions in the batches (source `ids` and target `ids_out`),
the time to the first batch (pipeline construction, which indexes the files, included)
and the peak resident memory of the process. Text batches are bucketed by length
(`length_bucket_width` 1, OpenNMT-tf); shard batches are planned from the stored lengths
(`kerasnmt.data.shard_batches`). Each measurement runs in a fresh process, so
the peak memory is its own. Not a test: run it by hand.

    python bench/data_pipeline.py                   # 1x and 10x, text and shards
    python bench/data_pipeline.py --scales 1 --sample-buffer-size 500000

The corpus is split on whitespace (WhitespaceTokenizer) with vocabularies built from
it. Shards are written once per scale (the writing time is printed too).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from kerasnmt.data.shards import write_shards  # noqa: E402
from kerasnmt.data.training_pipeline import training_dataset  # noqa: E402
from kerasnmt.data.vocabulary import load_vocabulary, save_vocabulary  # noqa: E402
from kerasnmt.data.vocabulary_builder import build_vocabulary  # noqa: E402
from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer  # noqa: E402


REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where scripts/download_multi30k.sh writes the Multi30k files.
DEFAULT_CORPUS = os.path.join(REPOSITORY, "data", "multi30k")


def _peak_memory_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _preprocessor(work_dir):
    return TranslationPreprocessor(
        WhitespaceTokenizer(),
        WhitespaceTokenizer(),
        load_vocabulary(os.path.join(work_dir, "vocab.en")),
        load_vocabulary(os.path.join(work_dir, "vocab.de")),
    )


def _corpus_paths(work_dir, scale):
    directory = os.path.join(work_dir, f"x{scale}")
    return directory, os.path.join(directory, "train.en"), os.path.join(directory, "train.de")


def prepare(args):
    """Writes the scaled corpora, the vocabularies and the shards (once)."""
    os.makedirs(args.work_dir, exist_ok=True)
    for language in ("en", "de"):
        vocabulary_path = os.path.join(args.work_dir, f"vocab.{language}")
        if not os.path.exists(vocabulary_path):
            corpus = os.path.join(args.corpus_dir, f"train.{language}")
            save_vocabulary(build_vocabulary([corpus]), vocabulary_path)
    for scale in args.scales:
        directory, english, german = _corpus_paths(args.work_dir, scale)
        os.makedirs(directory, exist_ok=True)
        for language, path in (("en", english), ("de", german)):
            if not os.path.exists(path):
                with open(os.path.join(args.corpus_dir, f"train.{language}"), "rb") as file:
                    text = file.read()
                with open(path, "wb") as file:
                    for _ in range(scale):
                        file.write(text)
        shards = os.path.join(directory, "shards")
        if not os.path.exists(os.path.join(shards, "train.index.json")):
            start = time.perf_counter()
            write_shards(
                english, german, _preprocessor(args.work_dir), shards,
                num_shards=16, num_processes=args.num_processes, seed=1,
            )
            print(
                f"wrote 16 shards for x{scale} with {args.num_processes} "
                f"processes in {time.perf_counter() - start:.1f} s",
                flush=True,
            )


def measure(args):
    """One epoch of one pipeline, in this process; prints one JSON line."""
    scale = args.scales[0]
    directory, english, german = _corpus_paths(args.work_dir, scale)
    options = dict(
        batch_size=args.batch_size,
        batch_type="tokens",
        length_bucket_width=1,
        maximum_features_length=100,
        maximum_labels_length=100,
        sample_buffer_size=args.sample_buffer_size,
        seed=1,
        repeat=False,
    )
    start = time.perf_counter()
    if args.measure == "text":
        dataset = training_dataset(english, german, _preprocessor(args.work_dir), **options)
    else:
        dataset = training_dataset(shards=os.path.join(directory, "shards"), **options)
    examples = tokens = batches = positions = 0
    first_batch = None
    for features, labels in dataset:
        if first_batch is None:
            first_batch = time.perf_counter() - start
            epoch_start = time.perf_counter()
        batches += 1
        examples += int(features["length"].shape[0])
        tokens += int(features["length"].numpy().sum() + labels["length"].numpy().sum())
        tokens -= int(features["length"].shape[0])  # labels["length"] counts <s>.
        positions += int(tf.size(features["ids"]) + tf.size(labels["ids_out"]))
    elapsed = time.perf_counter() - epoch_start
    # Real positions: the source tokens and the target tokens with </s> (`ids_out`).
    padding = 1 - (tokens + examples) / positions
    print(json.dumps({
        "source": args.measure,
        "scale": scale,
        "examples": examples,
        "batches": batches,
        "examples_per_second": examples / elapsed,
        "tokens_per_second": tokens / elapsed,
        "milliseconds_per_batch": 1000 * elapsed / max(batches - 1, 1),
        "padding": padding,
        "first_batch_seconds": first_batch,
        "peak_memory_mib": _peak_memory_mib(),
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-dir", default=DEFAULT_CORPUS,
                        help="the Multi30k files (default: data/multi30k, from "
                        "scripts/download_multi30k.sh)")
    parser.add_argument("--work-dir", default="/tmp/kerasnmt-bench-data")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--batch-size", type=int, default=4096, help="tokens per batch")
    parser.add_argument(
        "--sample-buffer-size", type=int, default=20000,
        help="the same buffer for every scale, below the 1x size, so that memory does "
        "not grow with the corpus (default: %(default)s)",
    )
    parser.add_argument("--num-processes", type=int, default=2, help="shard writers")
    parser.add_argument("--measure", choices=("text", "shards"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    prepare(args)
    results = []
    for scale in args.scales:
        for source in ("text", "shards"):
            command = [
                sys.executable, os.path.abspath(__file__), "--measure", source,
                "--scales", str(scale), "--work-dir", args.work_dir,
                "--batch-size", str(args.batch_size),
                "--sample-buffer-size", str(args.sample_buffer_size),
            ]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results.append(json.loads(output.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    print()
    print("| corpus | from | examples | batches | examples/s | tokens/s | ms a batch | padding "
          "| first batch (s) | peak memory (MiB) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for result in results:
        print(
            f"| {result['scale']}x | {result['source']} | {result['examples']:,} | "
            f"{result['batches']:,} | {result['examples_per_second']:,.0f} | "
            f"{result['tokens_per_second']:,.0f} | {result['milliseconds_per_batch']:.1f} | "
            f"{result['padding']:.1%} | {result['first_batch_seconds']:.2f} | "
            f"{result['peak_memory_mib']:,.0f} |"
        )


if __name__ == "__main__":
    main()
