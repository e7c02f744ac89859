"""BLEU of the Multi30k recipe after a fixed training time, with training and decoding speed.

    python bench/multi30k_bleu.py                       # 25 minutes of the reference recipe
    python bench/multi30k_bleu.py --recipe tiny         # 25 minutes of the tiny recipe
    python bench/multi30k_bleu.py --recipe tiny --warmup-steps 1000 --mixed-precision auto
    python bench/multi30k_bleu.py --train-minutes 1 --test-sentences 50   # smoke run

`--recipe reference` (the default) trains `examples/multi30k/run.yml`: the reference 3+3
layer relative-position Transformer (256 units, 4 heads, FFN 1024,
`maximum_relative_position` 20) on a joint 8k SentencePiece unigram vocabulary, token
batches of 4096, beam 4 and length penalty 0.6. `--recipe tiny` trains
`examples/multi30k_tiny/run.yml`: the published tiny Transformer (4+4 post-norm layers, 128
units, FFN 256, dropout 0.3, sinusoidal positions) on a joint 8k SentencePiece BPE
vocabulary of the whole training corpus, 8,192-token batches, beam 5 and fairseq's length
normalization (`--lenpen 1`).
Its 2,000 warm-up updates outlast a 25-minute run: `--warmup-steps` shortens them, and
`--mixed-precision auto` trains in bfloat16 where the CPU has the instructions
(`train.mixed_precision`), for the budget's own variant of the recipe.
The vocabulary is trained once into `--workdir` (default `runs/bench/multi30k_RECIPE`,
apart from the recipes' own `runs/multi30k*` runs), then reused. The run starts from
scratch in `--workdir/model`
and trains for `--train-minutes` of wall-clock time (`kerasnmt.runner.train`,
`time_limit`; building the model and the pipeline is not counted), without validation
(none of the budget goes to it); the model is the last checkpoint, not an average
(`--average-last-checkpoints N` averages the last N: in a short run they are 150 steps
apart while the loss still falls fast, and the average is worse than the last one).
Then `test_2016_flickr.en` is translated with the recipe's beam and length penalty
(`--beam-size`, `--length-penalty` override them; `Translator.translate` of the model
in float32 whatever it trained in, as the export decodes; batches of 32 sentences) and
scored against `test_2016_flickr.de` with sacreBLEU on detokenized text,
and on Moses-tokenized lowercased text as papers report it. The model is also exported to
`saved_models/multi30k/N` (for `bench/serve_latency.py`) and saved as
`--workdir/model.keras` (for `bench/decode_speed.py --checkpoint`).

Printed:
- sacreBLEU BLEU, BLEU as published ("BLEU tokenized lc": Moses-tokenized for `de`,
  lowercased) and chrF2, with their signatures;
- training: the optimizer steps of the run and its training time, both as the run itself
  counted them (`TrainingResult.step`, `TrainingResult.train_seconds`: the time in `fit`,
  evaluations included, model construction and checkpoint averaging excluded), and
  source + target tokens/s (real tokens, padding excluded) of the batches trained on. The
  tokens of each step are the mean over one full pass of the same pipeline (a run covers
  many passes);
- decoding tokens/s: target tokens produced (SentencePiece pieces, `</s>` excluded)
  divided by the translation time of the test set, measured on a second pass (the
  first compiles the decoding for each batch shape);
- the machine (cores) and the number of steps.

The reference figures of the issue: OpenNMT-tf 2.32 reaches sacreBLEU 12.1 (chrF 40.9)
after 25 minutes (1,500 steps of 4,096-token batches) on 2 cores.
"""

import argparse
import os
import platform
import shutil
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import yaml  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPOSITORY)

