"""Helpers of `Translator.decode` and `Translator.translate`: decoding lengths, source widths."""

import numpy as np
import tensorflow as tf

from kerasnmt.data.vocabulary import PADDING_ID, START_OF_SENTENCE_ID, UNKNOWN_TOKEN
from kerasnmt.layers.preprocessing_layer import drop_padding_tokens


def decoding_length_limit(source_length, sampler, length_ratio, length_offset):
    """The most target tokens each sentence may get: int32 `[B]`.

    `min(sampler.max_length, max(sampler.min_length, floor(length_ratio * n) + length_offset))`
    for a source of `n` tokens (computed in float32, as `decoding_steps`).
    """
    _check_length_arguments(length_ratio, length_offset)
    scaled = tf.floor(tf.constant(length_ratio, tf.float32) * tf.cast(source_length, tf.float32))
    limits = tf.cast(scaled, tf.int32) + length_offset
    return tf.minimum(sampler.max_length, tf.maximum(sampler.min_length, limits))


def decoding_steps(source_width, sampler, length_ratio, length_offset):
    """The decoding steps buffers must hold for sources padded to `source_width` tokens.

    One more than the limit of a sentence that fills the width (the step that emits the
    forced `</s>`), at most `sampler.max_length`; `sampler.max_length` when the width is
    not static (`None`).
    """
    _check_length_arguments(length_ratio, length_offset)
    if source_width is None:
        return sampler.max_length
    scaled = np.floor(np.float32(length_ratio) * np.float32(source_width))
    limit = max(sampler.min_length, int(scaled) + length_offset)
    return min(sampler.max_length, limit + 1)


def _check_length_arguments(length_ratio, length_offset):
    if not length_ratio >= 0:
        raise ValueError(f"Translator.decode: length_ratio must be >= 0, got {length_ratio!r}")
    if isinstance(length_offset, bool) or not isinstance(length_offset, (int, np.integer)) or (
        length_offset < 1
    ):
        raise ValueError(
            f"Translator.decode: length_offset must be an int >= 1, got {length_offset!r}"
        )


# Decoding streams group sentences by widths of multiples of this (up to 8 times it), finer
# than batches: a stream's cache length and its steps' cost follow its width.
STREAM_WIDTH_MINIMUM = 8


