"""Export a `Translator` as one SavedModel that translates raw text (TF Serving, Python).

The SavedModel is written with `keras.export.ExportArchive`, which TensorFlow's two
loaders read: `tf.saved_model.load` and the session loader of TF Serving and
`saved_model_cli`. Inside it:

1. the input strings are made valid UTF-8 (invalid bytes become U+FFFD), tokenized and
   looked up by the model's own `TranslationPreprocessor` (string ops, outside XLA), and
   each source is cut to its first `maximum_source_length` tokens; a sentence with no
   token (empty or whitespace only) translates to the empty string with score 0;
2. each sentence's token ids are padded to the smallest source width of
   `source_length_buckets` that holds it, and the sentences of each width, longest
   first, to the smallest of `batch_size_buckets` that holds them (more go through in
   chunks of the largest), so the numeric decoding sees a few shapes only, and a long
   sentence does not widen the decoding of the short ones of its request;
3. `Translator.decode` runs the encoder and the `BeamSampler` compiled by XLA
   (`jit_compile=True`), one function traced per source width, compiled once per
   (batch bucket, width) and then reused; the decodings of the widths of a request run
   concurrently. With `BeamSampler(compact_batch=True)` each result is that of its
   sentence decoded alone; without it (OpenNMT-tf's batch search, whose n-best lists
   depend on the batch), the sentences of one width are decoded as one batch;
4. the ids are turned back into text by the preprocessor (`detokenize_target`).

The vocabularies and the SentencePiece model are constants of the graph
(`saved_model.pb`), so the directory is self-contained: copy it anywhere. Loading it
needs TensorFlow only; a model that tokenizes with SentencePiece also needs the
SentencePiece op of TensorFlow Text (`import tensorflow_text`, which stock TF Serving
links).

Signatures:

- `serving_default`: `source` string `[None]` -> `translation` string `[None]`,
  `score` float32 `[None]` (the best hypothesis and its penalized score);
- `n_best`: `source` -> `translations` string `[None, n]`, `scores` and `log_probs`
  float32 `[None, n]` (best first, `n = sampler.n_best`), and with
  `with_alignments=True`, `alignments` float32 `[None, n, target_length, source_length]`
  (the last decoder layer's first attention head: one row per target token, `</s>`
  excluded, over the truncated source tokens; zeros on padding).
"""

import os
import shutil
import tempfile

import keras
import tensorflow as tf

from kerasnmt.data.vocabulary import PADDING_ID, START_OF_SENTENCE_ID, UNKNOWN_TOKEN
from kerasnmt.layers import BeamSampler
from kerasnmt.layers.preprocessing_layer import drop_padding_tokens

SERVING_SIGNATURE = "serving_default"
N_BEST_SIGNATURE = "n_best"
DEFAULT_MAXIMUM_SOURCE_LENGTH = 256
DEFAULT_BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
SMALLEST_SOURCE_BUCKET = 8
_EXECUTION_FUNCTIONS = ("train_function", "test_function", "predict_function")


def default_source_length_buckets(maximum_source_length):
    """Powers of two from 8 below `maximum_source_length`, then `maximum_source_length`.

    Examples:
        >>> default_source_length_buckets(100)
        [8, 16, 32, 64, 100]
    """
    buckets, width = [], SMALLEST_SOURCE_BUCKET
    while width < maximum_source_length:
        buckets.append(width)
        width *= 2
    return buckets + [maximum_source_length]


def _check_buckets(name, buckets):
    buckets = [int(value) for value in buckets]
    if not buckets or buckets != sorted(set(buckets)) or buckets[0] < 1:
        raise ValueError(f"{name} must be increasing positive integers, got {buckets}")
    return buckets


def _maximum(values):
    """The largest of integer `values`, 0 when there is none."""
    return tf.reduce_max(tf.concat([tf.reshape(values, [-1]), [0]], 0))


def _bucket_index(value, buckets):
    """Index of the smallest bucket >= value, for each of `value` (a scalar or a vector,
    values <= buckets[-1])."""
    value = tf.convert_to_tensor(value, tf.int32)
    indices = tf.searchsorted(tf.constant(buckets, tf.int32), tf.reshape(value, [-1]))
    return tf.reshape(indices, tf.shape(value))


