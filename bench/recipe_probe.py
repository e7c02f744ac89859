"""Short training probes of a recipe with some keys changed: the loss curve and a validation score.

    python bench/recipe_probe.py --name post --steps 400
    python bench/recipe_probe.py --name pre --steps 400 --set model.pre_norm=true
    python bench/recipe_probe.py --name w300 --steps 500 --set params.learning_rate=0.005 \
        --set params.decay_type=InvSqrtDecay --set params.decay_params.warmup_steps=300

Trains `--config` (default: `examples/multi30k_tiny/run.yml`) from scratch into
`--workdir/NAME` for `--steps` optimizer steps of `--batch-size`-token batches, in float32,
with a constant learning rate of 0.001 unless `--set` says otherwise (`--set KEY=VALUE`,
the value read as YAML, any number of times, applied last), then prints the training loss
(label-smoothed, the mean of each 50 steps), the validation cross-entropy and BLEU, and
the time. Probes compare settings in minutes where a whole run takes hours; their losses
are comparable only between probes of the same steps, batch and schedule.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import yaml  # noqa: E402

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPOSITORY)

from learning_curves import training_losses  # noqa: E402
from kerasnmt.config import check_config  # noqa: E402
from kerasnmt.runner.training_run import TRAINING_KEYS, train  # noqa: E402


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=os.path.join(REPOSITORY, "examples", "multi30k_tiny",
                                                         "run.yml"))
    parser.add_argument("--name", required=True, help="the probe's directory under --workdir")
    parser.add_argument("--workdir", default=os.path.join(REPOSITORY, "runs", "probes"))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=2048, help="tokens per batch")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration key path and its YAML value")
    return parser.parse_args()


def set_key(values, assignment):
    key_path, separator, text = assignment.partition("=")
    if not separator:
        raise SystemExit(f"--set {assignment!r}: expected KEY=VALUE")
    *sections, key = key_path.split(".")
    for section in sections:
        values = values.setdefault(section, {})
    values[key] = yaml.safe_load(text)


def main():
    args = parse_arguments()
    with open(args.config, encoding="utf-8") as stream:
        values = yaml.safe_load(stream)
    model_dir = os.path.join(args.workdir, args.name)
    if os.path.exists(model_dir):
        raise SystemExit(f"{model_dir} exists: a probe starts from scratch; remove it first")
    values["model_dir"] = model_dir
    values["train"].update(
        max_step=args.steps, save_checkpoints_steps=args.steps, average_last_checkpoints=0,
        save_summary_steps=50, batch_size=args.batch_size, mixed_precision=None,
    )
    values["params"].update(decay_type=None, learning_rate=0.001)
    values["params"].pop("decay_params", None)
    values.setdefault("eval", {})["steps"] = args.steps
    for assignment in args.set:
        set_key(values, assignment)
    config = check_config(values, os.path.dirname(os.path.abspath(args.config)),
                          source=args.config, required=TRAINING_KEYS)
    if config["data"]["eval_features_file"] is None:
        raise SystemExit(f"{args.config}: a probe needs data.eval_features_file and "
                         "data.eval_labels_file")
    start = time.monotonic()
    train(config, verbose=0)
    seconds = time.monotonic() - start
    with open(os.path.join(model_dir, "evaluations.jsonl"), encoding="utf-8") as stream:
        last = [json.loads(line) for line in stream][-1]
    losses = " ".join(f"{step}:{loss:.2f}" for step, loss in training_losses(model_dir).items())
    print(f"{args.name} ({' '.join(args.set) or 'the recipe'}), {seconds:.0f} s")
    print(f"  training loss by step: {losses}")
    print(f"  validation at step {last['step']}: cross-entropy {last['loss']:.2f}, "
          f"BLEU {last['bleu']:.2f}")


if __name__ == "__main__":
    main()