from kerasnmt.config import check_config  # noqa: E402
from kerasnmt.data import train_sentencepiece  # noqa: E402
from kerasnmt.evaluation import read_lines, score_translations  # noqa: E402
from kerasnmt.export import export_translator, next_version_path  # noqa: E402
from kerasnmt.decoding import float32_translator  # noqa: E402
from kerasnmt.decoding import BeamSampler  # noqa: E402
from kerasnmt.runner.run_dataset import run_training_dataset  # noqa: E402
from kerasnmt.runner.run_model import (  # noqa: E402
    build_preprocessor,
    build_sampler,
    decoding_options,
)
from kerasnmt.training.run_optimizer import accumulation_steps  # noqa: E402
from kerasnmt.runner.training_run import TRAINING_KEYS, train  # noqa: E402

# Each recipe's configuration and the SentencePiece model it is trained with.
RECIPES = {
    "reference": (os.path.join(REPOSITORY, "examples", "multi30k", "run.yml"),
                  dict(vocabulary_size=8000, model_type="unigram", file_byte_budget=1e6)),
    "tiny": (os.path.join(REPOSITORY, "examples", "multi30k_tiny", "run.yml"),
             dict(vocabulary_size=8000, model_type="bpe", file_byte_budget=None)),
}
DOWNLOADED_DATA = os.path.join(REPOSITORY, "data", "multi30k")


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="reference")
    parser.add_argument("--config", help="a configuration to train instead of the recipe's "
                        "(with the recipe's vocabulary)")
    parser.add_argument("--data-dir",
                        default=DOWNLOADED_DATA,
                        help="the Multi30k files (default: data/multi30k, from "
                        "scripts/download_multi30k.sh)")
    parser.add_argument("--workdir", help="default: runs/bench/multi30k_RECIPE (the model "
                        "directory in it is replaced)")
    parser.add_argument("--saved-models",
                        default=os.path.join(REPOSITORY, "saved_models", "multi30k"))
    parser.add_argument("--train-minutes", type=float, default=25.0)
    parser.add_argument("--beam-size", type=int, help="default: the recipe's beam_width")
    parser.add_argument("--length-penalty", type=float,
                        help="default: the recipe's length_penalty")
    parser.add_argument("--warmup-steps", type=int,
                        help="default: the recipe's params.decay_params.warmup_steps")
    parser.add_argument("--mixed-precision",
                        help="train.mixed_precision, checked with the configuration (default: "
                        "the recipe's)")
    parser.add_argument("--early-exit", action="store_true",
                        help="BeamSampler(early_exit=True) for the test set and the export")
    parser.add_argument("--average-last-checkpoints", type=int, default=0,
                        help="average the last N checkpoints (default: none, the last one)")
    parser.add_argument("--test-sentences", type=int,
                        help="translate only the first N test sentences (smoke runs)")
    args = parser.parse_args()
    args.config = args.config or RECIPES[args.recipe][0]
    args.workdir = args.workdir or os.path.join(REPOSITORY, "runs", "bench",
                                                f"multi30k_{args.recipe}")
    return args


def load_recipe(args, prefix):
    with open(args.config, encoding="utf-8") as stream:
        values = yaml.safe_load(stream)
    values["model_dir"] = os.path.join(args.workdir, "model")
    for side in ("source", "target"):
        values["data"][f"{side}_vocabulary"] = f"{prefix}.vocab"
        values["data"][f"{side}_sentencepiece"] = f"{prefix}.model"
    values["data"]["train_features_file"] = os.path.join(args.data_dir, "train.en")
    values["data"]["train_labels_file"] = os.path.join(args.data_dir, "train.de")
    # No validation during the timed run: the whole budget goes to training.
    for key in ("eval_features_file", "eval_labels_file"):
        values["data"].pop(key, None)
    values.setdefault("eval", {})["export_on_best"] = None
    values["train"]["average_last_checkpoints"] = args.average_last_checkpoints
    if args.beam_size is not None:
        values["params"]["beam_width"] = args.beam_size
    if args.length_penalty is not None:
        values["params"]["length_penalty"] = args.length_penalty
    if args.warmup_steps is not None:
        values["params"].setdefault("decay_params", {})["warmup_steps"] = args.warmup_steps
    if args.mixed_precision is not None:
        values["train"]["mixed_precision"] = args.mixed_precision
    return check_config(values, os.path.dirname(os.path.abspath(args.config)),
                        source=args.config, required=TRAINING_KEYS)


