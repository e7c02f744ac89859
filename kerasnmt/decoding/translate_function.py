"""Text in, translations out, in one graph: what the SavedModel's signatures run and what
`Translator.translate` calls for batch search.

1. `source_features` of a 1-D batch (any other shape is refused): valid UTF-8, tokens,
   cut to `maximum_source_length`, ids;
2. each sentence padded to the smallest of `width_buckets` that holds it; the sentences of
   each width, longest first, padded to the smallest of `batch_size_buckets` that holds
   them (more go through in chunks of the largest; added rows repeat the shortest, so they
   never lengthen the decoding); the widths' decodings run concurrently, one traced
   `decode` per width (`decode_function`, over the chunk's shortlist when it fits; a chunk
   whose shortlist overflows is decoded over the whole vocabulary at the widest width, one
   decode all widths share);
3. a sentence of no token translates to `""` with score 0 (the model has nothing to
   attend to: what it would produce depends on the padding around it);
4. `hypothesis_texts`: ids to text, unknown tokens replaced, alignments.
"""

import numpy as np
import tensorflow as tf

from kerasnmt.decoding.decode_call import decode_chunk, decode_function
from kerasnmt.decoding.source import source_features, unknown_id_counts
from kerasnmt.decoding.text import hypothesis_texts, longest
from kerasnmt.decoding.widths import bucket_index, decoding_steps


