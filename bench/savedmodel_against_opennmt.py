"""kerasnmt's SavedModel against OpenNMT-tf's, exported from the same weights: the start
(process start to the end of the first pass over a file), the warm speed and the memory.

    python bench/savedmodel_against_opennmt.py --kerasnmt KERASNMT_EXPORT \\
        --opennmt OPENNMT_EXPORT --opennmt-python ~/peers/onmt-venv/bin/python --input F

`KERASNMT_EXPORT` is `kerasnmt export` of a run that `kerasnmt convert` made from the
OpenNMT-tf run that `onmt-main export` wrote `OPENNMT_EXPORT` from. Each round loads
each SavedModel in a new process (OpenNMT-tf's with `--opennmt-python`, the interpreter of
its own environment), sends the file through `serving_default` in batches of
`--batch-size` sentences (the first pass compiles what it meets: kerasnmt's XLA programs,
without the warm-up file), then times three more passes. It prints, per round and
process: the seconds from process start to the end of the first pass, the load, the
warm target tokens/s (whitespace tokens, best pass) and the peak resident memory; then the
ratios kerasnmt / OpenNMT-tf of the means and the share of identical translations.
"""

import argparse
import json
import os
import subprocess
import sys
import time

# The child: what one process measures (no kerasnmt import: a serving process).
CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece ops both exports use)
path, input_key, output_key, source, batch_size = sys.argv[1:6]
batch_size = int(batch_size)
before = time.perf_counter()
signature = tf.saved_model.load(path).signatures["serving_default"]
load = time.perf_counter() - before
with open(source, encoding="utf-8") as file:
    lines = file.read().splitlines()

def one_pass():
    translations = []
    for index in range(0, len(lines), batch_size):
        outputs = signature(**{input_key: tf.constant(lines[index:index + batch_size])})
        for row in outputs[output_key].numpy():
            translations.append((row[0] if getattr(row, "ndim", 0) else row).decode())
    return translations

first = one_pass()
to_first_pass = time.perf_counter() - start
passes = []
for _ in range(3):
    before = time.perf_counter()
    assert one_pass() == first
    passes.append(time.perf_counter() - before)
print(json.dumps({
    "to_first_pass": to_first_pass, "load": load,
    "tokens_per_second": sum(len(line.split()) for line in first) / min(passes),
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "translations": first,
}))
"""


def measure(python, export, input_key, output_key, source, batch_size):
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    completed = subprocess.run(
        [python, "-c", CHILD, export, input_key, output_key, source, str(batch_size)],
        env=environment, capture_output=True, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kerasnmt", required=True, help="kerasnmt's SavedModel")
    parser.add_argument("--opennmt", required=True, help="OpenNMT-tf's SavedModel")
    parser.add_argument("--opennmt-python", required=True,
                        help="the Python of OpenNMT-tf's environment")
    parser.add_argument("--input", required=True, help="source sentences, one a line")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    source = os.path.abspath(args.input)
    ways = {
        "OpenNMT-tf": (args.opennmt_python, args.opennmt, "text", "text"),
        "kerasnmt": (sys.executable, args.kerasnmt, "source", "translation"),
    }
    results = {name: [] for name in ways}
    for round_number in range(1, args.rounds + 1):
        for name, (python, export, input_key, output_key) in ways.items():
            started = time.perf_counter()
            result = measure(python, export, input_key, output_key, source,
                             args.batch_size)
            results[name].append(result)
            print(f"round {round_number}  {name:10}  first pass ends at "
                  f"{result['to_first_pass']:5.1f} s (load {result['load']:.1f} s)  warm "
                  f"{result['tokens_per_second']:7.0f} tokens/s  peak "
                  f"{result['peak_mib']:5.0f} MiB  ({time.perf_counter() - started:.0f} s)",
                  flush=True)

    def mean(name, key):
        return sum(result[key] for result in results[name]) / len(results[name])

    for key, label in [("to_first_pass", "time to the end of the first pass"),
                       ("tokens_per_second", "warm tokens/s"), ("peak_mib", "peak memory")]:
        print(f"kerasnmt / OpenNMT-tf, {label}: "
              f"{mean('kerasnmt', key) / mean('OpenNMT-tf', key):.2f}x")
    pairs = list(zip(results["kerasnmt"][0]["translations"],
                     results["OpenNMT-tf"][0]["translations"]))
    same = sum(mine == theirs for mine, theirs in pairs)
    print(f"identical translations: {same} of {len(pairs)}")


if __name__ == "__main__":
    main()
