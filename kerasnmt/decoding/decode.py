"""Decoding a `TransformerBackbone` with a `BeamSampler`: its step function (beam caches
that stay in place, per-example state) and `decode`, ids in, ids out, which every
translation path calls (`decode_function`, `TranslateFunction`, `Translator.translate`).

Examples:
    >>> from kerasnmt.models import TransformerBackbone
    >>> backbone = TransformerBackbone(6, 6, num_layers=1, num_units=8, num_heads=2,
    ...                                ffn_inner_dim=16)
    >>> outputs = decode(backbone, tf.constant([[3, 4], [4, 0]]), tf.constant([2, 1]),
    ...                  BeamSampler(beam_size=2, n_best=2, max_length=5))
    >>> outputs["ids"].shape[:2], outputs["scores"].shape  # [B, n_best, T], [B, n_best]
    (TensorShape([2, 2]), TensorShape([2, 2]))
"""

import functools

import keras
import tensorflow as tf

from kerasnmt.data.vocabulary import END_OF_SENTENCE_ID, START_OF_SENTENCE_ID
from kerasnmt.decoding.beam_sampler import BeamSampler
from kerasnmt.decoding.beam_segment_cache import BeamSegmentCache
from kerasnmt.decoding.search.scoring import EXCLUDED_LOGIT, FORCED_END_LOGIT, with_end_logits
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    decoding_length_limit,
    decoding_steps,
    source_width_ladder,
)

# BeamSampler's top-k reads the logits in chunks of 64: no per-step padding copy then.
LOGITS_CHUNK = 64


def decode(backbone, source_ids, source_length, sampler, length_ratio=DEFAULT_LENGTH_RATIO,
           length_offset=DEFAULT_LENGTH_OFFSET, shortlist_ids=None, num_slots=None,
           num_examples=None, alignment=True):
    """Translates source ids into target ids with a `BeamSampler` (numbers only, no text).

    The encoder runs once; its outputs are projected once per layer (not tiled per
    hypothesis: the hypotheses of an example attend to them together), and the decoder
    runs one position per step with its attention cache, through `sampler` (greedy,
    beam search or sampling share this code). The self-attention caches are beam caches
    that stay in place: when hypotheses change places the sampler reorders only their
    histories (which slot holds each position), not the keys and values
    (`BeamSegmentCache`). All of it is per example, so `BeamSampler(compact_batch=True)`
    can shrink the batch as examples finish. The output projection is padded to a multiple of 64 ids so that the
    sampler's chunked top-k reads the logits as they are. Works eagerly, in
    `tf.function` and in `tf.function(jit_compile=True)`.

    Decoding length: a sentence of `n` source tokens gets at most
    `min(sampler.max_length, max(sampler.min_length, floor(length_ratio * n) +
    length_offset))` target tokens (as fairseq's `max_len_a * n + max_len_b`); a
    translation is cut there, without `</s>` probability (`</s>` is forced with
    probability 1). The caches and output buffers hold only
    `T = min(sampler.max_length, floor(length_ratio * S) + length_offset + 1)` steps for
    sources of width `S`, not `max_length`: every step attends over the whole cache
    (masked), so its size is part of the cost of a step. Pad sources to a few widths
    (`kerasnmt.decoding.widths.source_width_buckets`) so that few shapes are traced;
    when the width is unknown at tracing time (`[B, None]` signatures), the graph holds
    one decoding loop per width of that ladder and runs the one for the actual width. The limit
    is per sentence, so padding the source wider never changes a translation.

    Shortlist: with `shortlist_ids`, the batch is decoded over these target ids only (the
    probabilities normalized over them), as with Marian's lexical shortlists and
    CTranslate2's vocabulary maps (`kerasnmt.data.LexicalShortlist` gives them for a
    batch): the output layer and the softmax shrink from the whole vocabulary to them.

    Slots: with `num_slots`, the `B` sentences stream through `num_slots` decoding slots
    (`BeamSampler` `num_slots`, continuous batching): a slot that is done takes the next
    sentence, so every step decodes `num_slots` sentences until the last ones, instead
    of a batch waiting for its longest translation. Each result is then the one of the
    sentence decoded alone (as with `BeamSampler(compact_batch=True)`). Order the
    sentences longest first, so that the last steps decode short ones.

    Args:
        backbone: a `kerasnmt.models.TransformerBackbone`.
        source_ids: int `[B, S]` source ids, padded with 0.
        source_length: int `[B]` source lengths.
        sampler: a `kerasnmt.decoding.BeamSampler`.
        length_ratio: `a` of the per-sentence limit `floor(a * n) + b`.
        length_offset: `b` of that limit.
        shortlist_ids: int32 `[W]` (static `W`): the target ids to decode over, increasing,
            starting with 0, 1, 2 (so `</s>` keeps its id), padded at the end with -1
            (never emitted); `None`: the whole vocabulary.
        num_slots: decode through this many slots (see above); `None`: all `B` at once.
        num_examples: with `num_slots`, decode only the first `num_examples` sentences
            (int32 scalar; the others are padding and get empty results).
        alignment: return the attention of each target token (`"alignment"`); without
            it, decoding through slots is faster (no `[B, T, S]` table to update).

    Returns:
        The sampler's dict: `"ids"` int32 `[B, n_best, T]` (tokens, `</s>` excluded,
        padded with 0), `"lengths"` `[B, n_best]`, `"log_probs"` and `"scores"` float32
        `[B, n_best]`, `"alignment"` float32 `[B, n_best, T, S]` (with `alignment`), best
        first; `T` is the
        number of steps the buffers hold (see above).
    """
    source_ids = tf.cast(source_ids, tf.int32)
    source_length = tf.cast(source_length, tf.int32)
    limits = decoding_length_limit(source_length, sampler, length_ratio, length_offset)
    if source_ids.shape[1] is not None:
        steps = decoding_steps(source_ids.shape[1], sampler, length_ratio, length_offset)
        return _decode_steps(backbone, source_ids, source_length, sampler, limits, steps,
                             shortlist_ids, num_slots, num_examples, alignment)
    # A width unknown when tracing (e.g. a SavedModel signature): one branch per width
    # of the ladder, each with its own static number of steps, and max_length beyond.
    widths = [
        width for width in source_width_ladder(sampler.max_length)
        if decoding_steps(width, sampler, length_ratio, length_offset) < sampler.max_length
    ]
    branches = [
        functools.partial(
            _decode_steps, backbone, source_ids, source_length, sampler, limits,
            decoding_steps(width, sampler, length_ratio, length_offset), shortlist_ids,
            num_slots, num_examples, alignment,
        )
        for width in widths
    ]
    branches.append(functools.partial(
        _decode_steps, backbone, source_ids, source_length, sampler, limits, sampler.max_length,
        shortlist_ids, num_slots, num_examples, alignment,
    ))
    branch = tf.reduce_sum(tf.cast(tf.shape(source_ids)[1] > tf.constant(widths, tf.int32),
                                   tf.int32))
    return tf.switch_case(branch, branches)


