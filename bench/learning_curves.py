"""Learning curves of training runs, drawn from their own logs into one PNG.

    python bench/learning_curves.py runs/multi30k_tiny/model --output docs/images/multi30k_tiny.png
    python bench/learning_curves.py RUN_A RUN_B --label tiny --label reference --output cmp.png
    python bench/learning_curves.py RUN_A RUN_B --bleu bleu_tokenized_lc --output cmp.png

For each `model_dir`: the training loss (label-smoothed, the mean of each
`train.save_summary_steps` window, from the TensorBoard events in `model_dir/logs/train`),
the validation cross-entropy and the validation BLEU (from `model_dir/evaluations.jsonl`:
detokenized sacreBLEU, or with `--bleu bleu_tokenized_lc` the published Moses-tokenized
lowercased score, the one that compares a cased run with a lowercased one),
against the optimizer step. A resumed run's events and evaluations continue the same
curves. Needs matplotlib (`pip install -e ".[bench]"`).
"""

import argparse
import glob
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import tensorflow as tf  # noqa: E402

# The validation BLEU `--bleu` draws (a key of `evaluations.jsonl`) and its axis label.
BLEU_AXIS_LABELS = {
    "bleu": "BLEU (detokenized sacreBLEU)",
    "bleu_tokenized_lc": "BLEU (Moses-tokenized, lowercased)",
}


def training_losses(model_dir):
    """`{step: loss}` of the run's TensorBoard training summaries (a later event of the
    same step, from a resumed run, wins)."""
    losses = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "logs", "train", "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return dict(sorted(losses.items()))


def evaluations(model_dir):
    """The records of `model_dir/evaluations.jsonl`, by step."""
    path = os.path.join(model_dir, "evaluations.jsonl")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as stream:
        records = [json.loads(line) for line in stream if line.strip()]
    return {record["step"]: record for record in sorted(records, key=lambda r: r["step"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dirs", nargs="+", metavar="MODEL_DIR")
    parser.add_argument("--label", action="append", help="a legend label per MODEL_DIR")
    parser.add_argument("--output", required=True, help="the PNG file to write")
    parser.add_argument("--bleu", choices=tuple(BLEU_AXIS_LABELS), default="bleu",
                        help="the validation BLEU to draw (default: detokenized sacreBLEU)")
    args = parser.parse_args()
    labels = args.label or [os.path.basename(os.path.dirname(os.path.abspath(d)))
                            for d in args.model_dirs]
    if len(labels) != len(args.model_dirs):
        parser.error(f"{len(labels)} --label for {len(args.model_dirs)} MODEL_DIR")

    figure, (loss_axes, bleu_axes) = plt.subplots(1, 2, figsize=(11, 4.2))
    for model_dir, label in zip(args.model_dirs, labels):
        losses, records = training_losses(model_dir), evaluations(model_dir)
        if not losses and not records:
            parser.error(f"{model_dir}: no training summaries and no evaluations.jsonl")
        line, = loss_axes.plot(list(losses), list(losses.values()), alpha=0.6,
                               label=f"{label}: training (label-smoothed)")
        loss_axes.plot(list(records), [r["loss"] for r in records.values()], "o-",
                       color=line.get_color(), label=f"{label}: validation cross-entropy")
        if any(args.bleu in r for r in records.values()):
            steps = [s for s, r in records.items() if args.bleu in r]
            bleu_axes.plot(steps, [records[s][args.bleu] for s in steps], "o-",
                           color=line.get_color(), label=label)
        print(f"{label}: {len(losses)} training summaries up to step "
              f"{max(losses, default=0)}, {len(records)} evaluations")
    loss_axes.set(xlabel="optimizer step (weight update)", ylabel="loss (nats per token)",
                  title="Loss")
    bleu_axes.set(xlabel="optimizer step (weight update)",
                  ylabel=BLEU_AXIS_LABELS[args.bleu],
                  title="Validation BLEU")
    for axes in (loss_axes, bleu_axes):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