class TranslateFunction:
    """The translation graph of one model and one set of decoding options.

    Args:
        translator: a `kerasnmt.Translator`.
        sampler: a `BeamSampler`.
        maximum_source_length: sources are cut to their first this many tokens.
        width_buckets: the source widths decoded (`source_width_buckets`), the last
            `maximum_source_length`.
        batch_size_buckets: the row counts decoded.
        length_ratio: `a` of the decoding length limit `floor(a * n) + b`
            (`kerasnmt.decoding.widths`).
        length_offset: `b` of that limit.
        replace_unknown_target: replace each unknown target token by the source token it
            attends to most.
        jit_compile: XLA-compile the decoding.
        shortlist: a `LexicalShortlist`, or None.
        alignment: record the attention of each target token (needed by alignments and
            unknown replacement; decoding is faster without).
        decode: the `decode_function` to call, made with these options and
            `self.alignment`'s value; when None, a new one. `translate` shares one between
            the functions it traces for different sets of widths, so that each
            `[chunk, width]` decode is traced and compiled once.
        constant_weights: when `decode` is None, compile the weights in as constants
            (`decode_function`): for an export, whose weights do not change.

    Examples:
        >>> from kerasnmt import BeamSampler, Translator, layers
        >>> translator = Translator(
        ...     layers.TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> function = TranslateFunction(
        ...     translator, BeamSampler(beam_size=2, max_length=6), 8, [8], [4], 2.0, 10,
        ...     replace_unknown_target=False, jit_compile=False, shortlist=None)
        >>> outputs = function.serving_default(tf.constant(["a b", " "]))
        >>> translations, scores = outputs["translation"], outputs["score"]
        >>> translations.shape, translations[1].numpy(), float(scores[1])
        (TensorShape([2]), b'', 0.0)
    """

    def __init__(self, translator, sampler, maximum_source_length, width_buckets,
                 batch_size_buckets, length_ratio, length_offset, replace_unknown_target,
                 jit_compile, shortlist, alignment=False, decode=None, constant_weights=False):
        self.preprocessor = translator.preprocessor
        self.sampler = sampler
        self.maximum_source_length = maximum_source_length
        self.width_buckets = list(width_buckets)
        self.batch_size_buckets = list(batch_size_buckets)
        self.replace_unknown_target = replace_unknown_target
        self.shortlist = shortlist
        self.length_ratio = length_ratio
        self.length_offset = length_offset
        # A length limit that does not grow with the source within the buffers (OpenNMT-tf's,
        # `length_ratio` 0): every width decodes `max_length` steps.
        self.steps_fixed = decoding_steps(
            1, sampler, length_ratio, length_offset) == sampler.max_length
        # The decode outputs "alignment" exactly when it records attention.
        self.alignment = self.records_alignment(sampler, alignment, replace_unknown_target)
        self.decode = decode or decode_function(translator, sampler, jit_compile, length_ratio,
                                                length_offset, self.alignment, constant_weights)

    @staticmethod
    def records_alignment(sampler, alignment, replace_unknown_target):
        """Whether the decode records attention: for alignments, unknown replacement and
        the coverage penalty."""
        return bool(alignment or replace_unknown_target or sampler.coverage_penalty)

    def hypotheses(self, source):
        """`[B]` strings -> the decode outputs (`[B, n, ...]`) and the source features;
        any other shape is an `InvalidArgumentError` when the graph runs."""
        features = source_features(self.preprocessor, _checked_batch(source),
                                   self.maximum_source_length)
        return self._decoded(features), features

    def _decoded(self, features):
        """The decode outputs of `source_features`, nothing for a sentence of no token."""
        length = features["length"]
        outputs = self._decode_by_width(features["ids"], length)
        empty = tf.equal(length, 0)
        return {
            key: tf.where(
                tf.reshape(empty, tf.concat([[-1], tf.ones([tf.rank(value) - 1], tf.int32)], 0)),
                tf.zeros_like(value),
                value,
            )
            for key, value in outputs.items()
        }

    def _texts(self, outputs, features, with_alignments):
        return hypothesis_texts(
            self.preprocessor, outputs, features["length"],
            features["tokens"] if self.replace_unknown_target else None, with_alignments,
        )

    def serving_default(self, source):
        outputs, features = self.hypotheses(source)
        best = {key: value[:, :1] for key, value in outputs.items()}
        texts = self._texts(best, features, False)["texts"]
        return {"translation": texts[:, 0], "score": outputs["scores"][:, 0],
                "unknown_source_tokens": unknown_id_counts(self.preprocessor, features["ids"])}

    def n_best(self, source, with_alignments):
        outputs, features = self.hypotheses(source)
        texts = self._texts(outputs, features, with_alignments)
        result = {
            "translations": texts["texts"],
            "scores": outputs["scores"],
            "log_probs": outputs["log_probs"],
            "unknown_source_tokens": unknown_id_counts(self.preprocessor, features["ids"]),
        }
        if with_alignments:
            result["alignments"] = texts["alignments"]
        return result

    def details(self, features):
        """Everything `Translator.translate` returns, as tensors (never a signature), from
        the `source_features` of the sentences (which `translate` has already computed):
        `texts`, `tokens`, `token_counts`, `scores`, `log_probs`, `source_length`, and
        `alignments` when the function records them."""
        outputs = self._decoded(features)
        result = self._texts(outputs, features, self.alignment)
        result.update(scores=outputs["scores"], log_probs=outputs["log_probs"],
                      source_length=features["length"])
        return result

    def _decode_by_width(self, ids, length):
        """Decodes each sentence at the smallest source width that holds it: the sentences
        of each width bucket together (longest first), the buckets' decodings concurrently;
        the outputs come back in input order, their steps and source positions padded to
        the widest bucket's."""
        buckets = self.width_buckets
        bucket = bucket_index(tf.maximum(length, 1), buckets)
        rows_by_width = []
        for index, width in enumerate(buckets):
            rows = tf.reshape(tf.where(tf.equal(bucket, index)), [-1])
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
        steps = longest(tf.stack([tf.shape(group["ids"])[2] for group in groups]))
        if self.alignment:
            width = longest(tf.stack([tf.shape(group["alignment"])[3] for group in groups]))

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
        outputs = {
            "ids": tf.zeros([0, n_best, 0], tf.int32),
            "lengths": tf.zeros([0, n_best], tf.int32),
            "log_probs": tf.zeros([0, n_best]),
            "scores": tf.zeros([0, n_best]),
        }
        if self.alignment:
            outputs["alignment"] = tf.zeros([0, n_best, 0, 0])
        return outputs

    def _decode_width(self, ids, length, batch_size, width):
        """Decodes `[B, <=width]` ids (`B >= 1`) padded to `width`, in chunks of a batch
        bucket."""
        ids = tf.ensure_shape(tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]]),
                              [None, width])
        if len(self.batch_size_buckets) == 1:
            # A static chunk (`translate`'s case): the decode is traced for [chunk, width],
            # which takes a third less time than for [None, width].
            chunk = self.batch_size_buckets[0]
        else:
            fitting = tf.minimum(batch_size, self.batch_size_buckets[-1])
            chunk = tf.gather(self.batch_size_buckets,
                              bucket_index(fitting, self.batch_size_buckets))
        num_chunks = (batch_size + chunk - 1) // chunk
        rows = tf.minimum(tf.range(num_chunks * chunk), batch_size - 1)
        chunked_ids = tf.reshape(tf.gather(ids, rows), [num_chunks, chunk, width])
        chunked_length = tf.reshape(tf.gather(length, rows), [num_chunks, chunk])

        def decoded_chunk(inputs):
            chunk_ids, chunk_length = inputs
            if self.steps_fixed:
                # Every width decodes the same steps: the width left out of the static
                # shape, one trace of the decode serves them all, and XLA still compiles
                # a program for each (an OpenNMT-tf model converted, 100 sentences from
                # process start: 18.3 s instead of 22.5 s, the same translations,
                # 2026-12-04). Otherwise that trace would hold a decode for each number
                # of steps (`Translator.decode`), more than the widths' own traces.
                chunk_ids = tf.compat.v1.placeholder_with_default(
                    chunk_ids, [chunk if isinstance(chunk, int) else None, None])
            return decode_chunk(
                self.decode, chunk_ids, chunk_length, self.shortlist,
                whole_vocabulary=lambda: self._decode_widest(chunk_ids, chunk_length, width),
            )

        outputs = tf.map_fn(
            decoded_chunk,
            (chunked_ids, chunked_length),
            fn_output_signature=self._output_signature(width),
            parallel_iterations=1,
        )

        def unchunk(tensor):
            shape = tf.concat([[num_chunks * chunk], tf.shape(tensor)[2:]], 0)
            return tf.reshape(tensor, shape)[:batch_size]

        return {key: unchunk(value) for key, value in outputs.items()}

    def _decode_widest(self, ids, length, width):
        """Decodes `[chunk, width]` ids over the whole vocabulary, padded to the widest
        width: the chunks of every width whose shortlist overflows share this one decode
        (a whole-vocabulary decode traced per width made the shortlist SavedModel of the
        2.3M-parameter Multi30k model 81 MB instead of 53, its export 258 s instead of 140
        and its server's memory after loading 8.8 GiB instead of 6.7). The limit is
        per sentence, so the padding changes no translation; the outputs are cut back to
        this width's steps and source positions."""
        widest = self.width_buckets[-1]
        outputs = self.decode(tf.pad(ids, [[0, 0], [0, widest - width]]), length, None)
        steps = decoding_steps(width, self.sampler, self.length_ratio, self.length_offset)
        cuts = {"ids": np.s_[:, :, :steps], "alignment": np.s_[:, :, :steps, :width]}
        return {key: value[cuts[key]] if key in cuts else value
                for key, value in outputs.items()}

    def _output_signature(self, width):
        scores = tf.TensorSpec([None, None], tf.float32)
        signature = {
            "ids": tf.TensorSpec([None, None, None], tf.int32),
            "lengths": tf.TensorSpec([None, None], tf.int32),
            "log_probs": scores,
            "scores": scores,
        }
        if self.alignment:
            signature["alignment"] = tf.TensorSpec([None, None, None, width], tf.float32)
        return signature


def _checked_batch(source):
    """`source`, once the graph has checked that it is 1-D: the signatures declare `[None]`,
    but `tf.saved_model.load` runs them on any shape, and so does a session fed from C++
    (TF Serving)."""
    shape = tf.shape(source)
    # The number of dimensions counted at run time: Grappler folds `tf.rank(source)` and
    # `tf.size(shape)` to the declared rank, 1, when `tf.saved_model.load` runs a
    # signature, which drops the check; it cannot fold this `tf.where`.
    rank = tf.size(tf.where(shape >= 0))
    message = tf.strings.join([
        "expected a 1-D batch of strings (shape [batch]), got shape [",
        tf.strings.reduce_join(tf.strings.as_string(shape), separator=", "), "]",
    ])
    # Checked before the tokenizer sees `source`: its own error could come first.
    with tf.control_dependencies([tf.debugging.Assert(tf.equal(rank, 1), [message])]):
        return tf.identity(source)
