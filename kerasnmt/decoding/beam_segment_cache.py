"""The self-attention cache of a beam search: keys and values that never move, read through
each hypothesis' history, in segments of positions that a step reads only once it reaches them.

Examples:
    >>> cache = BeamSegmentCache.zeros(batch_size=2, max_length=20, beam_size=3,
    ...                                num_heads=2, key_dim=4)
    >>> [segment.shape for segment in cache.keys]  # [0, 16) and [16, 20), each with a spare
    [TensorShape([2, 2, 3, 17, 4]), TensorShape([2, 2, 3, 5, 4])]
    >>> new = tf.ones([6, 1, 2, 4])  # the new position's keys of the 2 * 3 hypotheses
    >>> cache = cache.write(new, new, step=0)
    >>> cache.history.shape, cache.logits(tf.ones([6, 1, 2, 4]), 0).shape
    (TensorShape([2, 3, 20]), TensorShape([6, 2, 1, 22]))
"""

import collections
import functools

import numpy as np
import tensorflow as tf

# A beam cache holds its positions in segments [0, 16), [16, 32), [32, 64), ... (each twice
# the previous one's end): a step reads only the segments that hold a position it attends.
_FIRST_SEGMENT_LENGTH = 16
# The key position of each segment's spare entry, where the rows whose step lies in another
# segment write: later than any query, so that the causal mask hides it.
_SPARE_POSITION = 2**30


class BeamSegmentCache(collections.namedtuple("BeamSegmentCache", ["keys", "values", "history"])):
    """The keys and values of one self-attention layer for a beam search, written in place.

    The `B * K` query rows (row `b * K + k`, hypothesis `k` of example `b`, `K` the beam
    size) write their keys and values into slot `k` of their example, and `history` tells,
    for each hypothesis and position, the slot that holds its entry. A step writes the new
    position's slot into the history; a beam search reorders only the history (int32
    `[B, K, max_length]`) when hypotheses change places, never the keys and values, and
    each query is scored against the `K` slots of its example.

    The keys and values are held in segments of positions `[0, 16)`, `[16, 32)`,
    `[32, 64)`, ... (the last one ending at `max_length`), each with a spare entry at its
    end: a step writes its position into the segment that holds it (and into the spare
    entry of the others), and reads only the segments that start at or before the deepest
    step of its rows. A step attends over at most about twice its position, not
    `max_length` positions: with `max_length = 43` (a source width of 16 and a length
    limit `2 S + 10`), a step among the first 16 reads 17 entries instead of 43. Logits
    have one entry per segment entry, spare entries included (the causal mask gives them
    weight 0).

    It is a named tuple of tensors (`keys` and `values`: lists of segments
    `[B, num_heads, K, P + 1, key_dim]`, `P` positions and the spare entry), so that it
    passes through `tf.function` and `tf.nest` as they are.
    """

    @classmethod
    def zeros(cls, batch_size, max_length, beam_size, num_heads, key_dim, dtype="float32"):
        """An empty cache of `max_length` positions for `beam_size` hypotheses of
        `batch_size` examples, in heads of `num_heads` x `key_dim`."""
        segments = [
            tf.zeros([batch_size, num_heads, beam_size, end - start + 1, key_dim], dtype=dtype)
            for start, end in _segment_bounds(max_length)
        ]
        history = tf.zeros([batch_size, beam_size, max_length], tf.int32)
        return cls(segments, list(segments), history)

    @classmethod
    def for_decoder(cls, decoder, batch_size, max_length, beam_size=1):
        """Empty caches for the self-attention of every layer of a
        `kerasnmt.layers.TransformerDecoder`, in its compute dtype (what its `decode_step`
        takes)."""
        return [
            cls.zeros(batch_size, max_length, beam_size, layer.self_attention.num_heads,
                      layer.self_attention.key_dim, layer.self_attention.compute_dtype)
            for layer in decoder.transformer_layers
        ]

    def write(self, keys, values, step):
        """The cache with the keys and values `[B*K, 1, H, D]` of the rows' new position
        written at `step` (a scalar, or `[B]`), and that position's slots written into the
        history."""
        keys, values = _write_beam_segments([self.keys, self.values], [keys, values], step)
        return BeamSegmentCache(keys, values, _write_history(self.history, step))

    def key_positions(self):
        """The key position of every entry of the segments, in order, int32 `[sum(P + 1)]`."""
        return _segment_key_positions(self.keys)

    def logits(self, queries, newest):
        """Attention logits `[B*K, H, 1, sum(P + 1)]` of queries `[B*K, 1, H, D]`, each
        position through the slot its hypothesis' history names; 0 for the segments after
        `newest` (see `deepest_step`: the causal mask hides them)."""
        return _beam_logits(queries, self.keys, self.history, newest)

    def heads(self, weights, newest):
        """`sum_l weights[l] * values[slot(l), l]` `[B*K, 1, H, D]` from weights
        `[B*K, H, 1, sum(P + 1)]` (the layout of `logits`), through each hypothesis'
        history; the segments after `newest` are not read."""
        return _beam_heads(weights, self.values, self.history, newest)

    @staticmethod
    def deepest_step(step):
        """The deepest of `step` (a scalar, or `[B]`): a Python int when it is known when
        tracing (a step given as a number), else an int32 scalar."""
        static = tf.get_static_value(step)
        return tf.reduce_max(step) if static is None else int(np.max(static))


