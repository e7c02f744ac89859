"""The decoding call every translation path makes: `Translator.decode` as a `tf.function`,
over a batch's lexical shortlist when it fits."""

import tensorflow as tf

from kerasnmt.inference.widths import DEFAULT_LENGTH_OFFSET, DEFAULT_LENGTH_RATIO


def decode_function(translator, sampler, jit_compile=True, length_ratio=DEFAULT_LENGTH_RATIO,
                    length_offset=DEFAULT_LENGTH_OFFSET, alignment=True):
    """`translator.decode` with these options as a `tf.function(ids, length, shortlist_ids,
    **slots)` (`slots`: `num_slots`, `num_examples`), XLA-compiled with `jit_compile`.

    No autograph: decode has no Python control flow on tensors, and converting the
    layers' code would double the tracing time of each new shape.

    Examples:
        >>> from kerasnmt.layers import BeamSampler, TranslationPreprocessor, WhitespaceTokenizer
        >>> from kerasnmt.models import Translator
        >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
        >>> translator = Translator(TranslationPreprocessor(
        ...     WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> decode = decode_function(translator, BeamSampler(beam_size=1, max_length=5),
        ...                          jit_compile=False, alignment=False)
        >>> outputs = decode(tf.constant([[3, 4]]), tf.constant([2]), None)
        >>> outputs["ids"].shape, "alignment" in outputs
        (TensorShape([1, 1, 5]), False)
    """
    return tf.function(
        lambda ids, length, shortlist_ids, **slots: translator.decode(
            ids, length, sampler, length_ratio=length_ratio, length_offset=length_offset,
            shortlist_ids=shortlist_ids, alignment=alignment, **slots,
        ),
        jit_compile=jit_compile,
        autograph=False,
    )


def decode_chunk(decode, ids, length, shortlist=None, **slots):
    """Decodes padded ids with `decode` (from `decode_function`), over their shortlist
    when there is one and it fits its width, else over the whole vocabulary. Eagerly the
    choice is made in Python; in a graph (the SavedModel) both branches are traced."""
    if shortlist is None:
        return decode(ids, length, None, **slots)
    shortlist_ids, fits = shortlist.padded_target_ids(ids)
    if tf.executing_eagerly():
        return decode(ids, length, shortlist_ids if bool(fits) else None, **slots)
    return tf.cond(fits, lambda: decode(ids, length, shortlist_ids, **slots),
                   lambda: decode(ids, length, None, **slots))
