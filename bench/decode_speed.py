"""Decoding speed of the reference Translator: Multi30k test_2016_flickr.en, greedy and beam.

The reference model of `bench/reference_model.py` (3+3 layers, 256 units, 4 heads, FFN
1024, relative positions 20, joint 8k SentencePiece) translates the 1,000 sentences of
`test_2016_flickr.en` with `Translator.translate` (batches of 32 sorted by length, source
widths bucketed, one compiled decode per width; with the `-compact` searches the
sentences of each width stream through 32 decoding slots instead), greedy and beam search
(beam 4, length penalty 0.6), float32.

Weights: `--checkpoint` (a `.keras` file, or a directory of `tf.train.Checkpoint`s as
written by `kerasnmt.training.CheckpointCallback`). Without one, the model is first
trained for `--train-minutes` in a child process (so its memory does not count here) and
saved to `--workdir`; the output says so. Speed depends on what the model emits (lengths,
when beams finish), so an untrained model's figures mean little.

Prints for each search, over one cold pass (fresh compiled-function cache: tracing and
XLA compilation of every batch shape included) and one warm pass (the same translator
again): sentences/s, target tokens/s (SentencePiece pieces of the best hypotheses,
`</s>` not counted), the process CPU time (with its target tokens per CPU-second, a
figure that depends less on other processes sharing the cores: on 2 otherwise idle cores,
tokens/s would be at most twice it), the peak resident memory of the process, BLEU against
`test_2016_flickr.de`, and the load average of the machine before and after.

Not a test; run it on a quiet machine, in the background:

    nohup python bench/decode_speed.py --train-minutes 3 > /tmp/decode_speed.log 2>&1 &
    python bench/decode_speed.py --train-only --continue-training --train-minutes 30
    python bench/decode_speed.py --checkpoint /tmp/kerasnmt_decode_speed/model.keras
    python bench/decode_speed.py --checkpoint ... --no-jit-compile   # graph mode, no XLA
    python bench/decode_speed.py --checkpoint ... --max-sentences 64   # smoke run
    python bench/decode_speed.py --checkpoint ... --quantize int8   # Keras int8 Dense layers
    python bench/decode_speed.py --checkpoint ... --shortlist runs/multi30k/shortlist.txt \
        --searches beam-compact,beam-compact-shortlist --warm-passes 3
"""

import argparse
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from kerasnmt.data.lexical_shortlist import LexicalShortlist  # noqa: E402
from kerasnmt.data.training_pipeline import training_dataset  # noqa: E402
from kerasnmt.evaluation import score_translations  # noqa: E402
from kerasnmt.export import quantize_dense_layers  # noqa: E402
from kerasnmt.decoding import float32_translator  # noqa: E402
from kerasnmt.decoding import BeamSampler  # noqa: E402
from kerasnmt.training.fitting import model_data  # noqa: E402
from kerasnmt.training import NoamDecay  # noqa: E402
from reference_model import add_model_arguments, reference_translator  # noqa: E402


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.set_defaults(workdir="/tmp/kerasnmt_decode_speed")
    parser.add_argument("--input", default="test_2016_flickr.en")
    parser.add_argument("--reference", default="test_2016_flickr.de")
    parser.add_argument("--checkpoint", help="a .keras file or a checkpoint directory")
    parser.add_argument("--train-minutes", type=float, default=3.0,
                        help="without --checkpoint: train this long first")
    parser.add_argument("--continue-training", action="store_true",
                        help="train the model saved in --workdir further (with --train-minutes)")
    parser.add_argument("--train-only", action="store_true",
                        help="only train (--train-minutes) and save the model in --workdir")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--length-penalty", type=float, default=0.6)
    parser.add_argument("--searches", default="greedy,beam,greedy-compact,beam-compact",
                        help="comma-separated: greedy, beam, beam-early-exit (beam with "
                             "BeamSampler(early_exit=True)), each of them with -compact "
                             "(BeamSampler(compact_batch=True)), e.g. "
                             "beam-early-exit-compact, and any of those with -shortlist "
                             "(decode over --shortlist)")
    parser.add_argument("--warm-passes", type=int, default=1,
                        help="warm passes per search; the fastest is reported (the others "
                             "are printed too)")
    parser.add_argument("--shortlist",
                        help="the lexical shortlist of the -shortlist searches (vmap file of "
                             "`kerasnmt build-shortlist`, see kerasnmt.data.LexicalShortlist)")
    parser.add_argument("--shortlist-width", type=int, default=2048,
                        help="LexicalShortlist width: target ids a batch is decoded over")
    parser.add_argument("--jit-compile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--quantize", choices=["int8", "int8-all-layers"],
                        help="before decoding, int8: the Dense layers' weights, as `kerasnmt "
                             "export --quantization int8` (kerasnmt.export."
                             "quantize_dense_layers); int8-all-layers: Keras' default, "
                             "`Model.quantize('int8')` (Dense and Embedding layers)")
    parser.add_argument("--max-sentences", type=int, help="translate only the first N (smoke run)")
    parser.add_argument("--seed", type=int, default=1234)
    return parser.parse_args(argv)