def _write_history(history, step):
    """`history` `[B, K, L]` with each hypothesis' own slot `k` written at `step` (a scalar,
    or `[B]`)."""
    slots = tf.range(tf.shape(history)[1])[tf.newaxis, :, tf.newaxis]
    at_step = tf.equal(tf.range(tf.shape(history)[2]),
                       tf.reshape(step, [-1, 1, 1]))  # [1 or B, 1, L]
    return tf.where(at_step, slots, history)


def _per_example(step, shape, rank):
    """`step` (a scalar, or `[B]`) broadcast to `shape`, whose first dimension is `B`."""
    step = tf.cast(step, tf.int32)
    if step.shape.rank == 1:
        step = tf.reshape(step, [-1] + [1] * (rank - 1))
    return tf.broadcast_to(step, shape)


def _segment_bounds(max_length):
    """The `(start, end)` positions of the segments of a beam cache of `max_length`
    positions: `[0, 16)`, `[16, 32)`, `[32, 64)`, ..., the last one cut at `max_length`."""
    bounds, start = [], 0
    while start < max_length:
        end = min(max(2 * start, _FIRST_SEGMENT_LENGTH), max_length)
        bounds.append((start, end))
        start = end
    return bounds


def _segment_starts(segments):
    """The first position of each segment `[B, H, K, P + 1, D]` (`P` positions and the
    spare entry)."""
    starts, start = [], 0
    for segment in segments:
        starts.append(start)
        start += segment.shape[3] - 1
    return starts


def _segment_key_positions(segments):
    """The key position of every entry of the segments, in order, int32 `[sum(P + 1)]`."""
    positions = []
    for start, segment in zip(_segment_starts(segments), segments):
        positions += list(range(start, start + segment.shape[3] - 1)) + [_SPARE_POSITION]
    return tf.constant(positions, tf.int32)


def _write_beam_segments(caches, updates, step):
    """Beam caches (lists of segments `[B, H, K, P + 1, D]`: the keys', the values') with
    their `updates` `[B*K, 1, H, D]` (row `b*K + k`) written at slot `k` of position `step`
    (a scalar, or `[B]`) in the segment that holds it, and at the spare entry of the
    others: a scatter of the `B * H * K` new vectors each, all the caches' through the
    same indices."""
    first = caches[0][0]
    shape = tf.shape(first)
    heads, slots, depth = first.shape[1], first.shape[2], first.shape[4]
    batch_index, head_index, slot_index = tf.meshgrid(
        tf.range(shape[0]), tf.range(heads), tf.range(slots), indexing="ij")
    grid = tf.stack([batch_index, head_index, slot_index], axis=-1)  # [B, H, K, 3]
    step = _per_example(step, tf.shape(batch_index), rank=3)
    indices = []
    for start, segment in zip(_segment_starts(caches[0]), caches[0]):
        length = segment.shape[3] - 1
        position = step - start
        position = tf.where((position >= 0) & (position < length), position, length)
        indices.append(tf.concat([grid, position[..., tf.newaxis]], axis=-1))  # [B, H, K, 4]
    written = []
    for segments, update in zip(caches, updates):
        update = tf.transpose(tf.reshape(update, [-1, slots, heads, depth]),
                              [0, 2, 1, 3])  # [B, H, K, D]
        written.append([
            tf.tensor_scatter_nd_update(segment, index, tf.cast(update, segment.dtype))
            for segment, index in zip(segments, indices)
        ])
    return written


