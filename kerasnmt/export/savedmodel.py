"""Export a `Translator` as one SavedModel that translates raw text (TF Serving, Python).

The SavedModel is written with `keras.export.ExportArchive`, which TensorFlow's two
loaders read: `tf.saved_model.load` and the session loader of TF Serving and
`saved_model_cli`. Inside it:

It runs `kerasnmt.decoding.TranslateFunction`, the graph `Translator.translate` runs
for batch search:

1. the input strings are made valid UTF-8 (invalid bytes become U+FFFD), tokenized and
   looked up by the model's own `TranslationPreprocessor` (string ops, outside XLA), and
   each source is cut to its first `maximum_source_length` tokens; a sentence with no
   token (empty or whitespace only) translates to the empty string with score 0;
2. each sentence's token ids are padded to the smallest source width of
   `source_length_buckets` that holds it (by default 8, 16, 32, 64, ...: see
   `kerasnmt.decoding.widths`), and the sentences of each width, longest
   first, to the smallest of `batch_size_buckets` that holds them (more go through in
   chunks of the largest), so the numeric decoding sees a few shapes only, and a long
   sentence does not widen the decoding of the short ones of its request;
3. `Translator.decode` runs the encoder and the `BeamSampler` compiled by XLA
   (`jit_compile=True`), one function traced per source width, compiled once per
   (batch bucket, width) and then reused; the decodings of the widths of a request run
   concurrently. With `BeamSampler(compact_batch=True)` each result is that of its
   sentence decoded alone; without it (OpenNMT-tf's batch search, whose n-best lists
   depend on the batch), the sentences of one width are decoded as one batch. Attention
   is recorded only for `with_alignments` or `replace_unknown_target` (or a coverage
   penalty);
4. the ids are turned back into text by the preprocessor's target tokenizer.

The vocabularies and the SentencePiece model are constants of the graph
(`saved_model.pb`), so the directory is self-contained: copy it anywhere. Loading it
needs TensorFlow only; a model that tokenizes with SentencePiece also needs the
SentencePiece op of TensorFlow Text (`import tensorflow_text`, which stock TF Serving
links). `assets.extra/tf_serving_warmup_requests` holds a request of every compiled shape,
which TF Serving runs when it loads the model (`kerasnmt.export.serving_warmup`).

Signatures:

- `serving_default`: `source` string `[None]` -> `translation` string `[None]`,
  `score` float32 `[None]` (the best hypothesis and its penalized score), and
  `unknown_source_tokens` int32 `[None]` (how many of the sentence's translated tokens,
  after the cut to `maximum_source_length`, the source vocabulary lacks: each was read as
  `<unk>`; always 0 with a byte-fallback SentencePiece vocabulary);
- `n_best`: `source` -> `translations` string `[None, n]`, `scores` and `log_probs`
  float32 `[None, n]` (best first, `n = sampler.n_best`), `unknown_source_tokens` as
  above, and with
  `with_alignments=True`, `alignments` float32 `[None, n, target_length, source_length]`
  (the last decoder layer's first attention head: one row per target token, `</s>`
  excluded, over the truncated source tokens; zeros on padding).

A `source` that is not 1-D (a 2-D batch, a scalar) is an `InvalidArgumentError` raised by
the graph, whichever loader runs it.

Examples:
    >>> import tempfile
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> from kerasnmt.models import Translator
    >>> translator = Translator(
    ...     TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
    ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
    >>> path = export_translator(translator, os.path.join(tempfile.mkdtemp(), "1"),
    ...                          maximum_source_length=8, batch_size_buckets=(2,),
    ...                          jit_compile=False, warmup=False)
    >>> serving = tf.saved_model.load(path).signatures[SERVING_SIGNATURE]
    >>> sorted(serving(source=tf.constant(["a b", "b"])))
    ['score', 'translation', 'unknown_source_tokens']
"""

import os

import keras
import tensorflow as tf

from kerasnmt.decoding.precision import float32_translator
from kerasnmt.decoding.translate_function import TranslateFunction
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
    check_buckets,
    check_maximum_source_length,
    source_width_buckets,
)
from kerasnmt.decoding import BeamSampler
from kerasnmt.export.directories import write_atomically
from kerasnmt.export.serving_warmup import warmup_requests, write_warmup_file

SERVING_SIGNATURE = "serving_default"
N_BEST_SIGNATURE = "n_best"
DEFAULT_BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
# `kerasnmt export --quantization` of a SavedModel (`quantize_dense_layers`).
SAVEDMODEL_QUANTIZATIONS = ("int8",)
_EXECUTION_FUNCTIONS = ("train_function", "test_function", "predict_function")


def quantize_dense_layers(translator, mode="int8"):
    """Quantizes the `Dense` layers of `translator` (attention projections, feed-forward)
    in place with Keras' own `keras.Model.quantize(mode)`; its embeddings stay float.
    What `kerasnmt export --quantization int8` exports.

    `translator.quantize("int8")` quantizes the `Embedding` layers as well: on the
    25-minute Multi30k model (shared embeddings, so the embedding matrix is also the
    output projection) that cost 7.9 BLEU, where the `Dense` layers alone changed BLEU
    by at most 0.1 and decoded about 5% faster (2-9%: `bench/decode_speed.py --quantize`, 2
    cores with AVX-512, 2026-11-26; no faster on a CPU without AVX-512, 2026-11-28).
    """
    translator.quantize(mode, filters=lambda layer: isinstance(layer, keras.layers.Dense))