def _decode_steps(backbone, source_ids, source_length, sampler, limits, steps, shortlist_ids,
                  num_slots=None, num_examples=None, alignment=True):
    """`decode` with caches and buffers of `steps` decoding steps."""
    if steps != sampler.max_length:
        config = dict(sampler.get_config(), max_length=steps)
        config["min_length"] = min(sampler.min_length, steps)
        sampler = BeamSampler.from_config(config)
    encoder_outputs, padding_mask = backbone.encode(source_ids, source_length, training=False)
    step_fn, initial_state, unordered_state = beam_history_step_function(
        backbone, encoder_outputs, padding_mask, limits, sampler.beam_size, steps, LOGITS_CHUNK,
        shortlist_ids, num_slots,
    )
    attention_size = padding_mask.shape[1] or tf.shape(padding_mask)[1]
    if not alignment and sampler.coverage_penalty == 0:
        step_fn, attention_size = _without_attention(step_fn), None
    outputs = sampler(
        step_fn,
        start_ids=tf.fill([tf.shape(source_ids)[0]], START_OF_SENTENCE_ID),
        end_id=END_OF_SENTENCE_ID,
        initial_state=initial_state,
        attention_size=attention_size,
        unordered_state=unordered_state,
        num_slots=num_slots,
        num_examples=num_examples,
    )
    if shortlist_ids is not None:  # shortlist positions -> target ids (0 pads stay 0)
        outputs["ids"] = tf.gather(tf.maximum(shortlist_ids, 0), outputs["ids"])
    if backbone.source_eos and "alignment" in outputs:
        outputs["alignment"] = _token_attention(outputs["alignment"], source_length)
    return outputs