def train_briefly(arguments):
    """Trains the reference model for `--train-minutes` and saves it as a `.keras` file.

    A fast-warmup Noam schedule (scale 1, 500 warmup steps instead of 8,000: a peak
    learning rate of 0.0028) and batches of 2048 tokens, XLA-compiled, so that a few
    minutes give a model whose outputs have realistic lengths; its quality is beside the
    point.
    """
    keras.utils.set_random_seed(arguments.seed)
    path = os.path.join(arguments.workdir, "model.keras")
    if arguments.continue_training and os.path.exists(path):
        translator = keras.models.load_model(path)  # optimizer state and step included
        print(f"continuing from {path}, step {int(translator.optimizer.iterations)}")
    else:
        translator = reference_translator(arguments)
        translator.compile(
            optimizer=keras.optimizers.Adam(NoamDecay(1.0, arguments.num_units, 500),
                                            beta_1=0.9, beta_2=0.998),
            jit_compile=True,
        )
    batches = training_dataset(
        os.path.join(arguments.data_dir, arguments.source),
        os.path.join(arguments.data_dir, arguments.target),
        translator.preprocessor,
        batch_size=2048,
        batch_type="tokens",
        length_bucket_width=8,
        pad_to_bucket_boundary=True,
        seed=arguments.seed + int(translator.optimizer.iterations),
    ).map(model_data)
    started = time.time()
    for step, (x, y) in enumerate(batches):
        loss = translator.train_on_batch(x, y, return_dict=True)["loss"]
        if step % 100 == 0:
            print(f"training step {step}: loss {float(loss):.3f}", flush=True)
        if time.time() - started > 60 * arguments.train_minutes:
            break
    os.makedirs(arguments.workdir, exist_ok=True)
    translator.save(path)
    print(f"trained {step + 1} steps in {time.time() - started:.0f} s, saved {path}")
    return path


def load_translator(arguments):
    """The model of `--checkpoint` (trained first without it), in float32 as kerasnmt's
    commands decode (`kerasnmt.decoding.float32_translator`)."""
    if arguments.checkpoint is None:
        started = time.time()
        subprocess.run([sys.executable, __file__, "--train-only", *sys.argv[1:]], check=True)
        arguments.checkpoint = os.path.join(arguments.workdir, "model.keras")
        print(f"NOTE: no --checkpoint: the model was trained for {arguments.train_minutes} "
              f"minutes first ({time.time() - started:.0f} s with startup), "
              f"{arguments.checkpoint}")
    if arguments.checkpoint.endswith(".keras"):
        return float32_translator(keras.models.load_model(arguments.checkpoint))
    translator = reference_translator(arguments)
    path = tf.train.latest_checkpoint(arguments.checkpoint)
    if path is None:
        raise SystemExit(f"no checkpoint in {arguments.checkpoint}")
    tf.train.Checkpoint(model=translator).restore(path).expect_partial()
    return translator


def forget_compiled_functions(translator):
    translator.__dict__.pop("_translate_functions", None)


