"""`Translator.translate`: raw text in, detokenized text out, in input order, through the
SavedModel's own pieces.

Batch search runs `TranslateFunction.details`, the graph the SavedModel's signatures run,
with one batch size (`batch_size`): the same request gives the same translations through
both. With `BeamSampler(compact_batch=True)` each result is that of its sentence decoded
alone, whatever the batch; the sentences of each source width then stream through
decoding slots instead (`decoding_streams`), from the same source features, decode
function, shortlist rule and text rule: longest first (`decode` with `num_slots`; up to 16
times the slots a call, padded to the slots times a power of two), a slot takes the next
sentence as soon as its own is done, so no step waits for the longest translation of a
batch, and a stream's last sentences finish in a quarter of the slots. The streams go
through `decoding_threads` concurrent calls of `batch_size / decoding_threads` slots each
(`batch_size` sentences decoded at once in all): one decoding step uses little more than
one core, two steps at once keep two busy.
"""

import concurrent.futures
import json

import numpy as np
import tensorflow as tf

from kerasnmt.decoding.decode_call import decode_chunk, decode_function
from kerasnmt.decoding.source import source_features
from kerasnmt.decoding.streams import decoding_streams, pad_rows
from kerasnmt.decoding.text import hypothesis_texts
from kerasnmt.decoding.translate_function import TranslateFunction
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
    check_maximum_source_length,
    source_width_buckets,
    width_of,
)
from kerasnmt.decoding.beam_sampler import BeamSampler

# Sentences translated together when a caller does not say (`infer.batch_size`'s default).
TRANSLATION_BATCH_SIZE = 32
# A call decodes the sentences of at most this many batches at once (bounds the memory of
# the outputs; batch search groups sentences within a block).
BLOCK_BATCHES = 64
_SOURCE_SPEC = tf.TensorSpec([None], tf.string)
_FEATURES_SPEC = {  # what source_features returns
    "ids": tf.TensorSpec([None, None], tf.int32),
    "length": tf.TensorSpec([None], tf.int32),
    "tokens": tf.TensorSpec([None, None], tf.string),
}


