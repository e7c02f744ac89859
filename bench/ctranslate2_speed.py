"""Decoding speed and BLEU of one model in kerasnmt and in CTranslate2, one process each.

Issue 21, item 4: the same weights, the same sentences (the 1,000 of Multi30k
`test_2016_flickr.en`), the same decoding options (beam 4, length penalty 0.6, batches of
32), one machine, one run. The model (`--model FILE.keras`, or `--config RUN_YML` with
its latest or `--checkpoint`) is first exported, in a process of its own, to a SavedModel
(`kerasnmt.export.export_translator`) and to CTranslate2 in float32 and in int8
(`kerasnmt.export.ctranslate2.export_ctranslate2`), under `--workdir`. Then each runtime
translates the sentences in a fresh process, one after the other:

- `translate`: `Translator.translate` of the `.keras` model, as `bench/decode_speed.py`
  times it (its `load_translator` and `timed_translate`): batches of 32 sorted by length,
  XLA-compiled; with `compact_batch` the sentences of each source width stream through 32
  decoding slots.
- `savedmodel cN`: the SavedModel's `serving_default`, as `bench/serve_latency.py` times
  it (its `translate_batches`) in a process where keras and kerasnmt cannot be imported:
  batches of 32, N requests in flight at once (`--savedmodel-concurrency`, default 1 and
  2: one request's decoding keeps little more than one core busy), cut from the sentences
  in file order, as a server receives them, and cut from the sentences sorted by their
  number of source tokens, longest first, as the CTranslate2 client below cuts its
  batches (`--savedmodel-orders`, default both).
- `ctranslate2 TYPE IxJ`: `ctranslate2.Translator(inter_threads=I, intra_threads=J)` on
  the float32 and the int8 export (`--layouts`, default 2x1, CTranslate2's fastest on 2
  cores, and 1x2), in a process without TensorFlow: each sentence tokenized with the
  export's SentencePiece model, the sentences sorted by length (longest first) and cut
  into batches of 32 as `translate_batch(max_batch_size=32)` does, every batch submitted
  at once (`asynchronous=True`: the inter-threads take them in turn) with the
  `max_decoding_length` of kerasnmt's limit for its longest source
  (`translate_batch_options`), and the hypotheses detokenized. Tokenizing and
  detokenizing are timed, as they are inside the other two.

Two options time what a server may add to the float32 model, each against the runs
without it:

- `--savedmodel-weights float32,int8`: also a SavedModel whose `Dense` layers are Keras
  int8 (`kerasnmt export --quantization int8`, `kerasnmt.export.quantize_dense_layers`;
  the embeddings and the output layer stay float32).
- `--shortlist FILE` (a lexical shortlist of `kerasnmt build-shortlist`, CTranslate2's
  vocabulary-map format): every SavedModel is also exported with it (each batch decoded
  over its shortlist), and every CTranslate2 layout is also timed with it as the model's
  `vmap.txt` and `translate_batch(use_vmap=True)`, CTranslate2's vocabulary map.

Each process runs one warm-up pass over the sentences (XLA compilation of every shape
for kerasnmt), then `--timed-passes` timed passes (default 3), of which the fastest is
reported (a pass takes one to three seconds: one pass alone varies by 15% on a shared
VM). The options are those of the exports: `--beam-size`, `--length-penalty`, and for
kerasnmt `compact_batch` and `early_exit` (both on by default: CTranslate2 always drops a
finished sentence from its batch; it stops a sentence once its best hypothesis has
finished only without penalties, and with a length penalty once `beam_size` hypotheses
have finished, each replaced in the beam by the next candidate, as fairseq does); with
`--config`, the decoding length limits and
the source cut of the run configuration. The length penalty is not the same formula in
both runtimes by default (docs/ctranslate2.md), so translations differ: hence the BLEU
columns. `--length-normalization power` gives kerasnmt CTranslate2's formula
(`length_normalization="power"`, `freeze_finished_scores=True`): both rank hypotheses alike;
with `--finished-hypotheses set_aside --no-early-exit` kerasnmt also searches as CTranslate2
does (`BeamSampler(finished_hypotheses="set_aside")`): the same search in both runtimes.

For every runtime alike, from the translations it returned (text): **target tokens** are
the SentencePiece pieces of each translation encoded again with the model's target
SentencePiece model (`</s>` not counted; words split on whitespace when the model has a
whitespace tokenizer), as `bench/decode_speed.py` counts them; words are
whitespace-separated words, as `bench/serve_latency.py` counts them. BLEU is sacreBLEU's
(13a, mixed case) against `test_2016_flickr.de`, and "BLEU tok lc" the project's
lowercased, Moses-tokenized BLEU (`kerasnmt.evaluation.score_translations`, German Moses
rules). "same" counts the translations equal to `translate`'s.

The fixed costs of each runtime, and their ratios to CTranslate2 float32's (the first
layout): the warm-up pass; the first pass from process start (from the moment the parent
starts the process to the end of its warm-up pass: imports, loading and compilation, what a
user who translates a file once waits for); the peak resident memory of the process.

Not a test; run it on a quiet machine (nothing else running):

    python bench/ctranslate2_speed.py --model runs/bench/multi30k_reference/model.keras
    python bench/ctranslate2_speed.py --config examples/multi30k/run.yml \\
        --checkpoint runs/multi30k/model/ckpt-690
    python bench/ctranslate2_speed.py --model tiny.keras --max-sentences 64   # smoke run
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
# The Multi30k files, where scripts/download_multi30k.sh writes them.
DEFAULT_DATA = os.path.join(BENCH, "..", "data", "multi30k")
RUNTIMES = ("translate", "savedmodel", "ctranslate2")
COMPUTE_TYPES = ("float32", "int8")
SAVEDMODEL_ORDERS = ("file", "sorted")
SAVEDMODEL_WEIGHTS = ("float32", "int8")
PLAN_FILE = "ctranslate2_plan.json"
# The time.time() at which the parent started a timing process, passed in its environment.
STARTED_VARIABLE = "CTRANSLATE2_SPEED_STARTED"
DECODING_FILE = "decoding.json"


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", metavar="FILE.keras", help="a model saved with Translator.save")
    model.add_argument("--config", metavar="RUN_YML",
                       help="a run configuration: the model, its vocabularies and decoding "
                       "length limits; weights from its model_dir (or --checkpoint)")
    parser.add_argument("--checkpoint", help="with --config: a checkpoint or directory of them")
    parser.add_argument("--workdir", default="/tmp/kerasnmt_ctranslate2_speed",
                        help="where the exports, translations and results are written")
    parser.add_argument("--data-dir", default=DEFAULT_DATA)
    parser.add_argument("--input", default="test_2016_flickr.en")
    parser.add_argument("--reference", default="test_2016_flickr.de")
    parser.add_argument("--target-language", default="de",
                        help="Moses language of the tokenized-lowercased BLEU")
    parser.add_argument("--max-sentences", type=int,
                        help="translate only the first N sentences (smoke run)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--length-penalty", type=float, default=0.6)
    parser.add_argument("--length-normalization", choices=("gnmt", "power"), default="gnmt",
                        help="kerasnmt's length penalty: gnmt (its default, OpenNMT-tf's) or "
                        "power (CTranslate2's own: length_normalization='power' with "
                        "freeze_finished_scores, so both runtimes rank hypotheses alike)")
    parser.add_argument("--finished-hypotheses", choices=("in_beam", "set_aside"),
                        default="in_beam",
                        help="kerasnmt's beam search: in_beam (OpenNMT-tf's) or set_aside "
                        "(CTranslate2's own, with --no-early-exit: the same search in both "
                        "runtimes)")
    parser.add_argument("--compact-batch", action=argparse.BooleanOptionalAction, default=True,
                        help="kerasnmt: BeamSampler(compact_batch=...)")
    parser.add_argument("--early-exit", action=argparse.BooleanOptionalAction, default=True,
                        help="kerasnmt: BeamSampler(early_exit=...)")
    parser.add_argument("--jit-compile", action=argparse.BooleanOptionalAction, default=True,
                        help="kerasnmt: XLA-compile the decoding (translate and SavedModel)")
    parser.add_argument("--timed-passes", type=int, default=3,
                        help="timed passes per runtime after the warm-up; the fastest counts")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated, of: %(default)s")
    parser.add_argument("--compute-types", default=",".join(COMPUTE_TYPES),
                        help="CTranslate2 exports to time, of: %(default)s")
    parser.add_argument("--layouts", default="2x1,1x2",
                        help="CTranslate2 inter_threads x intra_threads, comma-separated")
    parser.add_argument("--savedmodel-concurrency", default="1,2",
                        help="SavedModel requests in flight at once, comma-separated")
    parser.add_argument("--savedmodel-orders", default=",".join(SAVEDMODEL_ORDERS),
                        help="how the SavedModel's batches are cut, comma-separated, of: "
                        "%(default)s (sorted: by source tokens, longest first, as CTranslate2's)")
    parser.add_argument("--savedmodel-weights", default="float32",
                        help="SavedModel exports to time, comma-separated, of: float32, int8 "
                        "(Keras int8 Dense layers, as kerasnmt export --quantization int8)")
    parser.add_argument("--shortlist", metavar="FILE",
                        help="a lexical shortlist (kerasnmt build-shortlist): each SavedModel "
                        "and CTranslate2 run is timed without and with it (CTranslate2: as "
                        "vmap.txt with use_vmap=True)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.checkpoint and not arguments.config:
        parser.error("--checkpoint goes with --config")
    for path in (arguments.model or arguments.config, arguments.shortlist):
        if path is not None and not os.path.isfile(path):
            parser.error(f"{path}: no such file")
    for name, allowed in (("runtimes", RUNTIMES), ("compute_types", COMPUTE_TYPES),
                          ("savedmodel_orders", SAVEDMODEL_ORDERS),
                          ("savedmodel_weights", SAVEDMODEL_WEIGHTS)):
        values = getattr(arguments, name).split(",")
        if not values or any(value not in allowed for value in values):
            parser.error(f"--{name.replace('_', '-')}: each of {', '.join(allowed)}")
        setattr(arguments, name, values)
    try:
        arguments.layouts = [tuple(int(n) for n in layout.split("x"))
                             for layout in arguments.layouts.split(",")]
        arguments.savedmodel_concurrency = [int(n) for n in
                                            arguments.savedmodel_concurrency.split(",")]
    except ValueError:
        parser.error("--layouts: INTERxINTRA,...; --savedmodel-concurrency: N,...")
    if any(len(layout) != 2 or min(layout) < 1 for layout in arguments.layouts):
        parser.error("--layouts: INTERxINTRA with both at least 1, e.g. 2x1,1x2")
    if min(arguments.savedmodel_concurrency) < 1:
        parser.error("--savedmodel-concurrency: at least 1")
    if arguments.max_sentences is not None and arguments.max_sentences < 1:
        parser.error("--max-sentences: at least 1")
    if arguments.timed_passes < 1:
        parser.error("--timed-passes: at least 1")
    if arguments.finished_hypotheses == "set_aside" and arguments.early_exit:
        parser.error("--finished-hypotheses set_aside has its own end: add --no-early-exit")
    return arguments


def read_lines(path, limit=None):
    """The lines of a file without their newline, as decode_speed.py and serve_latency.py
    read them."""
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file][:limit]


def sentences_of(arguments):
    return read_lines(os.path.join(arguments.data_dir, arguments.input), arguments.max_sentences)


def workdir_path(arguments, *names):
    return os.path.join(arguments.workdir, *names)


def shortlist_variants(arguments):
    """Without the shortlist, and with it when `--shortlist` names one."""
    return (False, True) if arguments.shortlist else (False,)


def savedmodel_directory(weights, shortlist):
    """The SavedModel export's directory name under the workdir."""
    return ("savedmodel" + ("" if weights == "float32" else f"_{weights}")
            + ("_shortlist" if shortlist else ""))


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2)
        file.write("\n")