def beam_history_step_function(
    backbone, encoder_outputs, source_padding_mask, length_limits, beam_size, max_length,
    vocabulary_multiple, shortlist_ids=None, num_slots=None,
):
    """The step function `decode` gives a `BeamSampler(unordered_state=...)`, and its
    states: the encoder has run once, and nothing of the decoder's state is tiled per
    hypothesis or moved when hypotheses change places.

    The reordered state is each hypothesis' history, int32 `[B, max_length]` (tiled by
    the sampler): the beam slot that holds each of its positions in the self-attention
    beam caches (`BeamSegmentCache`), so each step the sampler reorders
    `B * beam_size * max_length` integers instead of copying every cache. The unordered state holds, per example (leading dimension `B`, so that
    `BeamSampler(compact_batch=True)` can shrink the batch): the beam caches (segments
    `[B, H, beam_size, P + 1, D/H]` of the `max_length` positions), the projected
    encoder keys and values `[B, H, S, D/H]` of every layer (the hypotheses of an
    example attend to them together), the source padding mask and the length limits
    (from a step equal to its limit, a row can only emit `</s>`).

    With `shortlist_ids` (a shortlist, see `decode`), the logits are those of these ids
    only, in their order.

    With `num_slots` (for `BeamSampler` `num_slots`), the beam caches are the slots'
    (`[num_slots, ...]`, each slot overwriting its positions from step 0 when it takes
    a new example), and each step reads the encoder keys and values, padding mask and
    length limit of the examples the slots decode (`step_fn` then takes the slots'
    steps and examples).

    Returns:
        `(step_fn, initial_state, unordered_state)`.
    """
    kernel, bias = backbone.output_projection(vocabulary_multiple)
    if shortlist_ids is not None:
        kernel, bias = _shortlist_projection(kernel, bias, shortlist_ids, vocabulary_multiple)
    decoder = backbone.decoder
    caches = BeamSegmentCache.for_decoder(
        decoder, keras.ops.shape(encoder_outputs)[0], max_length, beam_size)
    memories = decoder.project_memory(encoder_outputs)

    def keys_and_values(caches):  # the beam caches without their history
        return [{"keys": cache.keys, "values": cache.values} for cache in caches]

    per_example = {
        "memory": memories,
        "source_padding_mask": source_padding_mask,
        "length_limits": length_limits,
    }
    if num_slots is None:
        unordered_state = dict(per_example, self_attention=keys_and_values(caches))
    else:  # the slots' own (zero) beam caches
        unordered_state = {"self_attention": tf.nest.map_structure(
            lambda t: tf.zeros([num_slots] + t.shape[1:].as_list(), t.dtype),
            keys_and_values(caches),
        )}
    history = tf.zeros([tf.shape(encoder_outputs)[0], max_length], tf.int32)

    def step_fn(ids, step, state, examples=None):
        if shortlist_ids is not None:  # the sampler's ids are positions in the shortlist
            ids = tf.gather(tf.maximum(shortlist_ids, 0), ids)
        history, unordered = state
        inputs = unordered if examples is None else tf.nest.map_structure(
            lambda t: tf.gather(t, examples), per_example
        )
        history = tf.reshape(history, [-1, beam_size, max_length])
        caches = [BeamSegmentCache(kv["keys"], kv["values"], history)
                  for kv in unordered["self_attention"]]
        outputs, attention, caches = decoder.decode_step(
            backbone.target_embedding(tf.cast(ids, tf.int32)), step, caches,
            inputs["memory"], inputs["source_padding_mask"],
        )
        logits = backbone.projected_logits(outputs, kernel, bias)
        history = caches[0].history
        at_limit = tf.repeat(tf.greater_equal(step, inputs["length_limits"]), beam_size)
        logits = with_end_logits(logits, END_OF_SENTENCE_ID, tf.where(
            at_limit, FORCED_END_LOGIT, logits[:, END_OF_SENTENCE_ID]))
        history = tf.reshape(history, [-1, max_length])
        unordered = dict(unordered, self_attention=keys_and_values(caches))
        return logits, attention, (history, unordered)

    return step_fn, history, unordered_state


def _shortlist_projection(kernel, bias, shortlist_ids, vocabulary_multiple):
    """The output layer's `(kernel [D, W'], bias [W'])` for the shortlist `shortlist_ids`
    (`[W]`, -1 padded; `W` rounded up to a multiple of `vocabulary_multiple` with -1), from
    the whole vocabulary's (`bias` may be None)."""
    shortlist_ids = tf.cast(shortlist_ids, tf.int32)
    padding = -shortlist_ids.shape[0] % vocabulary_multiple
    shortlist_ids = tf.pad(shortlist_ids, [[0, padding]], constant_values=-1)
    kernel = tf.gather(kernel, tf.maximum(shortlist_ids, 0), axis=1)
    kept = tf.zeros(tf.shape(shortlist_ids)) if bias is None else tf.gather(
        bias, tf.maximum(shortlist_ids, 0))
    bias = tf.where(shortlist_ids < 0, EXCLUDED_LOGIT, kept)
    return kernel, bias


def _without_attention(step_fn):
    """`step_fn` returning no attention (so the sampler records none)."""

    def step_without_attention(*arguments):
        logits, _, state = step_fn(*arguments)
        return logits, None, state

    return step_without_attention


def _token_attention(alignment, source_length):
    """Decoded alignments `[B, n, T, S + 1]` over `</s>`-marked sources -> `[B, n, T, S]`
    over their tokens: the last column cut, each sentence's `</s>` column zeroed."""
    width = tf.shape(alignment)[-1] - 1
    tokens = tf.sequence_mask(source_length, width, dtype=alignment.dtype)
    return alignment[..., :-1] * tokens[:, tf.newaxis, tf.newaxis]
