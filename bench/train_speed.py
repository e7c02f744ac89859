"""Training speed of the reference Translator on Multi30k, with model FLOP utilisation.

The reference configuration of issue 4: 3+3 layers, 256 units, 4 heads, FFN 1024,
`maximum_relative_position` 20, a joint 8k SentencePiece vocabulary trained on the
training files, token batches of 4096 (`batch_type=tokens`), Adam with the Noam schedule,
label smoothing 0.1, dropout 0.1. The real kerasnmt input pipeline
(`kerasnmt.data.training_dataset`: SentencePiece in tf.data, bucketing, prefetch) feeds
`Translator.train_on_batch`, so the timings include whatever the pipeline takes from the
cores, as OpenNMT-tf's figure does.

Prints, over the steps after `--warmup-steps` (tracing, XLA compilation):
source+target tokens/s, target tokens/s, the median and mean step time, the peak resident
memory of the process, the model FLOPs per second and their share of the matmul peak
measured in the same run (`tf.matmul` of 4096x4096 matrices in the compute dtype).

Model FLOPs per step (matmuls only, training = 3x forward), from the real lengths of each
sentence: per encoder layer and source token `8 D^2 + 4 D F` (projections, FFN) plus
`4 S D` (scores and weighted sum); per decoder layer and target token `8 D^2 + 4 D F`
(self-attention projections, FFN) + `4 D^2` (cross-attention query and output) + `4 T D`
+ `4 S D` (scores), plus `4 D^2` per source token (cross-attention keys and values); and
`2 D V` per target token for the output layer. Relative position terms are not counted.

With `--shards`, the batches come from shards written once (`kerasnmt prepare`'s
`write_shards`, into the work directory) and planned from their stored lengths, with no
SentencePiece in the loop. With `--peer-log LOG`, the log of an OpenNMT-tf run of the same
model made in the same session (docs/benchmarks.md, "How to reproduce"), it also
prints OpenNMT-tf's source+target tokens/s (time-weighted, the windows up to
`--peer-skip-steps` left out) and the ratio kerasnmt / OpenNMT-tf.

Not a test; run it by hand on a quiet machine:

    python bench/train_speed.py --peer-log speed.log   # float32, no XLA
    python bench/train_speed.py --shards --mixed-precision bfloat16 --peer-log ...
    python bench/train_speed.py --jit-compile --length-bucket-width 5 --pad-to-bucket-boundary
    python bench/train_speed.py --mixed-precision bfloat16
    python bench/train_speed.py --warmup-steps 2 --steps 3   # smoke run
"""

import argparse
import os
import resource
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kerasnmt.data.shards import write_shards  # noqa: E402
from kerasnmt.data.training_pipeline import training_dataset  # noqa: E402
from opennmt_log import opennmt_tokens_per_second  # noqa: E402
from kerasnmt.training.fitting import model_data  # noqa: E402
from reference_model import add_model_arguments, reference_translator  # noqa: E402


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=4096, help="tokens per batch")
    parser.add_argument("--length-bucket-width", type=int, default=1)
    parser.add_argument("--pad-to-bucket-boundary", action="store_true",
                        help="one shape per bucket (fewer XLA compilations)")
    parser.add_argument("--jit-compile", action="store_true", help="XLA-compile the train step")
    parser.add_argument("--mixed-precision", choices=["none", "bfloat16", "float16"],
                        default="none")
    parser.add_argument("--warmup-steps", type=int, default=30,
                        help="steps not timed (tracing, XLA compilation of each shape)")
    parser.add_argument("--steps", type=int, default=100, help="timed steps")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--shards", action="store_true",
                        help="train from shards planned from their lengths (written once)")
    parser.add_argument("--peer-log", metavar="LOG",
                        help="OpenNMT-tf training log of the same session, for the ratio")
    parser.add_argument("--peer-skip-steps", type=int, default=20,
                        help="OpenNMT-tf steps left out as warm-up (default: %(default)s)")
    return parser.parse_args()