def read_json(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def seconds_since_start():
    """Seconds since the parent started this process (`child`): a cold start, from process
    start to now, imports and loading included."""
    return time.time() - float(os.environ[STARTED_VARIABLE])


def process_figures():
    return {"cpu_seconds": time.process_time(),
            "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


# ---------------------------------------------------------------------------------------
# The export process.
# ---------------------------------------------------------------------------------------


def sampler_options_of(arguments):
    """The `BeamSampler` options of the runs (kerasnmt's, and CTranslate2's through its
    export's `translate_options.json`)."""
    return dict(beam_size=arguments.beam_size, length_penalty=arguments.length_penalty,
                compact_batch=arguments.compact_batch, early_exit=arguments.early_exit,
                length_normalization=arguments.length_normalization,
                freeze_finished_scores=arguments.length_normalization == "power",
                finished_hypotheses=arguments.finished_hypotheses)


def prepare(arguments):
    """Loads the model, writes it as `.keras` (from a checkpoint), the SavedModel, the
    CTranslate2 exports, the decoding options every worker uses, and CTranslate2's
    per-sentence decoding length limits (`translate_batch_options`)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    from kerasnmt.export.ctranslate2 import (
        export_ctranslate2,
        read_translate_options,
        tokenizers,
        translate_batch_options,
    )
    from kerasnmt.data.vocabulary import PADDING_TOKEN, START_OF_SENTENCE_TOKEN
    from kerasnmt.export import (
        DEFAULT_MAXIMUM_SOURCE_LENGTH,
        export_translator,
        quantize_dense_layers,
    )
    from kerasnmt.decoding import float32_translator
    from kerasnmt.decoding import BeamSampler
    from kerasnmt.runner.run_model import build_shortlist

    started = time.perf_counter()
    sampler_options = sampler_options_of(arguments)
    options = {"maximum_source_length": DEFAULT_MAXIMUM_SOURCE_LENGTH}
    config = None
    if arguments.config:
        from kerasnmt.config import load_config
        from kerasnmt.runner.run_checkpoints import restore_translator
        from kerasnmt.runner.run_model import MODEL_KEYS, decoding_options

        config = load_config(arguments.config, required=MODEL_KEYS)
        translator, checkpoint = restore_translator(config, arguments.checkpoint)
        translator = float32_translator(translator)
        params = config["params"]
        sampler_options.update(max_length=params["maximum_decoding_length"],
                               min_length=params["minimum_decoding_length"])
        options.update(decoding_options(config))
        model_path = workdir_path(arguments, "model.keras")
        translator.save(model_path)
        source = f"{arguments.config}, {checkpoint} (saved as {model_path})"
    else:
        model_path = os.path.abspath(arguments.model)
        translator = float32_translator(keras.saving.load_model(model_path, compile=False))
        source = model_path
    import kerasnmt

    print(f"model: {source}, {translator.count_params():,} parameters "
          f"({time.perf_counter() - started:.1f} s); kerasnmt from "
          f"{os.path.dirname(kerasnmt.__file__)}", flush=True)
    sampler = BeamSampler(**sampler_options)

    # Only --shortlist (not params.shortlist), at params.shortlist_width with --config.
    shortlist = arguments.shortlist and build_shortlist(config, translator.preprocessor,
                                                        arguments.shortlist)
    exports = {}
    for compute_type in COMPUTE_TYPES:  # before any Keras quantization, which it refuses
        begin = time.perf_counter()
        path = workdir_path(arguments, f"ct2_{compute_type}")
        export_ctranslate2(translator, path, quantization=None if compute_type == "float32"
                           else compute_type, sampler=sampler, force=True, **options)
        exports[f"ctranslate2 {compute_type}"] = time.perf_counter() - begin
        if shortlist:  # CTranslate2's vocabulary map, read by translate_batch(use_vmap=True)
            shutil.copyfile(arguments.shortlist, os.path.join(path, "vmap.txt"))
    for weights in [w for w in SAVEDMODEL_WEIGHTS if w in arguments.savedmodel_weights]:
        if weights == "int8":  # in place, so after float32
            quantize_dense_layers(translator, "int8")
        for with_shortlist in shortlist_variants(arguments):
            name = savedmodel_directory(weights, with_shortlist)
            begin = time.perf_counter()
            export_translator(translator, workdir_path(arguments, name), sampler=sampler,
                              jit_compile=arguments.jit_compile, warmup=False,
                              shortlist=shortlist if with_shortlist else None, **options)
            exports[name] = time.perf_counter() - begin
    print("exports: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in exports.items()),
          flush=True)

    path = workdir_path(arguments, "ct2_float32")
    ct2_options = read_translate_options(path)
    tokenize, _ = tokenizers(path)
    lengths = [len(tokenize(sentence)) for sentence in sentences_of(arguments)]
    write_json(workdir_path(arguments, PLAN_FILE), {
        "source_lengths": lengths,
        "max_decoding_lengths": [translate_batch_options(ct2_options, n)["max_decoding_length"]
                                 for n in lengths],
        # What tokenizers' detokenize drops.
        "dropped_target_tokens": [PADDING_TOKEN, START_OF_SENTENCE_TOKEN],
    })
    write_json(workdir_path(arguments, DECODING_FILE), {
        "model": model_path, "source": source, "parameters": translator.count_params(),
        "sampler": sampler_options, "options": options, "export_seconds": exports,
        "ctranslate2_translate_batch": ct2_options["translate_batch"],
    })


# ---------------------------------------------------------------------------------------
# The timing processes: each writes its translations and a JSON of its figures.
# ---------------------------------------------------------------------------------------


def time_translate(arguments, decoding):
    """`Translator.translate` with bench/decode_speed.py's loading and timing."""
    import decode_speed  # the same directory; imports TensorFlow and kerasnmt

    from kerasnmt.decoding import BeamSampler

    speed_arguments = decode_speed.parse_arguments(
        ["--checkpoint", decoding["model"], "--batch-size", str(arguments.batch_size),
         "--data-dir", arguments.data_dir]
        + ([] if arguments.jit_compile else ["--no-jit-compile"]))
    begin = time.perf_counter()
    translator = decode_speed.load_translator(speed_arguments)
    load = time.perf_counter() - begin
    sampler = BeamSampler(**decoding["sampler"])
    sentences = sentences_of(arguments)
    _, warmup, _ = decode_speed.timed_translate(translator, sentences, sampler, None,
                                                speed_arguments, **decoding["options"])
    first_pass = seconds_since_start()
    (outputs, seconds, cpu), passes = fastest_pass(
        lambda: decode_speed.timed_translate(translator, sentences, sampler, None,
                                             speed_arguments, **decoding["options"]),
        arguments.timed_passes)
    import tensorflow as tf

    return outputs, {"load_seconds": load, "warmup_seconds": warmup, "seconds": seconds,
                     "first_pass_seconds": first_pass,
                     "pass_seconds": passes, "timed_cpu_seconds": cpu,
                     "software": f"TensorFlow {tf.__version__}"}


def fastest_pass(run, passes):
    """`run()` -> `(outputs, seconds, cpu_seconds)` run `passes` times: the fastest run's
    result, and the seconds of every run."""
    results = [run() for _ in range(passes)]
    return min(results, key=lambda result: result[1]), [result[1] for result in results]


def savedmodel_order(sentences, order, source_lengths):
    """The indices of `sentences` in the order their batches are cut: as they come
    (`file`), or by source length, longest first (`sorted`, as `ctranslate2_pass`)."""
    indices = range(len(sentences))
    if order == "file":
        return list(indices)
    return sorted(indices, key=lambda i: source_lengths[i], reverse=True)


def time_savedmodel(arguments, concurrency, order, directory):
    """The serving_default of the SavedModel under `directory` with
    bench/serve_latency.py's process and timing."""
    import concurrent.futures

    import serve_latency  # the same directory

    tf = serve_latency.import_tensorflow_alone()
    sentences = sentences_of(arguments)
    indices = savedmodel_order(sentences, order,
                               read_json(workdir_path(arguments, PLAN_FILE))["source_lengths"])
    batches = [[sentences[i] for i in indices[start:start + arguments.batch_size]]
               for start in range(0, len(indices), arguments.batch_size)]
    begin = time.perf_counter()
    model = tf.saved_model.load(workdir_path(arguments, directory))
    translate = model.signatures["serving_default"]
    load = time.perf_counter() - begin
    with concurrent.futures.ThreadPoolExecutor(concurrency) as clients:
        _, warmup = serve_latency.translate_batches(tf, translate, batches, clients)
        first_pass = seconds_since_start()

        def timed_pass():
            cpu = time.process_time()
            translations, seconds = serve_latency.translate_batches(tf, translate, batches,
                                                                    clients)
            return translations, seconds, time.process_time() - cpu

        (translations, seconds, cpu), passes = fastest_pass(timed_pass, arguments.timed_passes)
    outputs = [""] * len(sentences)
    for i, translation in zip(indices, translations):
        outputs[i] = translation
    imported = serve_latency.imported_blocked()
    return outputs, {"load_seconds": load, "warmup_seconds": warmup, "seconds": seconds,
                     "first_pass_seconds": first_pass,
                     "pass_seconds": passes, "timed_cpu_seconds": cpu,
                     "software": f"TensorFlow {tf.__version__}, keras/kerasnmt imported: "
                                 f"{', '.join(imported) or 'no'}"}


def ctranslate2_tokenizers(path, dropped):
    """`tokenize` and `detokenize` as `kerasnmt.export.ctranslate2.tokenizers(path)` (which
    imports keras): SentencePiece or whitespace, as translate_options.json says."""
    options = read_json(os.path.join(path, "translate_options.json"))
    functions = []
    for side in ("source", "target"):
        tokenizer = options[f"{side}_tokenizer"]
        if tokenizer["type"] == "sentencepiece":
            import sentencepiece

            processor = sentencepiece.SentencePieceProcessor(
                model_file=os.path.join(path, tokenizer["model"]))
            functions.append((lambda text, p=processor: p.encode(text, out_type=str),
                              lambda tokens, p=processor: p.decode_pieces(tokens)))
        elif tokenizer["type"] == "whitespace":
            functions.append((str.split, " ".join))
        else:
            raise SystemExit(f"{path}: a {tokenizer['type']} {side} tokenizer")
    tokenize, detokenize_target = functions[0][0], functions[1][1]
    dropped = set(dropped)
    return tokenize, lambda tokens: detokenize_target([t for t in tokens if t not in dropped])


def ctranslate2_pass(translator, sentences, tokenize, detokenize, plan, batch_options,
                     batch_size):
    """Text in, text out: tokenizes, sorts by length, submits every batch of `batch_size`
    with its own `max_decoding_length`, waits, detokenizes. Returns the translations and
    the source lengths."""
    tokens = [tokenize(sentence) for sentence in sentences]
    order = sorted((i for i in range(len(tokens)) if tokens[i]),
                   key=lambda i: len(tokens[i]), reverse=True)
    pending = []
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        limit = max(plan["max_decoding_lengths"][i] for i in batch)
        results = translator.translate_batch(
            [tokens[i] for i in batch], max_batch_size=batch_size, asynchronous=True,
            **dict(batch_options, max_decoding_length=limit))
        pending.append((batch, results))
    translations = [""] * len(sentences)  # empty sources: "" as in kerasnmt
    for batch, results in pending:
        for i, result in zip(batch, results):
            translations[i] = detokenize(result.result().hypotheses[0])
    return translations, [len(t) for t in tokens]


def time_ctranslate2(arguments, compute_type, inter, intra, use_vmap):
    """CTranslate2 on an export, in a process that imports neither TensorFlow nor kerasnmt;
    with `use_vmap`, over the vocabulary map of `--shortlist`."""
    import ctranslate2

    path = workdir_path(arguments, f"ct2_{compute_type}")
    plan = read_json(workdir_path(arguments, PLAN_FILE))
    batch_options = read_json(workdir_path(arguments, DECODING_FILE))["ctranslate2_translate_batch"]
    if use_vmap:
        batch_options = dict(batch_options, use_vmap=True)
    sentences = sentences_of(arguments)
    tokenize, detokenize = ctranslate2_tokenizers(path, plan["dropped_target_tokens"])
    begin = time.perf_counter()
    translator = ctranslate2.Translator(path, device="cpu", inter_threads=inter,
                                        intra_threads=intra)
    load = time.perf_counter() - begin
    run = (translator, sentences, tokenize, detokenize, plan, batch_options, arguments.batch_size)
    begin = time.perf_counter()
    _, lengths = ctranslate2_pass(*run)
    warmup = time.perf_counter() - begin
    first_pass = seconds_since_start()
    if lengths != plan["source_lengths"][:len(sentences)]:
        raise SystemExit("the source tokens differ from kerasnmt's tokenizers(path)")

    def timed_pass():
        cpu, begin = time.process_time(), time.perf_counter()
        outputs, _ = ctranslate2_pass(*run)
        return outputs, time.perf_counter() - begin, time.process_time() - cpu

    (outputs, seconds, cpu), passes = fastest_pass(timed_pass, arguments.timed_passes)
    imported = sorted(name for name in ("tensorflow", "keras", "kerasnmt") if name in sys.modules)
    return outputs, {"load_seconds": load, "warmup_seconds": warmup, "seconds": seconds,
                     "first_pass_seconds": first_pass,
                     "pass_seconds": passes, "timed_cpu_seconds": cpu,
                     "software": f"CTranslate2 {ctranslate2.__version__}, compute_type "
                                 f"{translator.compute_type}, TensorFlow/kerasnmt imported: "
                                 f"{', '.join(imported) or 'no'}"}


def worker(arguments):
    """One timing process: `--worker translate`, `savedmodel:N:ORDER:DIRECTORY` or
    `ctranslate2:TYPE:IxJ[:vmap]`."""
    name, *rest = arguments.worker.split(":")
    if name == "prepare":
        return prepare(arguments)
    if name == "translate":
        outputs, figures = time_translate(arguments, read_json(workdir_path(arguments,
                                                                            DECODING_FILE)))
    elif name == "savedmodel":
        outputs, figures = time_savedmodel(arguments, int(rest[0]), rest[1], rest[2])
    else:
        inter, intra = (int(n) for n in rest[1].split("x"))
        outputs, figures = time_ctranslate2(arguments, rest[0], inter, intra,
                                            use_vmap=rest[2:] == ["vmap"])
    label = arguments.worker.replace(":", "_")
    with open(workdir_path(arguments, f"{label}.txt"), "w", encoding="utf-8") as file:
        file.writelines(text + "\n" for text in outputs)
    write_json(workdir_path(arguments, f"{label}.json"), {**figures, **process_figures()})
    return None


# ---------------------------------------------------------------------------------------
# The parent: runs the processes one after the other, then scores and prints.
# ---------------------------------------------------------------------------------------


FIXED_COSTS = {"warmup_seconds": "warm-up pass", "first_pass_seconds": "first pass from start",
               "max_rss_gib": "peak memory"}


def fixed_cost_ratios(result, baseline):
    """The fixed costs of a run over those of `baseline` (a CTranslate2 run, or None): the
    warm-up pass, the first pass from process start (imports and loading included) and the
    peak memory, one table cell each (issue 61's ratios).

    Examples:
        >>> fixed_cost_ratios({"warmup_seconds": 21.0, "first_pass_seconds": 33.0,
        ...                    "max_rss_gib": 1.5},
        ...                   {"warmup_seconds": 2.1, "first_pass_seconds": 3.0,
        ...                    "max_rss_gib": 0.1})
        ['10.0', '11.0', '15.0']
        >>> fixed_cost_ratios({"warmup_seconds": 1.0}, None)
        ['', '', '']
    """
    if baseline is None:
        return [""] * len(FIXED_COSTS)
    return [f"{result[key] / baseline[key]:.1f}" for key in FIXED_COSTS]


def child(name, check=True):
    """Runs this script as `--worker name` with the same arguments: the seconds it took, and
    its exit status."""
    begin = time.perf_counter()
    status = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--worker", name],
        check=check, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                              **{STARTED_VARIABLE: repr(time.time())})).returncode
    return time.perf_counter() - begin, status


