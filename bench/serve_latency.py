"""Latency and throughput of an exported SavedModel, in a process without kerasnmt or Keras.

    python bench/serve_latency.py saved_models/multi30k/1
    python bench/serve_latency.py saved_models/quickstart/1 --sentences examples/quickstart/data/test_2016_flickr.en
    python bench/serve_latency.py saved_models/multi30k/1 --first-request cold   # then warm

Loads the SavedModel with `tf.saved_model.load` in a process where `keras`, `kerasnmt`
and `tensorflow_text` cannot be imported (a SentencePiece model gets TensorFlow Text's
SentencePiece op library only), as a serving process would. Every shape the
measurements use is run once first (XLA compiles each batch bucket and source width on
first use; that is start-up cost, not serving cost). Then it prints:

- single sentences: the p50 and p95 latency of `serving_default` called with one
  sentence, over `--single-sentences` sentences of the file;
- batch 32: the whole file translated in batches of `--batch-size` sentences in file
  order, as sentences/s (and translated tokens/s, by whitespace); with `--concurrency N`,
  N clients send their batches at once (threads), as TF Serving serves concurrent
  requests (one request's decoding keeps little more than one core busy);
- the sacreBLEU of those translations against `--references` (default: the German side
  of the default test set), so that a faster export shows what it costs in quality.

With `--first-request cold` or `warm`, it measures a fresh load's first requests instead
(and nothing else): the latency of the very first request, one sentence (the file's
first), then of the first batch of `--batch-size` sentences (the next ones); `warm` first
runs the export's warm-up file (`assets.extra/tf_serving_warmup_requests`, read as TF
Serving reads it: `PredictionLog` records through their signatures) and prints its
duration and record count. Run it once for each, each in a new process.

The decoding options are the export's (beam size, length penalty, ...); the figures are
comparable only between exports with the same options, on the same machine.
"""

import argparse
import concurrent.futures
import importlib.util
import os
import platform
import statistics
import sys
import time

from sacrebleu.metrics import BLEU