def export_translator(
    translator,
    path,
    sampler=None,
    maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
    source_length_buckets=None,
    batch_size_buckets=DEFAULT_BATCH_SIZE_BUCKETS,
    with_alignments=False,
    replace_unknown_target=False,
    length_ratio=DEFAULT_LENGTH_RATIO,
    length_offset=DEFAULT_LENGTH_OFFSET,
    jit_compile=True,
    shortlist=None,
    warmup=True,
):
    """Writes `translator` as a SavedModel at `path`, atomically (see the module doc).

    The SavedModel is written to a temporary directory next to `path` and renamed into
    place; an existing `path` is replaced only once the new one is complete, so a failure
    at any point leaves the previous export as it was (and no temporary directory).

    The SavedModel decodes in float32 whatever `translator`'s dtype policy: a model
    trained in mixed precision is exported from its float32 copy
    (`kerasnmt.decoding.precision`).

    Args:
        translator: a `kerasnmt.Translator`.
        path: the SavedModel directory to write (for TF Serving, a version number under
            the model's base path, e.g. `saved_models/ende/1`).
        sampler: the `BeamSampler` whose decoding options the SavedModel keeps (beam
            size, penalties, sampling, `n_best`, maximum length); default
            `BeamSampler()`.
        maximum_source_length: sources are cut to their first this many tokens.
        source_length_buckets: the source widths the decoding is compiled for, increasing,
            the last equal to `maximum_source_length`; default
            `kerasnmt.decoding.widths.source_width_buckets(maximum_source_length)`.
        batch_size_buckets: the batch sizes it is compiled for; larger batches are
            decoded in chunks of the largest.
        with_alignments: add `alignments` to the `n_best` signature.
        replace_unknown_target: replace each unknown target token by the source token it
            attends to most (as `Translator.translate(replace_unknown_target=True)`).
        length_ratio: see `Translator.decode`.
        length_offset: see `Translator.decode`.
        jit_compile: compile the decoding with XLA.
        shortlist: a `kerasnmt.data.LexicalShortlist` (kept in the SavedModel as
            constants): each chunk of sentences is decoded over its shortlist, as
            `Translator.translate(shortlist=...)` does a batch.
        warmup: write TF Serving's warm-up file, a request of every (batch bucket, source
            width) shape (`kerasnmt.export.serving_warmup`), so the decodings compile at load.

    Returns:
        `path`.
    """
    translator = float32_translator(translator)
    sampler = BeamSampler() if sampler is None else sampler
    check_maximum_source_length(maximum_source_length)
    if source_length_buckets is None:
        source_length_buckets = source_width_buckets(maximum_source_length)
    source_length_buckets = check_buckets("source_length_buckets", source_length_buckets)
    if source_length_buckets[-1] != maximum_source_length:
        raise ValueError(
            f"the last of source_length_buckets ({source_length_buckets[-1]}) must be "
            f"maximum_source_length ({maximum_source_length})"
        )
    batch_size_buckets = check_buckets("batch_size_buckets", batch_size_buckets)
    requests = warmup_requests(
        translator.preprocessor, maximum_source_length, source_length_buckets,
        batch_size_buckets, [SERVING_SIGNATURE, N_BEST_SIGNATURE],
    ) if warmup else []
    function = TranslateFunction(
        translator, sampler, maximum_source_length, source_length_buckets,
        batch_size_buckets, length_ratio, length_offset, replace_unknown_target, jit_compile,
        shortlist, alignment=with_alignments, constant_weights=True,
    )
    archive = keras.export.ExportArchive()
    # The preprocessor for its lookup tables and SentencePiece resources. Not the
    # translator: the archive keeps the variables its endpoints use by itself, and
    # tracking the model would store every weight twice (its Keras variable and the
    # TensorFlow variable inside), plus its metric variables.
    archive.track(translator.preprocessor)
    source_spec = tf.TensorSpec([None], tf.string, name="source")
    endpoints = {
        SERVING_SIGNATURE: function.serving_default,
        N_BEST_SIGNATURE: lambda source: function.n_best(source, with_alignments),
    }
    for name, endpoint in endpoints.items():
        # Traced once here: the archive traces its endpoints twice (once to list their
        # variables, once more inside tf.saved_model.save, another tracing context), and
        # each of its traces only calls this graph (a tiny model's export: 11.4 -> 7.7 s).
        traced = tf.function(endpoint, autograph=False).get_concrete_function(source_spec)
        archive.add_endpoint(name, _calling(traced), [source_spec])
    # Keras drops a model's train/test/predict functions while SavedModel lists its
    # children and may not put them back (when listing fails and is skipped): an export
    # from a callback would then break the `fit` that runs it.
    functions = {name: getattr(translator, name, None) for name in _EXECUTION_FUNCTIONS}
    try:
        def write(directory):
            archive.write_out(directory, verbose=False)
            if requests:
                write_warmup_file(directory, requests)

        write_atomically(write, os.fspath(path))
    finally:
        for name, function in functions.items():
            setattr(translator, name, function)
    return path


def _calling(traced):
    """A function of `source` that calls the traced graph `traced`."""
    return lambda source: traced(source)


__all__ = [
    "N_BEST_SIGNATURE",
    "SERVING_SIGNATURE",
    "export_translator",
]