def matmul_peak_flops(dtype, size=4096, repeats=5):
    """FLOP/s of a square matmul in `dtype`, the best of `repeats` timed runs."""
    a = tf.random.normal([size, size], dtype=tf.float32)
    a = tf.cast(a, dtype)
    b = tf.cast(tf.random.normal([size, size]), dtype)
    multiply = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y)[:1, :1], tf.float32)))
    multiply(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        multiply(a, b).numpy()
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def step_flops(x, y, arguments, vocabulary_size):
    """Model FLOPs of one training step (see the module docstring)."""
    d, f = arguments.num_units, arguments.ffn_inner_dim
    layers = arguments.num_layers
    source = x["source_length"].numpy().astype(np.float64)
    target = y["length"].numpy().astype(np.float64)
    encoder = layers * (source * (8 * d * d + 4 * d * f) + 4 * source**2 * d).sum()
    decoder = layers * (
        target * (12 * d * d + 4 * d * f) + 4 * target**2 * d + 4 * target * source * d
        + source * 4 * d * d
    ).sum()
    output = (target * 2 * d * vocabulary_size).sum()
    return 3 * (encoder + decoder + output)


def main():
    arguments = parse_arguments()
    keras.utils.set_random_seed(arguments.seed)
    compute_dtype = {"none": "float32", "bfloat16": "bfloat16", "float16": "float16"}[
        arguments.mixed_precision
    ]
    peak = matmul_peak_flops(compute_dtype)
    print(f"matmul peak ({compute_dtype}, 4096x4096): {peak / 1e9:.0f} GFLOP/s")

    dtype = None if arguments.mixed_precision == "none" else f"mixed_{arguments.mixed_precision}"
    translator = reference_translator(arguments, dtype)
    preprocessor = translator.preprocessor
    translator.compile(jit_compile=arguments.jit_compile)
    print(
        f"model: {translator.count_params():,} parameters, vocabulary "
        f"{translator.backbone.target_vocabulary_size}, jit_compile={translator.jit_compile}, "
        f"dtype policy {translator.dtype_policy.name}"
    )

    source = os.path.join(arguments.data_dir, arguments.source)
    target = os.path.join(arguments.data_dir, arguments.target)
    if arguments.shards:
        directory = os.path.join(arguments.workdir, "shards")
        if not os.path.exists(os.path.join(directory, "train.index.json")):
            write_shards(source, target, preprocessor, directory, num_shards=16, num_processes=2)
        corpus = dict(shards=os.path.join(directory, "train.index.json"))
    else:
        corpus = dict(source_file=source, target_file=target, preprocessor=preprocessor)
    batches = training_dataset(
        **corpus,
        batch_size=arguments.batch_size,
        batch_type="tokens",
        length_bucket_width=arguments.length_bucket_width,
        pad_to_bucket_boundary=arguments.pad_to_bucket_boundary,
        seed=arguments.seed,
    ).map(model_data)

    times, source_tokens, target_tokens, flops = [], 0, 0, 0.0
    started = warmup_started = time.perf_counter()
    for step, (x, y) in enumerate(batches.take(arguments.warmup_steps + arguments.steps)):
        translator.train_on_batch(x, y)
        now = time.perf_counter()
        if step >= arguments.warmup_steps:
            times.append(now - started)
            source_tokens += int(tf.reduce_sum(x["source_length"]))
            target_tokens += int(tf.reduce_sum(y["length"]))  # tokens + </s>
            flops += step_flops(x, y, arguments, translator.backbone.target_vocabulary_size)
        elif step == arguments.warmup_steps - 1:
            print(f"warmup: {arguments.warmup_steps} steps in {now - warmup_started:.1f} s")
        started = now

    total = sum(times)
    peak_memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(f"timed steps: {len(times)} ({total:.1f} s)")
    print(f"source+target tokens/s: {(source_tokens + target_tokens) / total:,.0f}")
    print(f"target tokens/s: {target_tokens / total:,.0f}")
    print(f"step time: median {statistics.median(times) * 1000:.0f} ms, "
          f"mean {total / len(times) * 1000:.0f} ms")
    print(f"peak memory (max RSS): {peak_memory:.2f} GiB")
    print(f"model FLOP/s: {flops / total / 1e9:.0f} GFLOP/s, MFU {flops / total / peak:.1%} "
          f"of the {compute_dtype} matmul peak")
    if arguments.peer_log:
        peer, steps, seconds = opennmt_tokens_per_second(arguments.peer_log, arguments.peer_skip_steps)
        ours = (source_tokens + target_tokens) / total
        print(f"OpenNMT-tf: {peer:,.0f} source+target tokens/s over {steps} steps ({seconds:.0f} s) "
              f"of {arguments.peer_log}")
        print(f"ratio kerasnmt / OpenNMT-tf: {ours / peer:.2f}x")


if __name__ == "__main__":
    main()
