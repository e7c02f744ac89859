"""Decoding streams: the sentences of a `Translator.translate` call regrouped by source
width, longest first, for decoding through slots (`BeamSampler(compact_batch=True)`)."""

import numpy as np

from kerasnmt.decoding.widths import width_of


def decoding_streams(batches, num_slots, width_buckets, maximum_size=None, shortlist=None):
    """Regroups batches of source features into streams for `Translator.decode(...,
    num_slots=num_slots)`: the sentences of one source width (`width_of(length,
    width_buckets)`), longest first (so that a stream's last steps decode short
    sentences), at most `maximum_size` (default `16 * num_slots`) per stream.

    With a `shortlist` (`kerasnmt.data.LexicalShortlist`), a stream also ends before the
    sentence that would take the union of its sentences' shortlists beyond
    `shortlist.width` ids, so that each stream can be decoded over its shortlist (a stream
    of 256 Multi30k sentences needs about 3,000 ids, more than the default 2,048).

    Args:
        batches: an iterable of NumPy feature dicts (`"index"`, `"ids"` `[B, S]`,
            `"length"`, and optionally `"tokens"` `[B, S]`), e.g. `source_features`
            outputs as NumPy with an `"index"` added (as `translate` does).
        num_slots: the decoding slots.
        width_buckets: the source widths (`source_width_buckets`).
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
        >>> streams = decoding_streams([batch], num_slots=2, width_buckets=[8, 12])
        >>> [(s["index"].tolist(), s["size"], s["width"]) for s in streams]
        [([0, 2, 1], 4, 8)]
    """
    maximum_size = 16 * num_slots if maximum_size is None else maximum_size
    maximum_size = -(-maximum_size // num_slots) * num_slots
    by_width = {}
    for batch in batches:
        for row, length in enumerate(batch["length"].tolist()):
            rows = by_width.setdefault(width_of(length, width_buckets), [])
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


def pad_rows(ids, length, rows, width):
    """Pads `[B, S]` ids to `[rows, width]`; the added rows repeat the last one (the
    shortest of a longest-first group, so they never lengthen a decoding).

    Examples:
        >>> ids, length = pad_rows(np.array([[5, 6], [7, 0]]), np.array([2, 1]), 3, 4)
        >>> ids.tolist(), length.tolist()
        ([[5, 6, 0, 0], [7, 0, 0, 0], [7, 0, 0, 0]], [2, 1, 1])
    """
    padded_ids = np.zeros([rows, width], np.int32)
    padded_length = np.zeros([rows], np.int32)
    count, current_width = ids.shape
    padded_ids[:count, :current_width] = ids
    padded_length[:count] = length
    padded_ids[count:] = padded_ids[count - 1]
    padded_length[count:] = padded_length[count - 1]
    return padded_ids, padded_length
