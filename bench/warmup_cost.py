"""Where a SavedModel's start-up goes: its load, then each request of its warm-up file with
the XLA programs it compiled, their compile time and the memory it added.

    python bench/warmup_cost.py saved_models/quickstart/1
    python bench/warmup_cost.py saved_models/quickstart/1 --requests 10   # the first 10 only
    python bench/warmup_cost.py saved_models/quickstart/1 --threads 2     # 2 at once
    python bench/warmup_cost.py saved_models/quickstart/1 --loader session  # TF Serving's

Loads the SavedModel as `bench/serve_latency.py` does (a process without Keras or
kerasnmt), then sends the requests of `assets.extra/tf_serving_warmup_requests` one at a
time, as TF Serving does at load. TensorFlow's device compiler logs each XLA compilation
and its time when `TF_CPP_VMODULE=device_compilation_profiler=1` is set before it starts
(the logging needs `TF_CPP_MIN_LOG_LEVEL=0`; this script sets both), on stderr, which the
script reads back after each request. A line a request:

- its signature, batch size and the word count of its longest sentence;
- its seconds, the programs it compiled and their compile seconds (the rest of its time
  is running it: the SavedModel's functions were traced at export);
- the resident memory after it (VmRSS) and what it added.

Then the totals: programs, compile seconds against the whole warm-up, and the peak
resident memory (VmHWM). With `--threads N` (TF Serving's `num_model_warmup_threads`,
`kerasnmt.export.serving_warmup.warm_up(..., num_threads=N)`), N requests run at once and
only the totals are printed: the warm-up's wall-clock seconds, its programs and their
compile seconds (summed over the threads), the peak memory. The process's first
compilation also pays XLA's own start (hundreds of MB of memory).

`--loader session` loads the SavedModel as TF Serving does, with the TensorFlow 1 session
loader (`tf.compat.v1.saved_model.loader.load`: the same C++ `DirectSession` and function
runtime), and runs each request with `Session.run`. The default, `tf.saved_model.load`,
also rebuilds each traced function as a Python graph, memory that TF Serving does not hold
(0.13 GiB at the peak for the quickstart model): the session loader's is the nearer one
to a server's.
"""

import argparse
import concurrent.futures
import itertools
import os
import re
import sys
import tempfile
import time

# Before TensorFlow starts, or the compilations are not logged.
os.environ["TF_CPP_VMODULE"] = "device_compilation_profiler=1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"

from serve_latency import (  # noqa: E402
    import_tensorflow_alone,
    warmup_file,
    warmup_file_requests,
)

# device_compilation_profiler.cc's line for each compilation.
COMPILED = re.compile(r"Compiled (\S+) (\d+) times, compile time: (\d+) us")


def memory_mib(field):
    """`VmRSS` (resident now) or `VmHWM` (peak) of this process, in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


class StderrLog:
    """This process's stderr (file descriptor 2, where TensorFlow's C++ code logs) sent to
    a temporary file; `new_lines()` gives what was written since its last call."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        self.read_up_to = 0
        return self

    def new_lines(self):
        sys.stderr.flush()
        self.file.seek(self.read_up_to)
        text = self.file.read()
        self.read_up_to += len(text)
        return text.decode("utf-8", "replace").splitlines()

    def __exit__(self, *exception):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.close()


def compilations(lines):
    """The compile seconds of each compilation that `lines` log."""
    return [int(match.group(3)) / 1e6 for match in map(COMPILED.search, lines) if match]


def describe(inputs):
    """Batch size and the word count of the longest sentence of a request's `source`."""
    source = [text.decode("utf-8") for text in inputs["source"].reshape(-1)]
    return len(source), max((len(text.split()) for text in source), default=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved_model", help="an exported SavedModel directory")
    parser.add_argument("--requests", type=int, default=0,
                        help="send only the first N requests of the warm-up file (0: all)")
    parser.add_argument("--threads", type=int, default=1,
                        help="requests sent at once (default 1, as TF Serving by default)")
    parser.add_argument("--loader", choices=("eager", "session"), default="eager",
                        help="tf.saved_model.load (default) or TF Serving's session loader")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error(f"--threads: at least 1, got {args.threads}")
    path = warmup_file(args.saved_model)

    rows = []
    with StderrLog() as log:
        tf = import_tensorflow_alone()
        start_mib = memory_mib("VmRSS")
        begin = time.perf_counter()
        send = loaded(tf, args.saved_model, args.loader)
        load_seconds = time.perf_counter() - begin
        load_compiles = compilations(log.new_lines())
        loaded_mib = memory_mib("VmRSS")
        requests = list(itertools.islice(warmup_file_requests(tf, path), args.requests or None))
        if args.threads > 1:
            begin = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(lambda request: send(*request), requests))
            seconds = time.perf_counter() - begin
            compiles = compilations(log.new_lines())
        else:
            for signature, inputs in requests:
                before_mib = memory_mib("VmRSS")
                begin = time.perf_counter()
                send(signature, inputs)
                seconds = time.perf_counter() - begin
                after_mib = memory_mib("VmRSS")
                rows.append((signature, *describe(inputs), seconds,
                             compilations(log.new_lines()), after_mib, after_mib - before_mib))

    print(f"SavedModel {args.saved_model}: TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, "
          f"{args.loader} loader")
    print(f"load: {load_seconds:.1f} s, {len(load_compiles)} programs compiled, resident "
          f"{start_mib:.0f} -> {loaded_mib:.0f} MiB")
    if args.threads > 1:
        print(f"warm-up, {args.threads} requests at once: {len(requests)} requests in "
              f"{seconds:.1f} s; {len(compiles)} programs compiled in {sum(compiles):.1f} s "
              "(summed over the threads)")
        print_memory()
        return
    print(f"{'#':>3} {'signature':<20} {'batch':>5} {'words':>5} {'seconds':>8} "
          f"{'programs':>8} {'compile s':>9} {'RSS MiB':>8} {'added':>7}")
    for number, (signature, batch, words, seconds, compiles, rss, added) in enumerate(rows, 1):
        print(f"{number:>3} {signature:<20} {batch:>5} {words:>5} {seconds:>8.2f} "
              f"{len(compiles):>8} {sum(compiles):>9.2f} {rss:>8.0f} {added:>+7.0f}")
    total_seconds = sum(row[3] for row in rows)
    compiles = [seconds for row in rows for seconds in row[4]]
    print(f"warm-up: {len(rows)} requests in {total_seconds:.1f} s; {len(compiles)} programs "
          f"compiled in {sum(compiles):.1f} s ({sum(compiles) / max(total_seconds, 1e-9):.0%}"
          f" of it); the rest is running the requests")
    print_memory()


def loaded(tf, saved_model, loader):
    """Loads `saved_model` with `loader` ("eager" or "session") and returns `send(signature,
    inputs)`, which runs one warm-up request through it."""
    if loader == "eager":
        model = tf.saved_model.load(saved_model)
        return lambda signature, inputs: model.signatures[signature](
            **{name: tf.constant(value) for name, value in inputs.items()})
    session = tf.compat.v1.Session(graph=tf.Graph())
    signatures = tf.compat.v1.saved_model.loader.load(session, ["serve"],
                                                      saved_model).signature_def

    def send(signature, inputs):
        definition = signatures[signature]
        session.run([output.name for output in definition.outputs.values()],
                    {definition.inputs[name].name: value for name, value in inputs.items()})

    return send


def print_memory():
    print(f"resident memory: {memory_mib('VmRSS'):.0f} MiB now, peak {memory_mib('VmHWM'):.0f}"
          f" MiB")


if __name__ == "__main__":
    main()
