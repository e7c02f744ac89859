"""The decoding call every translation path makes: `Translator.decode` as a `tf.function`,
over a batch's lexical shortlist when it fits.

An export compiles a model's weights in as constants (`constant_weights=True`) when they
take at most `CONSTANT_WEIGHTS_MAX_BYTES`: XLA's CPU matrix products (YNNPACK) then prepare
each weight matrix for their kernels once, at compilation, instead of laying it out again
at every decoding step (or, in the small batches' loops, multiplying it with a slower
kernel that reads it as it is), and the output layer's transposed, padded kernel is
folded at compilation instead of built per request: the SavedModel of the 2.3M-parameter
Multi30k model decodes 5-7% faster (both exports loaded in one process, passes interleaved,
2026-11-28). The graph
stores the weights once, in one function every decode calls; each compiled program holds
its own copy (that model's server takes 0.8 GiB more memory), hence the bound: larger
models keep their weights as variables. So does `Translator.translate`, whose functions
outlive changes to the weights (training, evaluation during training).
"""

import keras
import numpy as np
import tensorflow as tf

from kerasnmt.decoding.widths import DEFAULT_LENGTH_OFFSET, DEFAULT_LENGTH_RATIO


def decode_function(translator, sampler, jit_compile=True, length_ratio=DEFAULT_LENGTH_RATIO,
                    length_offset=DEFAULT_LENGTH_OFFSET, alignment=True, constant_weights=False):
    """`translator.decode` with these options as a `tf.function(ids, length, shortlist_ids,
    **slots)` (`slots`: `num_slots`, `num_examples`), XLA-compiled with `jit_compile`.
    With `constant_weights`, the weights' values now are compiled in as constants when
    `fits_in_constants(translator, jit_compile)`: the function does not see later changes
    to the weights.

    No autograph: decode has no Python control flow on tensors, and converting the
    layers' code would double the tracing time of each new shape.

    Examples:
        >>> from kerasnmt import BeamSampler, Translator, layers
        >>> translator = Translator(
        ...     layers.TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> decode = decode_function(translator, BeamSampler(beam_size=1, max_length=5),
        ...                          jit_compile=False, alignment=False)
        >>> outputs = decode(tf.constant([[3, 4]]), tf.constant([2]), None)
        >>> outputs["ids"].shape, "alignment" in outputs
        (TensorShape([1, 1, 5]), False)
    """
    def decode(ids, length, shortlist_ids, **slots):
        return translator.decode(
            ids, length, sampler, length_ratio=length_ratio, length_offset=length_offset,
            shortlist_ids=shortlist_ids, alignment=alignment, **slots,
        )

    if constant_weights and fits_in_constants(translator, jit_compile):
        decode = _with_constant_weights(decode, translator)
    return tf.function(decode, jit_compile=jit_compile, autograph=False)


def _with_constant_weights(decode, translator):
    """`decode` reading `translator`'s weights as constants of their values now, made by
    one `tf.function` that every trace of `decode` calls: the graph stores each weight
    once, and XLA compiles the call's constants into each program."""
    variables = list(translator.variables)
    values = [np.asarray(variable.numpy()) for variable in variables]
    weights = tf.function(lambda: [tf.constant(value) for value in values], autograph=False)

    def decode_with_constants(ids, length, shortlist_ids, **slots):
        with keras.StatelessScope(state_mapping=list(zip(variables, weights()))):
            return decode(ids, length, shortlist_ids, **slots)

    return decode_with_constants


CONSTANT_WEIGHTS_MAX_BYTES = 16 * 2**20


def fits_in_constants(translator, jit_compile):
    """Whether `decode_function(constant_weights=True)` compiles `translator`'s weights in
    as constants: under XLA (`jit_compile`), when they take at most
    `CONSTANT_WEIGHTS_MAX_BYTES`.

    Examples:
        >>> from kerasnmt import Translator, layers
        >>> translator = Translator(
        ...     layers.TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8)
        >>> fits_in_constants(translator, jit_compile=True), fits_in_constants(translator, False)
        (True, False)
    """
    size = sum(np.prod(variable.shape) * np.dtype(variable.dtype).itemsize
               for variable in translator.variables)
    return bool(jit_compile and size <= CONSTANT_WEIGHTS_MAX_BYTES)


def decode_chunk(decode, ids, length, shortlist=None, whole_vocabulary=None, **slots):
    """Decodes padded ids with `decode` (from `decode_function`), over their shortlist
    when there is one and it fits its width, else with `whole_vocabulary()` (by default
    `decode` over the whole vocabulary). Eagerly the choice is made in Python; in a graph
    (the SavedModel) both branches are traced, so a graph that decodes several widths
    passes a `whole_vocabulary` they share (`TranslateFunction`)."""
    if shortlist is None:
        return decode(ids, length, None, **slots)
    if whole_vocabulary is None:
        def whole_vocabulary():
            return decode(ids, length, None, **slots)
    shortlist_ids, fits = shortlist.padded_target_ids(ids)
    if tf.executing_eagerly():
        return decode(ids, length, shortlist_ids, **slots) if bool(fits) else whole_vocabulary()
    return tf.cond(fits, lambda: decode(ids, length, shortlist_ids, **slots), whole_vocabulary)