def _read_segments(segments, history, newest, read, skipped):
    """`read(index, segment, selector)` of each segment of a beam cache, or
    `skipped(segment)` for the segments that start after `newest` (no row attends to
    them), chosen when the graph runs, or when tracing if `newest` is a Python int (then
    the skipped segments' reads are not traced). `selector`: the one-hot `[B, R, K, P + 1]`
    of the slot that holds each position of each of the history's `R` hypotheses (the
    spare entry: slot 0)."""
    results = []
    for index, (start, segment) in enumerate(zip(_segment_starts(segments), segments)):
        length = segment.shape[3] - 1

        def read_segment(index=index, segment=segment, start=start, length=length):
            slots = tf.pad(history[:, :, start:start + length], [[0, 0], [0, 0], [0, 1]])
            selector = tf.one_hot(slots, segment.shape[2], axis=2, dtype=segment.dtype)
            return read(index, segment, selector)

        if start == 0:
            results.append(read_segment())
        elif isinstance(newest, int):  # known when tracing: the other branch is not traced
            results.append(read_segment() if newest >= start else skipped(segment))
        else:
            results.append(tf.cond(newest >= start, read_segment,
                                   functools.partial(skipped, segment)))
    return results


def _beam_logits(queries, segments, history, newest):
    """Attention logits `[B*K, H, 1, sum(P + 1)]` of queries `[B*K, 1, H, D]` against the
    segments of a beam cache of keys `[B, H, K, P + 1, D]`, each position through the slot
    its hypothesis' history names; 0 for the segments after `newest` (the causal mask
    hides them)."""
    rows = tf.shape(queries)[0]
    return tf.concat(_read_segments(
        segments, history, newest,
        lambda index, segment, selector: _segment_logits(queries, segment, selector),
        lambda segment: tf.zeros([rows, segment.shape[1], 1, segment.shape[3]],
                                 segment.dtype),
    ), axis=-1)


def _beam_heads(weights, segments, history, newest):
    """`sum_l weights[l] * values[slot(l), l]` `[B*K, 1, H, D]` from weights
    `[B*K, H, 1, sum(P + 1)]` (`_beam_logits`' layout) and the segments of a beam cache of
    values, through each hypothesis' history; the segments after `newest` are not read."""
    # Where each segment's weights begin: its start, plus the spare entries before it.
    offsets = [start + index for index, start in enumerate(_segment_starts(segments))]
    rows = tf.shape(weights)[0]
    return tf.add_n(_read_segments(
        segments, history, newest,
        lambda index, segment, selector: _segment_heads(
            weights[..., offsets[index]:offsets[index] + segment.shape[3]], segment, selector),
        lambda segment: tf.zeros([rows, 1, segment.shape[1], segment.shape[4]],
                                 segment.dtype),
    ))


def _segment_logits(queries, keys, beam_selector):
    """Attention logits `[B*R, H, 1, P]` of queries `[B*R, 1, H, D]` against a segment of
    keys `[B, H, J, P, D]` (`J` slots): each query is scored against the keys of every
    slot of its example (one matrix product per example and head, no copy of the cache),
    then each position keeps the slot its hypothesis' history names (`beam_selector`
    `[B, R, J, P]`)."""
    _, heads, _, length, depth = keys.shape  # static: the cache's segment
    queries = tf.transpose(
        tf.reshape(queries, [-1, beam_selector.shape[1], heads, depth]),
        [0, 2, 1, 3])  # [B, H, R, D]
    # Keys first: the cache is the left matrix, read as stored (as the right one, XLA on
    # CPU copies it to put the contracted dimension first).
    all_slots = tf.einsum("bhjld,bhkd->bhkjl", keys, queries)
    logits = tf.reduce_sum(all_slots * tf.expand_dims(beam_selector, 1), axis=3)  # [B,H,R,P]
    logits = tf.transpose(logits, [0, 2, 1, 3])  # [B, R, H, P]
    return tf.reshape(logits, [-1, heads, 1, length])


def _segment_heads(weights, values, beam_selector):
    """`sum_l weights[l] * values[slot(l), l]` `[B*R, 1, H, D]` from weights `[B*R, H, 1, P]`
    and a segment of values `[B, H, J, P, D]`, through each hypothesis' history
    (`beam_selector` `[B, R, J, P]`)."""
    _, num_heads, _, length, depth = values.shape  # static: the cache's segment
    weights = tf.transpose(
        tf.reshape(weights, [-1, beam_selector.shape[1], num_heads, length]),
        [0, 2, 1, 3])  # [B, H, R, P]
    weights = tf.expand_dims(weights, 3) * tf.expand_dims(beam_selector, 1)  # [B,H,R,J,P]
    heads = tf.einsum("bhkjl,bhjld->bhkd", weights, values)
    heads = tf.transpose(heads, [0, 2, 1, 3])  # [B, R, H, D]
    return tf.reshape(heads, [-1, 1, num_heads, depth])