class _TranslateFunction:
    """The graph of the signatures: text -> padded ids -> XLA decode -> text."""

    def __init__(self, translator, sampler, maximum_source_length, source_length_buckets,
                 batch_size_buckets, length_ratio, length_offset, replace_unknown_target,
                 jit_compile, shortlist):
        self.translator = translator
        self.preprocessor = translator.preprocessor
        self.sampler = sampler
        self.maximum_source_length = maximum_source_length
        self.source_length_buckets = source_length_buckets
        self.batch_size_buckets = batch_size_buckets
        self.replace_unknown_target = replace_unknown_target
        self.decode = tf.function(
            lambda ids, length, shortlist_ids: translator.decode(
                ids, length, sampler, length_ratio=length_ratio, length_offset=length_offset,
                shortlist_ids=shortlist_ids,
            ),
            jit_compile=jit_compile,
            autograph=False,
        )
        self.shortlist = shortlist

    def hypotheses(self, source):
        """`[B]` strings -> the decode outputs (`[B, n, ...]`), the source lengths kept
        (`[B]`) and, with `replace_unknown_target`, the source tokens (`[B, S]`)."""
        source = tf.strings.unicode_transcode(
            source, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        tokens = drop_padding_tokens(self.preprocessor.source_tokenizer(source))
        tokens = tokens[:, : self.maximum_source_length]
        features = self.preprocessor.source_lookup(tokens)
        ids = tf.cast(features["ids"], tf.int32)
        length = tf.cast(features["length"], tf.int32)
        outputs = self._decode_by_width(ids, length)
        # A sentence without tokens translates to nothing, with score 0 (the model has
        # nothing to attend to: what it would produce depends on the padding around it).
        empty = tf.equal(length, 0)
        outputs = {
            key: tf.where(
                tf.reshape(empty, tf.concat([[-1], tf.ones([tf.rank(value) - 1], tf.int32)], 0)),
                tf.zeros_like(value),
                value,
            )
            for key, value in outputs.items()
        }
        return outputs, length, tokens.to_tensor("")

    def _decode_by_width(self, ids, length):
        """Decodes each sentence at the smallest source width that holds it: the sentences
        of each width bucket are decoded together (longest first), the buckets' decodings
        run concurrently, and the outputs come back in input order, their steps and source
        positions padded to the widest bucket's. A long sentence then no longer widens the
        caches and the decoding length of the short ones of its request."""
        buckets = self.source_length_buckets
        bucket = _bucket_index(tf.maximum(length, 1), buckets)
        rows_by_width = []
        for index, width in enumerate(buckets):
            rows = tf.reshape(tf.where(tf.equal(bucket, index)), [-1])
            # Longest first: the rows padding a batch bucket repeat the shortest.
            order = tf.argsort(tf.gather(length, rows), direction="DESCENDING", stable=True)
            rows_by_width.append((tf.cast(tf.gather(rows, order), tf.int32), width))

        def decoded(rows, width):
            count = tf.size(rows)
            return tf.cond(
                count > 0,
                lambda: self._decode_width(tf.gather(ids, rows)[:, :width],
                                           tf.gather(length, rows), count, width),
                self._no_outputs,
            )

        groups = [decoded(rows, width) for rows, width in rows_by_width]
        steps = _maximum(tf.stack([tf.shape(group["ids"])[2] for group in groups]))
        width = _maximum(tf.stack([tf.shape(group["alignment"])[3] for group in groups]))

        def padded(key, tensor):  # steps (and source positions) to the widest group's
            padding = [[0, 0], [0, 0]]
            if key in ("ids", "alignment"):
                padding.append([0, steps - tf.shape(tensor)[2]])
            if key == "alignment":
                padding.append([0, width - tf.shape(tensor)[3]])
            return tf.pad(tensor, padding)

        order = tf.concat([rows for rows, _ in rows_by_width], 0)
        input_order = tf.math.invert_permutation(order)
        return {
            key: tf.gather(tf.concat([padded(key, group[key]) for group in groups], 0),
                           input_order)
            for key in groups[0]
        }

    def _no_outputs(self):
        """The decode outputs of no sentence (a width bucket no sentence falls in)."""
        n_best = self.sampler.n_best
        return {
            "ids": tf.zeros([0, n_best, 0], tf.int32),
            "lengths": tf.zeros([0, n_best], tf.int32),
            "log_probs": tf.zeros([0, n_best]),
            "scores": tf.zeros([0, n_best]),
            "alignment": tf.zeros([0, n_best, 0, 0]),
        }

    def _decode_width(self, ids, length, batch_size, width):
        """Decodes `[B, <=width]` ids (`B >= 1`) padded to `width`, in chunks of a batch
        bucket."""
        ids = tf.ensure_shape(tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]]),
                              [None, width])
        # The smallest batch bucket that holds the batch, else chunks of the largest.
        fitting = tf.minimum(batch_size, self.batch_size_buckets[-1])
        chunk = tf.gather(self.batch_size_buckets,
                          _bucket_index(fitting, self.batch_size_buckets))
        num_chunks = (batch_size + chunk - 1) // chunk
        # Padding rows repeat the last sentence (the shortest), so they finish with it and
        # never lengthen the decoding loop.
        rows = tf.minimum(tf.range(num_chunks * chunk), batch_size - 1)
        chunked_ids = tf.reshape(tf.gather(ids, rows), [num_chunks, chunk, width])
        chunked_length = tf.reshape(tf.gather(length, rows), [num_chunks, chunk])
        outputs = tf.map_fn(
            lambda inputs: self._decode_chunk(*inputs),
            (chunked_ids, chunked_length),
            fn_output_signature=self._output_signature(width),
            parallel_iterations=1,
        )

        def unchunk(tensor):
            shape = tf.concat([[num_chunks * chunk], tf.shape(tensor)[2:]], 0)
            return tf.reshape(tensor, shape)[:batch_size]

        return {key: unchunk(value) for key, value in outputs.items()}

    def _decode_chunk(self, ids, length):
        """Decodes a chunk, over its shortlist when there is one and it fits, else over the
        whole vocabulary (as `Translator.translate` a batch)."""
        if self.shortlist is None:
            return self.decode(ids, length, None)
        shortlist_ids, fits = self.shortlist.padded_target_ids(ids)
        return tf.cond(fits, lambda: self.decode(ids, length, shortlist_ids),
                       lambda: self.decode(ids, length, None))

    def _output_signature(self, width):
        scores = tf.TensorSpec([None, None], tf.float32)
        return {
            "ids": tf.TensorSpec([None, None, None], tf.int32),
            "lengths": tf.TensorSpec([None, None], tf.int32),
            "log_probs": scores,
            "scores": scores,
            "alignment": tf.TensorSpec([None, None, None, width], tf.float32),
        }

    def texts_and_alignments(self, outputs, source_length, source_tokens, with_alignments):
        """The decoded hypotheses `[B, n, T]` -> `[B, n]` strings and, when asked, the
        attention of each target token (`[B, n, T', S]`, rows of `<blank>`/`<s>` dropped
        as the text drops them)."""
        ids, alignment = outputs["ids"], outputs["alignment"]
        shape = tf.shape(ids)
        rows = shape[0] * shape[1]
        flat_ids = tf.reshape(ids, [rows, shape[2]])
        steps = tf.sequence_mask(tf.reshape(outputs["lengths"], [-1]), shape[2])
        keep = steps & (flat_ids != PADDING_ID) & (flat_ids != START_OF_SENTENCE_ID)
        flat_alignment = tf.reshape(alignment, [rows, shape[2], tf.shape(alignment)[3]])
        if self.replace_unknown_target:
            texts = self._texts_with_replaced_unknowns(
                flat_ids, keep, flat_alignment, source_length, source_tokens, shape[1]
            )
        else:
            texts = self.preprocessor.detokenize_target(flat_ids)
        texts = tf.reshape(texts, shape[:2])
        if not with_alignments:
            return texts, None
        kept = tf.ragged.boolean_mask(flat_alignment, keep).to_tensor()
        kept = kept[:, :, : _maximum(source_length)]
        kept_shape = tf.shape(kept)
        return texts, tf.reshape(kept, tf.concat([shape[:2], kept_shape[1:]], 0))

    def _texts_with_replaced_unknowns(self, ids, keep, alignment, source_length,
                                      source_tokens, n_best):
        """Each unknown target token becomes the source token it attends to most."""
        vocabulary = list(self.preprocessor.target_vocabulary) + [UNKNOWN_TOKEN]
        tokens = tf.gather(tf.constant(vocabulary), tf.minimum(ids, len(vocabulary) - 1))
        attended = tf.argmax(alignment, axis=-1, output_type=tf.int32)  # [rows, T]
        sources = tf.repeat(source_tokens, n_best, axis=0)
        lengths = tf.repeat(source_length, n_best, axis=0)
        replaced = tf.gather(sources, tf.minimum(attended, tf.shape(sources)[1] - 1),
                             batch_dims=1)
        unknown = (ids == self.translator.target_vocabulary_size - 1) & (
            lengths[:, tf.newaxis] > 0)
        tokens = tf.where(unknown, replaced, tokens)
        return self.preprocessor.target_tokenizer.detokenize(
            tf.ragged.boolean_mask(tokens, keep)
        )

    def serving_default(self, source):
        outputs, source_length, source_tokens = self.hypotheses(source)
        best = {key: value[:, :1] for key, value in outputs.items()}
        texts, _ = self.texts_and_alignments(best, source_length, source_tokens, False)
        return {"translation": texts[:, 0], "score": outputs["scores"][:, 0]}

    def n_best(self, source, with_alignments):
        outputs, source_length, source_tokens = self.hypotheses(source)
        texts, alignments = self.texts_and_alignments(
            outputs, source_length, source_tokens, with_alignments
        )
        result = {
            "translations": texts,
            "scores": outputs["scores"],
            "log_probs": outputs["log_probs"],
        }
        if with_alignments:
            result["alignments"] = alignments
        return result