def bucket_source_width(length, minimum=16):
    """The width a batch whose longest source has `length` tokens is padded to.

    Multiples of `minimum` up to `8 * minimum`, then four widths per doubling (multiples
    of a quarter of the last power of two): few distinct shapes, since each new shape is a
    new trace and, under XLA, a new compilation (several seconds on 2 CPU cores), while
    wider sources cost little (the encoder runs once; a decoding step's cost grows with
    the width through the cross-attention and the decoding length, see
    `decoding_steps`). Multi30k sentences (at most 36 SentencePiece tokens) take 3 widths.

    Examples:
        >>> [bucket_source_width(n) for n in (0, 1, 16, 17, 127, 129, 200, 257, 600)]
        [16, 16, 16, 32, 128, 160, 224, 320, 640]
    """
    length = max(int(length), 1)
    step = minimum
    if length > 8 * minimum:
        step = 2 ** (length.bit_length() - 1) // 4  # a quarter of the power of two below
    return -(-length // step) * step


def source_features(preprocessor, with_tokens):
    """A function of one source sentence -> its `{"ids", "length"}` (and `"tokens"`, the
    tokens the ids stand for, when `with_tokens`), for `inference_dataset`."""

    def features(sentence):
        if not with_tokens:
            return preprocessor(sentence)
        tokens = drop_padding_tokens(preprocessor.source_tokenizer(sentence))
        if preprocessor.maximum_source_length is not None:
            tokens = tokens[: preprocessor.maximum_source_length]
        return dict(preprocessor.source_lookup(tokens), tokens=tokens)

    return features


def pad_batch(source_ids, source_length, batch_size, width):
    """Pads a batch to `[batch_size, width]` ids; the added rows repeat the first one (so
    they finish decoding with it). Returns NumPy `(ids, lengths)`."""
    ids = np.zeros([batch_size, width], np.int32)
    lengths = np.zeros([batch_size], np.int32)
    count, current_width = source_ids.shape
    ids[:count, :current_width] = source_ids
    lengths[:count] = source_length
    ids[count:] = ids[0]
    lengths[count:] = lengths[0]
    return ids, lengths


def decoding_streams(batches, num_slots, maximum_size=None, shortlist=None):
    """Regroups batches of source features into streams for `Translator.decode(...,
    num_slots=num_slots)`: the sentences of one source width (`bucket_source_width`
    with `minimum=STREAM_WIDTH_MINIMUM`), longest first (so that a stream's last steps
    decode short sentences), at most `maximum_size` (default `16 * num_slots`) per stream.

    With a `shortlist` (`kerasnmt.data.LexicalShortlist`), a stream also ends before the
    sentence that would take the union of its sentences' shortlists beyond
    `shortlist.width` ids, so that each stream can be decoded over its shortlist (a stream
    of 256 Multi30k sentences needs about 3,000 ids, more than the default 2,048).

    Args:
        batches: an iterable of NumPy feature dicts (`"index"`, `"ids"` `[B, S]`,
            `"length"`, and optionally `"tokens"` `[B, S]`), e.g. from `inference_dataset`.
        num_slots: the decoding slots.
        maximum_size: the most sentences in a stream.
        shortlist: cut streams to fit this shortlist's width.

    Returns:
        A list of feature dicts, each with the sentences of one stream (`"ids"` cut to
        their longest), `"width"`: the source width to pad them to, and `"size"`: the
        number of rows to pad it to, `num_slots` times a power of two (few distinct shapes
        to compile), at most `maximum_size` rounded up to a multiple of `num_slots`.

    Examples:
        >>> batch = {"index": np.arange(3), "ids": np.array([[5, 6, 7], [5, 0, 0], [9, 9, 0]]),
        ...          "length": np.array([3, 1, 2])}
        >>> [(s["index"].tolist(), s["size"]) for s in decoding_streams([batch], num_slots=2)]
        [([0, 2, 1], 4)]
    """
    maximum_size = 16 * num_slots if maximum_size is None else maximum_size
    maximum_size = -(-maximum_size // num_slots) * num_slots
    by_width = {}
    for batch in batches:
        for row, length in enumerate(batch["length"].tolist()):
            rows = by_width.setdefault(bucket_source_width(length, STREAM_WIDTH_MINIMUM), [])
            rows.append({key: value[row] for key, value in batch.items()})
    streams = []
    for width in sorted(by_width):
        rows = sorted(by_width[width], key=lambda row: -int(row["length"]))
        for chunk in _stream_chunks(rows, maximum_size, shortlist):
            longest = max(max(int(row["length"]) for row in chunk), 1)
            stream = {
                key: np.stack([_cut_or_pad(row[key], longest) if key in ("ids", "tokens")
                               else row[key] for row in chunk])
                for key in chunk[0]
            }
            size = num_slots
            while size < len(chunk):
                size *= 2
            stream["size"] = min(size, maximum_size)
            stream["width"] = width
            streams.append(stream)
    return streams


def _stream_chunks(rows, maximum_size, shortlist):
    """Consecutive runs of `rows`, at most `maximum_size` each; with a `shortlist`, a run
    whose shortlist fits its width also ends before the row that would overflow it."""
    chunk, target_ids = [], set()
    for row in rows:
        row_ids = set() if shortlist is None else shortlist.target_id_set(row["ids"])
        with_row = target_ids | row_ids
        overflows = shortlist is not None and len(target_ids) <= shortlist.width < len(with_row)
        if chunk and (len(chunk) == maximum_size or overflows):
            yield chunk
            chunk, with_row = [], row_ids
        chunk.append(row)
        target_ids = with_row
    if chunk:
        yield chunk


def _cut_or_pad(values, width):
    """A row of ids or tokens, cut or padded (0 or empty bytes) to `width`."""
    if len(values) >= width:
        return values[:width]
    return np.concatenate([values, np.zeros([width - len(values)], values.dtype)])


def hypotheses(outputs, count, target_vocabulary, unknown_id, source_tokens=None,
               source_length=None):
    """The first `count` examples of a batch of `Translator.decode` outputs, as Python.

    Returns one list per example of `n_best` dicts (best first): `"tokens"` (str),
    `"score"`, `"log_prob"`, `"alignment"` (`[len(tokens), source length]` NumPy, when
    `source_length` is given). When `source_tokens` (`[B, S]` bytes) are given, each unknown
    target token is replaced by the source token with the highest attention.
    """
    ids, lengths = outputs["ids"].numpy(), outputs["lengths"].numpy()
    scores, log_probs = outputs["scores"].numpy(), outputs["log_probs"].numpy()
    alignment = outputs["alignment"].numpy() if "alignment" in outputs else None
    results = []
    for i in range(count):
        n_best = []
        for k in range(ids.shape[1]):
            token_ids = ids[i, k, : lengths[i, k]]
            # <blank> and <s> are not text (as in `VocabLookup.invert`): dropped.
            kept = (token_ids != PADDING_ID) & (token_ids != START_OF_SENTENCE_ID)
            token_ids = token_ids[kept]
            attention = None
            if alignment is not None and source_length is not None:
                attention = alignment[i, k, : lengths[i, k], : source_length[i]][kept]
            tokens = []
            for t, token_id in enumerate(token_ids.tolist()):
                if token_id == unknown_id and source_tokens is not None and source_length[i] > 0:
                    tokens.append(source_tokens[i][int(np.argmax(attention[t]))].decode())
                elif token_id >= len(target_vocabulary):
                    tokens.append(UNKNOWN_TOKEN)
                else:
                    tokens.append(target_vocabulary[token_id])
            hypothesis = {
                "tokens": tokens,
                "score": float(scores[i, k]),
                "log_prob": float(log_probs[i, k]),
            }
            if attention is not None:
                hypothesis["alignment"] = attention
            n_best.append(hypothesis)
        results.append(n_best)
    return results