def timed_translate(translator, sentences, sampler, shortlist, arguments, **options):
    """Translates; returns the outputs, the seconds and the process CPU seconds it took.

    `options`: more `Translator.translate` arguments (`maximum_source_length`,
    `length_ratio`, `length_offset`; `bench/ctranslate2_speed.py` passes an export's).
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    outputs = translator.translate(sentences, sampler=sampler, batch_size=arguments.batch_size,
                                   jit_compile=arguments.jit_compile, shortlist=shortlist,
                                   **options)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return outputs, seconds, cpu_seconds


def main():
    arguments = parse_arguments()
    if arguments.train_only:
        train_briefly(arguments)
        return
    load_before = os.getloadavg()
    translator = load_translator(arguments)
    if arguments.quantize == "int8":
        quantize_dense_layers(translator)
    elif arguments.quantize == "int8-all-layers":
        translator.quantize("int8")
    with open(os.path.join(arguments.data_dir, arguments.input), encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f][: arguments.max_sentences]
    with open(os.path.join(arguments.data_dir, arguments.reference), encoding="utf-8") as f:
        references = [line.rstrip("\n") for line in f][: arguments.max_sentences]
    tokenizer = translator.preprocessor.target_tokenizer
    print(f"model: {translator.count_params():,} parameters, {len(sentences)} sentences, "
          f"batch {arguments.batch_size}, jit_compile={arguments.jit_compile}, "
          f"quantize={arguments.quantize}, {os.cpu_count()} CPUs, TensorFlow {tf.__version__}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}")

    beam = dict(beam_size=arguments.beam_size, length_penalty=arguments.length_penalty)
    samplers = {
        "greedy": BeamSampler(beam_size=1),
        "greedy-compact": BeamSampler(beam_size=1, compact_batch=True),
        "beam": BeamSampler(**beam),
        "beam-compact": BeamSampler(**beam, compact_batch=True),
        "beam-early-exit": BeamSampler(**beam, early_exit=True),
        "beam-early-exit-compact": BeamSampler(**beam, early_exit=True, compact_batch=True),
    }
    for search in arguments.searches.split(","):
        shortlist = None
        if search.endswith("-shortlist"):
            if not arguments.shortlist:
                raise SystemExit(f"{search} needs --shortlist")
            search = search.removesuffix("-shortlist")
            shortlist = LexicalShortlist.load(
                arguments.shortlist, translator.preprocessor.source_vocabulary,
                translator.preprocessor.target_vocabulary, width=arguments.shortlist_width,
            )
        sampler = samplers[search]
        forget_compiled_functions(translator)
        _, cold, cold_cpu = timed_translate(translator, sentences, sampler, shortlist,
                                            arguments)
        passes = [timed_translate(translator, sentences, sampler, shortlist, arguments)
                  for _ in range(arguments.warm_passes)]
        outputs, warm, warm_cpu = min(passes, key=lambda timed: timed[1])
        tokens = int(tokenizer(tf.constant(outputs)).row_lengths().numpy().sum())
        bleu = score_translations(outputs, references).bleu
        print(f"{search} (beam_size={sampler.beam_size}, "
              f"length_penalty={sampler.length_penalty}, early_exit={sampler.early_exit}, "
              f"compact_batch={sampler.compact_batch}, "
              f"shortlist={arguments.shortlist if shortlist else None}): "
              f"{tokens} target tokens, BLEU {bleu:.1f}")
        if len(passes) > 1:
            print(f"  warm passes: {', '.join(f'{timed[1]:.2f} s' for timed in passes)} "
                  "(the fastest below)")
        for name, seconds, cpu_seconds in (("cold", cold, cold_cpu), ("warm", warm, warm_cpu)):
            print(f"  {name} pass: {seconds:.2f} s, {len(sentences) / seconds:.1f} sentences/s, "
                  f"{tokens / seconds:,.0f} target tokens/s; process CPU time "
                  f"{cpu_seconds:.1f} s ({tokens / cpu_seconds:,.0f} target tokens per "
                  f"CPU-second)")
        print(f"  peak memory (max RSS) so far: "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
