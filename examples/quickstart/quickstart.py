"""The quickstart: vocabulary, training, export, translation through the SavedModel, BLEU.

    make quickstart                                  # sets up .venv, then runs this
    .venv/bin/python examples/quickstart/quickstart.py [--train-minutes 4]

On the Multi30k sample of `examples/quickstart/data` (3,000 English-German pairs):

1. trains a joint SentencePiece model and vocabulary (`runs/quickstart/sp.*`);
2. trains the Transformer of `examples/quickstart/run.yml` for `--train-minutes`
   (checkpoints in `runs/quickstart/model`; a previous quickstart run there is removed);
3. exports it as a SavedModel to the next version under `saved_models/quickstart/`;
4. loads that SavedModel with `tf.saved_model.load` (TensorFlow only: `kerasnmt` is not
   used for this step), translates `test_2016_flickr.en`, and prints a few translations
   and the sacreBLEU score against `test_2016_flickr.de`.
"""

import argparse
import os
import shutil
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import yaml  # noqa: E402

from kerasnmt.config import check_config  # noqa: E402
from kerasnmt.data import train_sentencepiece  # noqa: E402
from kerasnmt.evaluation import read_lines, score_translations  # noqa: E402
from kerasnmt.export import export_translator, next_version_path  # noqa: E402
from kerasnmt.runner.run_model import build_sampler, decoding_options  # noqa: E402
from kerasnmt.runner.training_run import TRAINING_KEYS, train  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=os.path.join(HERE, "run.yml"))
    parser.add_argument("--workdir", default=os.path.join(REPOSITORY, "runs", "quickstart"),
                        help="where the vocabulary goes (the config's paths point there)")
    parser.add_argument("--saved-models", default=os.path.join(REPOSITORY, "saved_models",
                                                               "quickstart"),
                        help="the SavedModel base path; each run exports the next version")
    parser.add_argument("--train-minutes", type=float, default=4.0,
                        help="training time (default: %(default)s)")
    parser.add_argument("--vocabulary-size", type=int, default=2000)
    parser.add_argument("--test-sentences", type=int, default=200,
                        help="how many test sentences to translate (default: all 200)")
    parser.add_argument("--tiny", action="store_true",
                        help="a tiny model trained for --max-step steps: the CI's smoke run")
    parser.add_argument("--max-step", type=int, help="override train.max_step")
    return parser.parse_args(argv)


def banner(text):
    print(f"\n=== {text}", flush=True)


def main(argv=None):
    args = parse_arguments(argv)
    start = time.monotonic()
    os.makedirs(args.workdir, exist_ok=True)

    banner("1. Vocabulary: a joint SentencePiece model of English and German")
    prefix = os.path.join(args.workdir, "sp")
    vocabulary = train_sentencepiece(
        [os.path.join(DATA, "train.en"), os.path.join(DATA, "train.de")], prefix,
        args.vocabulary_size,
    )
    print(f"wrote {prefix}.model and {prefix}.vocab ({len(vocabulary)} entries)")

    with open(args.config, encoding="utf-8") as stream:
        values = yaml.safe_load(stream)
    # The configuration's paths point to runs/quickstart; follow --workdir.
    values["model_dir"] = os.path.join(args.workdir, "model")
    for side in ("source", "target"):
        values["data"][f"{side}_vocabulary"] = f"{prefix}.vocab"
        values["data"][f"{side}_sentencepiece"] = f"{prefix}.model"
    if args.tiny:
        values["model"].update(num_layers=1, num_units=32, num_heads=2, ffn_inner_dim=64)
        # 32 keeps most pairs of the sample, so a 2,048-token batch fills from one pass over
        # the files; at 16 most pairs are dropped and each batch took 3 s of passes.
        values["train"].update(maximum_features_length=32, maximum_labels_length=32)
    if args.max_step is not None:
        values["train"]["max_step"] = args.max_step
    config = check_config(values, os.path.dirname(os.path.abspath(args.config)),
                          source=args.config, required=TRAINING_KEYS)
    model_dir = config["model_dir"]
    if os.path.isdir(model_dir):
        print(f"removing the previous quickstart run in {model_dir}")
        shutil.rmtree(model_dir)

    banner(f"2. Training ({args.train_minutes:g} minutes at most), checkpoints in {model_dir}")
    result = train(config, time_limit=args.train_minutes * 60)
    print(f"stopped at step {result.step}: {result.stop_reason}")

    path = next_version_path(args.saved_models)
    banner(f"3. Export to {path}")
    export_translator(result.translator, path, sampler=build_sampler(config),
                      **decoding_options(config))
    print("exported (signatures: serving_default, n_best)")

    banner("4. Translating the test set through the SavedModel (tf.saved_model.load)")
    sources = read_lines(os.path.join(DATA, "test_2016_flickr.en"))[: args.test_sentences]
    references = read_lines(os.path.join(DATA, "test_2016_flickr.de"))[: args.test_sentences]
    translate = tf.saved_model.load(path).signatures["serving_default"]
    translations = []
    for index in range(0, len(sources), 32):
        outputs = translate(source=tf.constant(sources[index:index + 32]))
        translations += [text.decode("utf-8") for text in outputs["translation"].numpy()]
    for source, translation, reference in list(zip(sources, translations, references))[:5]:
        print(f"\n  source:      {source}\n  translation: {translation}\n  reference:   {reference}")
    scores = score_translations(translations, references, language="de")
    banner(f"BLEU on {len(sources)} test sentences")
    print(scores)
    print(f"\nDone in {time.monotonic() - start:.0f} s. Serve {path} with TF Serving, or "
          f"translate a file:\n  kerasnmt translate --saved-model {path} --input FILE")
    return scores


if __name__ == "__main__":
    main(sys.argv[1:])