BLOCKED = ("keras", "kerasnmt", "tf_keras", "tensorflow_text")
# The Multi30k files, where scripts/download_multi30k.sh writes them.
MULTI30K = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                        "multi30k")
DEFAULT_SENTENCES = os.path.join(MULTI30K, "test_2016_flickr.en")
DEFAULT_REFERENCES = os.path.join(MULTI30K, "test_2016_flickr.de")


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved_model", help="an exported SavedModel directory")
    parser.add_argument("--sentences", default=DEFAULT_SENTENCES,
                        help="source sentences, one a line (default: Multi30k test_2016_flickr.en)")
    parser.add_argument("--references",
                        help="reference translations of --sentences, one a line, to score "
                        "the batch translations with sacreBLEU (default: "
                        "test_2016_flickr.de with the default sentences)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--single-sentences", type=int, default=200,
                        help="sentences timed one at a time (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="passes over the file at batch size, the best is kept")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="requests in flight at once for the batch measurement")
    parser.add_argument("--first-request", choices=("cold", "warm"),
                        help="measure only the first requests after loading: without "
                        "warm-up (cold) or after running the export's warm-up file (warm)")
    args = parser.parse_args()
    if args.references is None and args.sentences == DEFAULT_SENTENCES:
        args.references = DEFAULT_REFERENCES
    return args


def import_tensorflow_alone():
    """Imports and returns TensorFlow with `BLOCKED` made unimportable, as in a serving
    process: a SentencePiece model gets TensorFlow Text's SentencePiece op library only.
    Call it before anything imports TensorFlow."""
    text_spec = importlib.util.find_spec("tensorflow_text")
    for name in BLOCKED:
        sys.modules[name] = None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if text_spec is not None:
        tf.load_op_library(os.path.join(text_spec.submodule_search_locations[0], "python",
                                        "ops", "_sentencepiece_tokenizer.so"))
    return tf


def imported_blocked():
    """The modules of `BLOCKED` that were imported anyway (none, or the check failed)."""
    return sorted({name.split(".")[0] for name, module in sys.modules.items()
                   if module is not None and name.split(".")[0] in BLOCKED})


def warmup_file(saved_model):
    """The path of a SavedModel's warm-up file; exits naming it when there is none."""
    path = os.path.join(saved_model, "assets.extra", "tf_serving_warmup_requests")
    if not os.path.isfile(path):
        sys.exit(f"{path}: no warm-up file (exported with --no-warmup?)")
    return path


def warmup_file_requests(tf, path):
    """`(signature name, inputs)` of each record of the warm-up file at `path`, read as TF
    Serving reads it: `PredictionLog` records, sent through their signatures."""
    from tensorflow_serving.apis import prediction_log_pb2

    for record in tf.data.TFRecordDataset(path):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        yield request.model_spec.signature_name, {
            name: tf.make_ndarray(tensor) for name, tensor in request.inputs.items()}


def translate_batches(tf, translate, batches, clients):
    """One pass over `batches` (lists of sentences) through `serving_default` (`translate`),
    sent by `clients` (a `ThreadPoolExecutor`: its size is the requests in flight at once):
    the translations in order and the seconds it took."""
    def translated(batch):
        outputs = translate(source=tf.constant(batch))
        return [text.decode("utf-8") for text in outputs["translation"].numpy()]

    begin = time.perf_counter()
    translations = [text for texts in clients.map(translated, batches) for text in texts]
    return translations, time.perf_counter() - begin


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def first_requests(tf, model, args, sentences):
    """Prints the latency of the first single-sentence request and the first batch request of
    a fresh load, after running the warm-up file when `args.first_request` is `warm`."""
    if args.first_request == "warm":
        start, records = time.perf_counter(), 0
        for signature, inputs in warmup_file_requests(tf, warmup_file(args.saved_model)):
            model.signatures[signature](**{name: tf.constant(value)
                                           for name, value in inputs.items()})
            records += 1
        print(f"warm-up file: {records} requests in {time.perf_counter() - start:.1f} s")
    translate = model.signatures["serving_default"]
    requests = [("single sentence", sentences[:1]),
                (f"batch of {args.batch_size}", sentences[1:1 + args.batch_size])]
    for label, batch in requests:
        begin = time.perf_counter()
        translate(source=tf.constant(batch))
        print(f"first request ({args.first_request}), {label}: "
              f"{1000 * (time.perf_counter() - begin):.0f} ms")


def main():
    args = parse_arguments()
    tf = import_tensorflow_alone()
    with open(args.sentences, encoding="utf-8") as stream:
        sentences = [line.rstrip("\n") for line in stream]
    if args.references:
        with open(args.references, encoding="utf-8") as stream:
            references = [line.rstrip("\n") for line in stream]
        if len(references) != len(sentences):
            sys.exit(f"{args.references} has {len(references)} lines, {args.sentences} "
                     f"{len(sentences)}: expected a reference for each sentence")
    start = time.perf_counter()
    model = tf.saved_model.load(args.saved_model)
    translate = model.signatures["serving_default"]
    load_seconds = time.perf_counter() - start
    if args.first_request:
        print(f"SavedModel: {args.saved_model}, load {load_seconds:.1f} s")
        first_requests(tf, model, args, sentences)
        return

    singles = sentences[: args.single_sentences]
    batches = [sentences[i:i + args.batch_size] for i in range(0, len(sentences), args.batch_size)]
    start = time.perf_counter()
    for sentence in singles:  # compiles every shape the measurements use
        translate(source=tf.constant([sentence]))
    for batch in batches:
        translate(source=tf.constant(batch))
    warmup_seconds = time.perf_counter() - start

    latencies = []
    for sentence in singles:
        begin = time.perf_counter()
        translate(source=tf.constant([sentence]))
        latencies.append(time.perf_counter() - begin)

    best, translations = None, []
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as clients:
        for _ in range(args.repeats):
            translations, elapsed = translate_batches(tf, translate, batches, clients)
            best = elapsed if best is None else min(best, elapsed)
    words = sum(len(text.split()) for text in translations)

    imported = imported_blocked()
    print(f"SavedModel: {args.saved_model}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"TensorFlow {tf.__version__}; kerasnmt/keras imported: {imported or 'no'}")
    print(f"load {load_seconds:.1f} s, warm-up (XLA compilation of the shapes) "
          f"{warmup_seconds:.1f} s")
    print(f"single sentences ({len(latencies)}): p50 {1000 * statistics.median(latencies):.1f} ms, "
          f"p95 {1000 * percentile(latencies, 0.95):.1f} ms")
    print(f"batch {args.batch_size}, {args.concurrency} at once ({len(sentences)} sentences, "
          f"best of {args.repeats}): "
          f"{len(sentences) / best:.1f} sentences/s, {words / best:.0f} target words/s")
    if args.references:
        bleu = BLEU()
        score = bleu.corpus_score(translations, [references])
        print(f"those translations: {score.score:.2f} BLEU ({bleu.get_signature()})")


if __name__ == "__main__":
    main()
