"""A tiny corpus and tiny Translators shared by the model tests (and their subprocesses)."""

import keras
import numpy as np
import tensorflow as tf

from kerasnmt.layers import TranslationPreprocessor, WhitespaceTokenizer
from kerasnmt.models import Translator

SOURCE_WORDS = "a b c d e f g h".split()
TARGET_WORDS = "A B C D E F G H".split()
SPECIALS = ["<blank>", "<s>", "</s>"]


def corpus(size=20, seed=0):
    """`size` pairs: a random source of 2-6 words and its reversed, capitalized target."""
    rng = np.random.default_rng(seed)
    sources, targets = [], []
    for _ in range(size):
        ids = rng.integers(0, len(SOURCE_WORDS), rng.integers(2, 7))
        sources.append(" ".join(SOURCE_WORDS[i] for i in ids))
        targets.append(" ".join(TARGET_WORDS[i] for i in ids[::-1]))
    return np.array(sources, dtype=object), np.array(targets, dtype=object)


def preprocessor(shared_vocabulary=False):
    source = SPECIALS + SOURCE_WORDS
    target = source if shared_vocabulary else SPECIALS + TARGET_WORDS
    return TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(), source, target)


def tiny_translator(seed=0, shared_vocabulary=False, **overrides):
    keras.utils.set_random_seed(seed)
    arguments = dict(
        num_layers=1,
        num_units=16,
        num_heads=2,
        ffn_inner_dim=32,
        dropout=0.0,
        attention_dropout=0.0,
        ffn_dropout=0.0,
        maximum_relative_position=4,
        label_smoothing=0.0,
    )
    arguments.update(overrides)
    return Translator(preprocessor(shared_vocabulary), **arguments)


def forbid_outside(translator, allowed):
    """Sets the output bias of every target id not in `allowed` to -1e9."""
    layer = translator.output_layer
    bias = translator.output_bias if layer is None else layer.bias
    forbidden = ~np.isin(np.arange(translator.backbone.target_vocabulary_size), allowed)
    bias.assign(np.where(forbidden, -1e9, bias.numpy()))


def fit_until_reproduced(translator, sources, targets, **fit_options):
    """Fits `translator` (compiled) on `sources` and `targets` until every target token has
    a teacher-forced probability above 0.9, or `fit_options["epochs"]` run out.

    Returns:
        Whether every target token's probability is then above 0.9.
    """
    features, labels = translator.preprocessor(
        tf.constant(list(sources)), tf.constant(list(targets)))
    inputs = {"source_ids": features["ids"], "source_length": features["length"],
              "target_ids": labels["ids"]}
    ids_out, lengths = labels["ids_out"].numpy(), labels["length"].numpy()
    teacher_forced = tf.function(lambda: tf.nn.softmax(translator(inputs)["logits"]))

    def reproduced():
        probabilities = teacher_forced().numpy()
        return all((probabilities[i, np.arange(n), ids_out[i, :n]] > 0.9).all()
                   for i, n in enumerate(lengths))

    class StopWhenEveryTargetIsReproduced(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = reproduced()

    translator.fit(sources, targets, verbose=0, callbacks=[StopWhenEveryTargetIsReproduced()],
                   **fit_options)
    return reproduced()