def tokens_per_step(config, batches=200):
    """Mean real source + target tokens of the first `batches` batches of the training
    pipeline (`kerasnmt train`'s, repeated, so every batch is full), times the batches a
    step accumulates."""
    tokens = 0
    for features, labels in run_training_dataset(config, build_preprocessor(config)).take(
            batches):
        tokens += int(np.sum(features["length"])) + int(np.sum(labels["length"]))
    return tokens / batches * accumulation_steps(config)


def main():
    args = parse_arguments()
    os.makedirs(args.workdir, exist_ok=True)
    prefix = os.path.join(args.workdir, "sp")
    files = [os.path.join(args.data_dir, "train.en"), os.path.join(args.data_dir, "train.de")]
    if not (os.path.exists(f"{prefix}.model") and os.path.exists(f"{prefix}.vocab")):
        print(f"Training the joint SentencePiece model {prefix}.model", flush=True)
        vocabulary = dict(RECIPES[args.recipe][1])
        train_sentencepiece(files, prefix, vocabulary.pop("vocabulary_size"), **vocabulary)
    config = load_recipe(args, prefix)
    params = config["params"]
    if os.path.isdir(config["model_dir"]):
        shutil.rmtree(config["model_dir"])
    step_tokens = tokens_per_step(config)

    print(f"Training for {args.train_minutes:g} minutes", flush=True)
    result = train(config, time_limit=args.train_minutes * 60, verbose=2)
    steps, train_seconds = result.step, result.train_seconds

    sources = read_lines(os.path.join(args.data_dir, "test_2016_flickr.en"))
    references = read_lines(os.path.join(args.data_dir, "test_2016_flickr.de"))
    if args.test_sentences:
        sources, references = sources[: args.test_sentences], references[: args.test_sentences]
    sampler = build_sampler(config, n_best=1)
    if args.early_exit:
        sampler = BeamSampler.from_config(dict(sampler.get_config(), early_exit=True))
    translator = float32_translator(result.translator)  # as kerasnmt's commands decode
    translator.translate(sources, sampler=sampler, batch_size=32)  # compiles each shape
    begin = time.monotonic()
    details = translator.translate(sources, sampler=sampler, batch_size=32, return_details=True)
    decode_seconds = time.monotonic() - begin
    translations = [n_best[0]["text"] for n_best in details]
    target_tokens = sum(len(n_best[0]["tokens"]) for n_best in details)
    # The references are German: the Moses tokenizer of the published score needs `de`.
    scores = score_translations(translations, references, language="de")

    path = next_version_path(args.saved_models)
    export_translator(translator, path, sampler=sampler, **decoding_options(config))
    keras_path = os.path.join(args.workdir, "model.keras")  # for bench/decode_speed.py
    translator.save(keras_path)

    print()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(f"training: {steps} steps in {train_seconds:.0f} s ({step_tokens:.0f} source+target "
          f"tokens a step), {steps * step_tokens / train_seconds:.0f} source+target tokens/s")
    print(f"decoding: {len(sources)} sentences (beam {params['beam_width']}, length penalty "
          f"{params['length_penalty']:g} ({params['length_normalization']})"
          f"{', early exit' if args.early_exit else ''}) in "
          f"{decode_seconds:.1f} s, "
          f"{target_tokens / decode_seconds:.0f} target tokens/s, "
          f"{len(sources) / decode_seconds:.1f} sentences/s")
    print(f"test_2016_flickr ({len(sources)} sentences): detokenized BLEU, BLEU tokenized lc "
          "(Moses-tokenized, lowercased, as published), chrF2:")
    print(scores)
    print(f"exported to {path}; the model is also in {keras_path}")


if __name__ == "__main__":
    main()