def translate(translator, sentences, sampler=None, batch_size=TRANSLATION_BATCH_SIZE,
              return_details=False, replace_unknown_target=False, jit_compile=True, shortlist=None,
              decoding_threads=2, maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
              length_ratio=DEFAULT_LENGTH_RATIO, length_offset=DEFAULT_LENGTH_OFFSET):
    """Translates `sentences` (a 1-D string array) with `translator`; see
    `Translator.translate` for the arguments and results.

    Examples:
        >>> from kerasnmt import Translator, layers
        >>> translator = Translator(
        ...     layers.TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> sampler = BeamSampler(beam_size=2, max_length=4)
        >>> results = translate(translator, np.array(["a b", ""], object), sampler,
        ...                     jit_compile=False, return_details=True)
        >>> [len(n_best) for n_best in results], results[1][0]["text"], results[1][0]["score"]
        ([1, 1], '', 0.0)
    """
    sampler = BeamSampler() if sampler is None else sampler
    if isinstance(decoding_threads, bool) or not isinstance(decoding_threads, int) or (
        decoding_threads < 1
    ):
        raise ValueError(f"Translator.translate: decoding_threads must be an int >= 1, got "
                         f"{decoding_threads!r}")
    check_maximum_source_length(maximum_source_length)
    alignment = bool(return_details or replace_unknown_target)
    widths = source_width_buckets(maximum_source_length)
    options = (json.dumps(_sampler_config(sampler), sort_keys=True, default=str),
               bool(jit_compile), length_ratio, length_offset, alignment)
    block = BLOCK_BATCHES * batch_size
    features_of = _cached(translator, ("source", maximum_source_length), lambda: tf.function(
        lambda source: source_features(translator.preprocessor, source, maximum_source_length),
        input_signature=[_SOURCE_SPEC], autograph=False))

    def shared_decode(records_alignment):
        """The one decode function of these options: each `[chunk, width]` decode is
        traced (and compiled) once, whatever request or set of widths first needs it."""
        return _cached(translator, ("decode", options, records_alignment),
                       lambda: decode_function(translator, sampler, jit_compile, length_ratio,
                                               length_offset, records_alignment))

    if not sampler.compact_batch:
        decode = shared_decode(TranslateFunction.records_alignment(
            sampler, alignment, replace_unknown_target))
        results = []
        for start in range(0, len(sentences), block):
            features = features_of(sentences[start:start + block])
            # The widths up to the one of the longest source: the graph traces a decode
            # for each of its widths, and a short request need not trace the wide ones.
            # Each sentence still gets the SavedModel's width.
            longest = int(np.max(features["length"].numpy(), initial=0))
            used = widths[: widths.index(width_of(longest, widths)) + 1]
            function = _cached(
                translator, ("batch", options, batch_size, maximum_source_length, tuple(used),
                             bool(replace_unknown_target), shortlist),
                lambda: tf.function(TranslateFunction(
                    translator, sampler, maximum_source_length, used, [batch_size],
                    length_ratio, length_offset, replace_unknown_target, jit_compile,
                    shortlist, alignment, decode,
                ).details, input_signature=[_FEATURES_SPEC], autograph=False))
            results += _python_results(function(features), return_details)
        return results
    decode = shared_decode(alignment)
    num_slots = max(1, batch_size // decoding_threads)

    def translate_stream(stream):
        count = len(stream["length"])
        ids, length = pad_rows(stream["ids"], stream["length"], stream["size"], stream["width"])
        outputs = decode_chunk(decode, tf.constant(ids), tf.constant(length), shortlist,
                               num_slots=num_slots, num_examples=tf.constant(count))
        outputs = {key: value[:count] for key, value in outputs.items()}
        details = hypothesis_texts(
            translator.preprocessor, outputs, tf.constant(stream["length"]),
            tf.constant(stream["tokens"]) if replace_unknown_target else None, alignment,
        )
        details.update(scores=outputs["scores"], log_probs=outputs["log_probs"],
                       source_length=stream["length"])
        return stream["index"], _python_results(details, return_details)

    results = [None] * len(sentences)
    for start in range(0, len(sentences), block):
        features = {key: value.numpy()
                    for key, value in features_of(sentences[start:start + block]).items()}
        features["index"] = start + np.arange(len(features["length"]))
        empty = features["length"] == 0
        for index in features["index"][empty]:  # nothing to translate: "" with score 0
            results[index] = _python_results(_empty_details(sampler.n_best), return_details)[0]
        streams = decoding_streams([{key: value[~empty] for key, value in features.items()}],
                                   num_slots, widths, shortlist=shortlist)
        if decoding_threads == 1 or len(streams) <= 1:
            decoded = map(translate_stream, streams)
        else:
            with concurrent.futures.ThreadPoolExecutor(decoding_threads) as threads:
                decoded = list(threads.map(translate_stream, streams))
        for indices, stream_results in decoded:
            for index, result in zip(indices.tolist(), stream_results):
                results[index] = result
    return results


def _sampler_config(sampler):
    config = sampler.get_config()
    config.pop("name", None)
    return config


# The translator's attribute that holds its traced translation functions.
_FUNCTIONS = "_translate_functions"


def forget_translate_functions(translator):
    """Drops the functions `translate` traced for `translator`: they capture its weights as
    they were (`keras.Model.quantize` replaces the float kernels), so the next call traces
    anew."""
    translator.__dict__.pop(_FUNCTIONS, None)


def _cached(translator, key, build):
    """The function `build()` made for `key`, kept on the translator: each traces (and
    compiles) once per shape, for every later call."""
    functions = translator.__dict__.get(_FUNCTIONS)
    if functions is None:
        functions = {}
        object.__setattr__(translator, _FUNCTIONS, functions)
    if key not in functions:
        functions[key] = build()
    return functions[key]


def _empty_details(n_best):
    """`details` of one sentence without tokens."""
    return {
        "texts": np.full([1, n_best], b"", object),
        "tokens": np.zeros([1, n_best, 0], object),
        "token_counts": np.zeros([1, n_best], np.int64),
        "scores": np.zeros([1, n_best], np.float32),
        "log_probs": np.zeros([1, n_best], np.float32),
        "alignments": np.zeros([1, n_best, 0, 0], np.float32),
        "source_length": np.zeros([1], np.int32),
    }


def _python_results(details, return_details):
    """`TranslateFunction.details`-like tensors -> one string per sentence or, with
    `return_details`, one list per sentence of n-best dicts."""
    details = {key: np.asarray(value) for key, value in details.items()}
    texts = details["texts"]
    if not return_details:
        return [row[0].decode("utf-8") for row in texts]
    results = []
    for i in range(texts.shape[0]):
        n_best = []
        for k in range(texts.shape[1]):
            count = int(details["token_counts"][i, k])
            hypothesis = {
                "text": texts[i, k].decode("utf-8"),
                "tokens": [token.decode("utf-8") for token in details["tokens"][i, k, :count]],
                "score": float(details["scores"][i, k]),
                "log_prob": float(details["log_probs"][i, k]),
            }
            if "alignments" in details:
                hypothesis["alignment"] = details["alignments"][
                    i, k, :count, : details["source_length"][i]]
            n_best.append(hypothesis)
        results.append(n_best)
    return results