def export_translator(
    translator,
    path,
    sampler=None,
    maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
    source_length_buckets=None,
    batch_size_buckets=DEFAULT_BATCH_SIZE_BUCKETS,
    with_alignments=False,
    replace_unknown_target=False,
    length_ratio=2.0,
    length_offset=10,
    jit_compile=True,
    shortlist=None,
):
    """Writes `translator` as a SavedModel at `path`, atomically (see the module doc).

    The SavedModel is written to a temporary directory next to `path` and renamed into
    place; an existing `path` is replaced only once the new one is complete, so a failure
    at any point leaves the previous export as it was (and no temporary directory).

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
            `default_source_length_buckets(maximum_source_length)`.
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

    Returns:
        `path`.
    """
    sampler = BeamSampler() if sampler is None else sampler
    if (
        isinstance(maximum_source_length, bool)
        or not isinstance(maximum_source_length, int)
        or maximum_source_length < 1
    ):
        raise ValueError(
            f"maximum_source_length must be a positive integer, got {maximum_source_length!r}"
        )
    if source_length_buckets is None:
        source_length_buckets = default_source_length_buckets(maximum_source_length)
    source_length_buckets = _check_buckets("source_length_buckets", source_length_buckets)
    if source_length_buckets[-1] != maximum_source_length:
        raise ValueError(
            f"the last of source_length_buckets ({source_length_buckets[-1]}) must be "
            f"maximum_source_length ({maximum_source_length})"
        )
    batch_size_buckets = _check_buckets("batch_size_buckets", batch_size_buckets)
    function = _TranslateFunction(
        translator, sampler, maximum_source_length, source_length_buckets,
        batch_size_buckets, length_ratio, length_offset, replace_unknown_target, jit_compile,
        shortlist,
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
        _write_atomically(archive, os.fspath(path))
    finally:
        for name, function in functions.items():
            setattr(translator, name, function)
    return path


def _calling(traced):
    """A function of `source` that calls the traced graph `traced`."""
    return lambda source: traced(source)


def _write_atomically(archive, path):
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        archive.write_out(temporary, verbose=False)
        if os.path.exists(path):
            previous = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-", dir=parent)
            os.rmdir(previous)
            os.rename(path, previous)
            try:
                os.rename(temporary, path)
            except BaseException:
                os.rename(previous, path)
                raise
            shutil.rmtree(previous, ignore_errors=True)
        else:
            os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def next_version_path(base_path):
    """`base_path/N` for the next TF Serving version number N (1 if there is none).

    Examples:
        >>> import tempfile
        >>> base = tempfile.mkdtemp()
        >>> os.path.basename(next_version_path(base))
        '1'
    """
    versions = [int(name) for name in os.listdir(base_path) if name.isdigit()] if (
        os.path.isdir(base_path)
    ) else []
    return os.path.join(base_path, str(max(versions, default=0) + 1))


__all__ = [
    "N_BEST_SIGNATURE",
    "SERVING_SIGNATURE",
    "default_source_length_buckets",
    "export_translator",
    "next_version_path",
]
