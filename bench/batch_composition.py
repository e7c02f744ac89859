"""What the training batches of a run configuration hold: examples and tokens a batch,
under-filled batches, padding.

    python bench/batch_composition.py                       # examples/multi30k_tiny/run.yml
    python bench/batch_composition.py --config examples/multi30k/run.yml --batches 2000

Builds `kerasnmt train`'s own pipeline (`training_dataset` with the configuration's
`train` keys, seed included), reads `--batches` batches without training, and prints, over
them: examples a batch, the padded `max(source, target + 1)` tokens a batch (a target
counted with its `</s>`, as the token budget counts it) against
`train.batch_size`, the share of batches below half of it and of batches of at most 50
examples, and the share of source positions that are padding. No figure depends on the
machine.
"""

import argparse
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPOSITORY)

import keras  # noqa: E402

from kerasnmt.config import load_config  # noqa: E402
from kerasnmt.runner.run_dataset import run_training_dataset  # noqa: E402
from kerasnmt.runner.run_model import build_preprocessor  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=os.path.join(REPOSITORY, "examples",
                                                          "multi30k_tiny", "run.yml"))
    parser.add_argument("--batches", type=int, default=1000)
    arguments = parser.parse_args()
    config = load_config(arguments.config)
    train = config["train"]
    keras.utils.set_random_seed(train["seed"])
    dataset = run_training_dataset(config, build_preprocessor(config))
    examples, widths, real_tokens, source_positions = [], [], [], []
    for features, labels in dataset.take(arguments.batches):
        examples.append(int(features["ids"].shape[0]))
        # Target ids hold the tokens and <s>: as many positions as the target's counted length.
        widths.append(max(int(features["ids"].shape[1]), int(labels["ids"].shape[1])))
        real_tokens.append(int(features["length"].numpy().sum()))
        source_positions.append(int(np.prod(features["ids"].shape)))
    examples, widths = np.array(examples), np.array(widths)
    padded = examples * widths
    print(f"{arguments.config}: {len(widths)} batches of train.batch_size "
          f"{train['batch_size']} {train['batch_type']}")
    print(f"  examples a batch: mean {examples.mean():.0f}, min {examples.min()}")
    print(f"  padded max(source, target + 1) tokens a batch: mean {padded.mean():.0f}")
    if train["batch_type"] == "tokens":
        print(f"  batches below half of batch_size: "
              f"{np.mean(padded < train['batch_size'] / 2):.1%}")
    print(f"  batches of at most 50 examples: {np.mean(examples <= 50):.1%}")
    print(f"  padding: {1 - sum(real_tokens) / sum(source_positions):.1%} of source positions")


if __name__ == "__main__":
    main()