def machine():
    model = platform.processor() or platform.machine()
    flags = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name") and model in ("", platform.machine()):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    extensions = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8")
                  if f in flags]
    return f"{model}, {os.cpu_count()} cores ({' '.join(extensions) or 'no AVX2'})"


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def count_tokens(texts, path):
    """Target tokens of each text: SentencePiece pieces of the export's target model
    (`</s>` not counted), or whitespace words for a whitespace tokenizer."""
    tokenizer = read_json(os.path.join(path, "translate_options.json"))["target_tokenizer"]
    if tokenizer["type"] == "sentencepiece":
        import sentencepiece

        processor = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(path, tokenizer["model"]))
        return sum(len(processor.encode(text, out_type=str)) for text in texts)
    return sum(len(text.split()) for text in texts)


def main():
    arguments = parse_arguments()
    if arguments.worker:
        worker(arguments)
        return
    os.makedirs(arguments.workdir, exist_ok=True)
    sentences = sentences_of(arguments)
    references = read_lines(os.path.join(arguments.data_dir, arguments.reference),
                            arguments.max_sentences)
    if len(references) != len(sentences):
        raise SystemExit(f"{len(sentences)} sentences but {len(references)} references")
    print(f"machine: {machine()}; commit {commit()}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    prepare_seconds, status = child("prepare", check=False)
    if status != 0:
        raise SystemExit(f"the export process failed (exit status {status}): nothing measured")
    decoding = read_json(workdir_path(arguments, DECODING_FILE))

    runs = []  # (label, worker name)
    if "translate" in arguments.runtimes:
        runs.append(("kerasnmt translate", "translate"))
    if "savedmodel" in arguments.runtimes:
        runs += [(f"kerasnmt SavedModel{', Keras int8' if weights == 'int8' else ''}"
                  f"{', shortlist' if shortlist else ''}, {order} order, {n} in flight",
                  f"savedmodel:{n}:{order}:{savedmodel_directory(weights, shortlist)}")
                 for weights in arguments.savedmodel_weights
                 for shortlist in shortlist_variants(arguments)
                 for order in arguments.savedmodel_orders
                 for n in arguments.savedmodel_concurrency]
    if "ctranslate2" in arguments.runtimes:
        runs += [(f"CTranslate2 {compute_type} {inter}x{intra}{', vmap' if vmap else ''}",
                  f"ctranslate2:{compute_type}:{inter}x{intra}" + (":vmap" if vmap else ""))
                 for compute_type in arguments.compute_types
                 for vmap in shortlist_variants(arguments)
                 for inter, intra in arguments.layouts]
    results, failed = [], []
    for label, name in runs:
        load_before = os.getloadavg()[0]
        print(f"== {label} (load average {load_before:.2f})", flush=True)
        stem = workdir_path(arguments, name.replace(":", "_"))
        if os.path.exists(stem + ".json"):
            os.remove(stem + ".json")  # a previous run's
        process_seconds, status = child(name, check=False)
        if status != 0:
            print(f"   FAILED: exit status {status}", flush=True)
            failed.append(f"{label} (exit status {status})")
            continue
        figures = read_json(stem + ".json")
        print(f"   {figures['software']}; load {figures['load_seconds']:.1f} s, warm-up pass "
              f"{figures['warmup_seconds']:.1f} s, timed passes "
              f"{', '.join(f'{seconds:.2f}' for seconds in figures['pass_seconds'])} s",
              flush=True)
        results.append({"label": label, "worker": name, "translations": read_lines(stem + ".txt"),
                        "process_seconds": process_seconds, "load_average_before": load_before,
                        **figures})

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from kerasnmt.evaluation import score_translations

    tokens_path = workdir_path(arguments, "ct2_float32")
    translate = next((r["translations"] for r in results if r["worker"] == "translate"), None)
    for result in results:
        texts = result["translations"]
        scores = score_translations(texts, references, language=arguments.target_language)
        result.update(
            target_tokens=count_tokens(texts, tokens_path),
            words=sum(len(text.split()) for text in texts),
            bleu=scores.bleu, bleu_tokenized_lc=scores.bleu_tokenized_lc, chrf=scores.chrf,
            bleu_signature=scores.bleu_signature,
            bleu_tokenized_lc_signature=scores.bleu_tokenized_lc_signature,
            same_as_translate=(None if translate is None else
                               sum(a == b for a, b in zip(texts, translate))),
        )
    baselines = {compute_type: next(
        (r for r in results if r["worker"].startswith(f"ctranslate2:{compute_type}:")
         and not r["worker"].endswith(":vmap")), None) for compute_type in COMPUTE_TYPES}

    def tokens_per_second(result):
        return result["target_tokens"] / result["seconds"]

    sampler = decoding["sampler"]
    print(f"\nmodel: {decoding['source']} ({decoding['parameters']:,} parameters); "
          f"{len(sentences)} sentences of {arguments.input}, batches of {arguments.batch_size}, "
          f"beam {sampler['beam_size']}, length penalty {sampler['length_penalty']} "
          f"(kerasnmt: {sampler['length_normalization']}); kerasnmt "
          f"compact_batch={sampler['compact_batch']} early_exit={sampler['early_exit']} "
          f"finished_hypotheses={sampler['finished_hypotheses']} "
          f"jit_compile={arguments.jit_compile}, {decoding['options']}")
    print("exports: " + ", ".join(f"{name} {seconds:.1f} s"
                                  for name, seconds in decoding["export_seconds"].items())
          + f" (the export process: {prepare_seconds:.0f} s)")
    print(f"machine: {machine()}; commit {commit()}; load average before each process: "
          + ", ".join(f"{r['load_average_before']:.2f}" for r in results))
    print("target tokens: SentencePiece pieces of each translation's text, encoded again with "
          "the target SentencePiece model (</s> not counted); words: split on whitespace\n")
    header = ["runtime", "sentences/s", "target tokens/s", "words/s", "x CT2 float32",
              "x CT2 int8", "BLEU", "BLEU tok lc", "chrF2", "target tokens",
              f"same as translate (of {len(sentences)})", "timed s (fastest)", "CPU s",
              "warm-up s", "load s", "first pass from start s", "peak memory GiB",
              *(f"{cost} x CT2 float32" for cost in FIXED_COSTS.values())]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" + "---:|" * (len(header) - 1))
    for r in results:
        ratios = [f"{tokens_per_second(r) / tokens_per_second(baseline):.2f}" if baseline
                  else "" for baseline in baselines.values()]
        cells = [r["label"], f"{len(sentences) / r['seconds']:.1f}",
                 f"{tokens_per_second(r):,.0f}", f"{r['words'] / r['seconds']:,.0f}",
                 *ratios, f"{r['bleu']:.2f}", f"{r['bleu_tokenized_lc']:.2f}", f"{r['chrf']:.2f}",
                 f"{r['target_tokens']:,}",
                 "" if r["same_as_translate"] is None else str(r["same_as_translate"]),
                 f"{r['seconds']:.2f}", f"{r['timed_cpu_seconds']:.1f}",
                 f"{r['warmup_seconds']:.1f}", f"{r['load_seconds']:.1f}",
                 f"{r['first_pass_seconds']:.1f}", f"{r['max_rss_gib']:.2f}",
                 *fixed_cost_ratios(r, baselines["float32"])]
        print("| " + " | ".join(cells) + " |")
    if results:
        print(f"\nBLEU: {results[0]['bleu_signature']}; BLEU tok lc: "
              f"{results[0]['bleu_tokenized_lc_signature']}")
    for compute_type, baseline in baselines.items():
        if baseline:
            print(f"x CT2 {compute_type}: target tokens/s over those of {baseline['label']}")
    if baselines["float32"]:
        print(f"{', '.join(FIXED_COSTS.values())} x CT2 float32: this run's over those of "
              f"{baselines['float32']['label']} (first pass from start: from the start of the "
              "process to the end of its warm-up pass, imports and loading included)")
    for label in failed:
        print(f"FAILED: {label}")
    write_json(workdir_path(arguments, "results.json"), {
        "machine": machine(), "commit": commit(), "decoding": decoding,
        "sentences": len(sentences),
        "results": [{k: v for k, v in r.items() if k != "translations"} for r in results],
        "failed": failed})
    print(f"translations and figures: {arguments.workdir}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
