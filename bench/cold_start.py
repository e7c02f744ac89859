"""A file translated from process start to its last line: `kerasnmt translate --config`
cold (by default, with `--xla`, with `--no-xla`), with an empty XLA compilation cache, and
with that cache filled, against `onmt-main infer` on the same weights.

    python bench/cold_start.py --input source.100.en --config run.yml
    python bench/cold_start.py --input source.100.en --config converted/run.yml \\
        --onmt-main ~/peers/onmt-venv/bin/onmt-main --onmt-dir opennmt_run

`--config` is a kerasnmt run (for the comparison with OpenNMT-tf, one that
`kerasnmt convert` made from the OpenNMT-tf run in `--onmt-dir`, which holds its
`config.yml` and `model.py` and is where `onmt-main` runs). Each round runs, one after the
other, each a new process:

- `onmt-main infer` (with `--onmt-main`);
- `kerasnmt translate` without a cache (`KERASNMT_XLA_CACHE` unset): compiles the
  decoding from 500 sentences, decodes a smaller file in graph mode
  (`kerasnmt.runner.decoding_compilation`);
- `kerasnmt translate --xla` without a cache: compiles every program;
- `kerasnmt translate` with an empty cache: compiles every program and saves it;
- `kerasnmt translate` with that cache: loads the programs;
- `kerasnmt translate --no-xla`: graph mode, nothing compiled.

It prints each run's seconds and peak resident memory (its `ru_maxrss`), then for
each kerasnmt way the mean over the rounds and its ratio to `onmt-main infer`'s mean, and
whether the kerasnmt ways wrote the same translations (the scores that `infer.with_scores`
puts before them left out). The cache is in a temporary directory, emptied before each
round.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

KERASNMT = os.path.join(os.path.dirname(sys.executable), "kerasnmt")


def timed(command, env=None, cwd=None):
    """Runs `command` to its end; returns (seconds, its peak resident memory in MiB)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    # wait4, not wait: the process's own resource usage, where RUSAGE_CHILDREN would give
    # the largest of all the children so far.
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    return seconds, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="source sentences, one a line")
    parser.add_argument("--config", required=True, help="the kerasnmt run configuration")
    parser.add_argument("--onmt-main", help="OpenNMT-tf's onmt-main (its own environment)")
    parser.add_argument("--onmt-dir", help="the OpenNMT-tf run: config.yml and model.py")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if bool(args.onmt_main) != bool(args.onmt_dir):
        parser.error("--onmt-main and --onmt-dir go together")
    source = os.path.abspath(args.input)
    work = tempfile.mkdtemp(prefix="cold_start_")
    cache = os.path.join(work, "xla")
    environment = {key: value for key, value in os.environ.items()
                   if key != "KERASNMT_XLA_CACHE"}
    # name: (environment added, arguments added)
    ways = {
        "kerasnmt translate, no cache": ({}, []),
        "kerasnmt translate --xla, no cache": ({}, ["--xla"]),
        "kerasnmt translate, empty cache": ({"KERASNMT_XLA_CACHE": cache}, []),
        "kerasnmt translate, cache filled": ({"KERASNMT_XLA_CACHE": cache}, []),
        "kerasnmt translate --no-xla": ({}, ["--no-xla"]),
    }
    seconds = {name: [] for name in ["onmt-main infer", *ways]}
    outputs = {}
    for round_number in range(1, args.rounds + 1):
        shutil.rmtree(cache, ignore_errors=True)
        if args.onmt_main:
            output = os.path.join(work, "onmt.txt")
            taken, peak = timed([args.onmt_main, "--model", "model.py", "--config",
                                 "config.yml", "infer", "--features_file", source,
                                 "--predictions_file", output], cwd=args.onmt_dir)
            seconds["onmt-main infer"].append(taken)
            print(f"round {round_number}  onmt-main infer  {taken:6.1f} s  {peak:6.0f} MiB",
                  flush=True)
        for index, (name, (extra, arguments)) in enumerate(ways.items()):
            output = os.path.join(work, f"kerasnmt.{index}.txt")
            taken, peak = timed(
                [KERASNMT, "translate", "--config", args.config, "--input", source,
                 "--output", output, *arguments], env=dict(environment, **extra))
            seconds[name].append(taken)
            with open(output, encoding="utf-8") as file:
                outputs[name] = file.read()
            print(f"round {round_number}  {name}  {taken:6.1f} s  {peak:6.0f} MiB",
                  flush=True)
    onmt = seconds["onmt-main infer"]
    for name in ways:
        mean = sum(seconds[name]) / len(seconds[name])
        ratio = f"  {mean / (sum(onmt) / len(onmt)):.2f}x onmt-main infer's time" if onmt else ""
        print(f"{name}: {mean:.1f} s{ratio}")
    # Graph mode and XLA round the scores differently in their last digits.
    print("same translations:", len({_without_scores(text) for text in outputs.values()}) == 1)
    shutil.rmtree(work)


def _without_scores(text):
    """The translations of a `translate` output, each line's `SCORE ||| ` prefix removed."""
    return "\n".join(line.split(" ||| ", 1)[-1] for line in text.splitlines())


if __name__ == "__main__":
    main()
