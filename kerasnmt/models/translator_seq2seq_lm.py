"""A `Translator` as a keras-hub `Seq2SeqLM`: what a keras-hub preset of kerasnmt loads as.

`Translator` itself is not a `keras_hub.models.Seq2SeqLM`. keras-hub's `Task` tracks its
backbone as `backbone/...` and its preprocessor as a layer, where the Translator keeps both
out of Keras' and TensorFlow's tracking so that checkpoints and `.keras` files keep the
variable paths they have had since kerasnmt 0.1.0; `Task.__init__` compiles keras-hub's
defaults (Adam at 2e-5, a sparse cross-entropy), where the Translator's loss is its own
`compute_loss`; and keras-hub's `PipelineModel` (`Task`'s base) takes over `fit`,
`evaluate`, `predict` and `__call__` to run the preprocessor on each batch, where the
Translator preprocesses, buckets and batches raw strings inside `tf.data`.

`TranslatorSeq2SeqLM` is the thin keras-hub side instead: a functional `Seq2SeqLM`
(ids in, the backbone's logits out, as keras-hub's own tasks are), whose `backbone` is the `TransformerBackbone`, whose
`preprocessor` is the `TranslationPreprocessor` and whose `generate` runs kerasnmt's one
translate function (`Translator.translate`) with the decoding options it was made with.
Its `translator` is the `Translator` over the same backbone and preprocessor (the same
weights).
"""

import os

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from kerasnmt.data.string_arrays import string_array
from kerasnmt.decoding.beam_sampler import BeamSampler
from kerasnmt.decoding.translate import TRANSLATION_BATCH_SIZE
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
)
from kerasnmt.models.preset_layout import check_preset
from kerasnmt.models.transformer_backbone import TransformerBackbone
from kerasnmt.models.translator import Translator

# The arguments of `Translator.translate` a `TranslatorSeq2SeqLM` keeps for `generate`.
TRANSLATE_OPTIONS = ("batch_size", "replace_unknown_target", "jit_compile",
                     "maximum_source_length", "length_ratio", "length_offset")


@keras.saving.register_keras_serializable(package="kerasnmt")
class TranslatorSeq2SeqLM(keras_hub.models.Seq2SeqLM):
    """A kerasnmt `Translator` as a keras-hub `Seq2SeqLM`: `generate` translates raw text.

    What `keras_hub.models.Seq2SeqLM.from_preset` returns for a preset that kerasnmt
    wrote (`Translator.save_to_preset`, `kerasnmt export --format keras-hub`). `generate`
    is `translator.translate(inputs, sampler=beam_sampler, ...)` with the decoding options
    given here: the translations `kerasnmt translate` gives with the same options.
    `compile` does not change them (keras-hub's samplers do not run here); train the
    `translator` (`translator.compile()`, `translator.fit(...)`), which shares the weights.

    Args:
        backbone: the `TransformerBackbone`.
        preprocessor: the `TranslationPreprocessor` of its vocabularies.
        beam_sampler: the `kerasnmt.decoding.BeamSampler` of `generate` (default:
            `BeamSampler()`).
        label_smoothing: the `translator`'s (see `Translator`).
        guided_alignment_type: the `translator`'s.
        guided_alignment_weight: the `translator`'s.
        batch_size: sentences decoded together by `generate`.
        replace_unknown_target: as in `Translator.translate`.
        jit_compile: as in `Translator.translate`.
        maximum_source_length: as in `Translator.translate`.
        length_ratio: as in `Translator.translate`.
        length_offset: as in `Translator.translate`.
        **kwargs: passed to `keras_hub.models.Seq2SeqLM` (`name`, `dtype`; `compile`
            defaults to False).

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> translator = Translator(
        ...     TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]),
        ...     num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=16,
        ...     maximum_relative_position=4)
        >>> seq2seq_lm = TranslatorSeq2SeqLM.from_translator(
        ...     translator, BeamSampler(beam_size=2, max_length=3), jit_compile=False)
        >>> seq2seq_lm.generate(["a b", "b"]) == translator.translate(
        ...     ["a b", "b"], BeamSampler(beam_size=2, max_length=3), jit_compile=False)
        True
        >>> isinstance(seq2seq_lm.generate("a"), str)
        True
    """

    backbone_cls = TransformerBackbone

    def __init__(
        self,
        backbone,
        preprocessor,
        beam_sampler=None,
        label_smoothing=0.1,
        guided_alignment_type=None,
        guided_alignment_weight=1.0,
        batch_size=TRANSLATION_BATCH_SIZE,
        replace_unknown_target=False,
        jit_compile=True,
        maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
        length_ratio=DEFAULT_LENGTH_RATIO,
        length_offset=DEFAULT_LENGTH_OFFSET,
        compile=False,
        **kwargs,
    ):
        translator = Translator(
            preprocessor, backbone=backbone, label_smoothing=label_smoothing,
            guided_alignment_type=guided_alignment_type,
            guided_alignment_weight=guided_alignment_weight, dtype=backbone.dtype_policy)
        inputs = {
            "source_ids": keras.Input((None,), dtype="int32", name="source_ids"),
            "source_length": keras.Input((), dtype="int32", name="source_length"),
            "target_ids": keras.Input((None,), dtype="int32", name="target_ids"),
        }
        outputs = backbone(inputs)["logits"]
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.beam_sampler = beam_sampler if beam_sampler is not None else BeamSampler()
        super().__init__(inputs=inputs, outputs=outputs, compile=compile, **kwargs)
        # Untracked: its variables are the backbone's, which this model tracks already.
        object.__setattr__(self, "_translator", translator)
        self.translate_options = dict(
            batch_size=batch_size, replace_unknown_target=replace_unknown_target,
            jit_compile=jit_compile, maximum_source_length=maximum_source_length,
            length_ratio=length_ratio, length_offset=length_offset)

    @classmethod
    def from_translator(cls, translator, sampler=None, **translate_options):
        """The `TranslatorSeq2SeqLM` of `translator`'s backbone and preprocessor (its
        weights), whose `generate` decodes with `sampler` and `translate_options` (the
        arguments `TRANSLATE_OPTIONS` of `Translator.translate`)."""
        unknown = sorted(set(translate_options) - set(TRANSLATE_OPTIONS))
        if unknown:
            raise TypeError(f"TranslatorSeq2SeqLM.from_translator: unknown translate options "
                            f"{unknown} (it takes {', '.join(TRANSLATE_OPTIONS)})")
        return cls(
            translator.backbone, translator.preprocessor, beam_sampler=sampler,
            label_smoothing=translator.label_smoothing,
            guided_alignment_type=translator.guided_alignment_type,
            guided_alignment_weight=translator.guided_alignment_weight,
            name=translator.name, **translate_options)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """The model of a preset directory that kerasnmt wrote, checked first: a missing
        file, or one that another version or class wrote, is a `ValueError` naming it
        (`kerasnmt.models.preset_layout.check_preset`); then
        `keras_hub.models.Task.from_preset`."""
        check_preset(preset)
        return super().from_preset(os.fspath(preset), load_weights=load_weights, **kwargs)

    @property
    def translator(self):
        """The `kerasnmt.models.Translator` over this model's backbone and preprocessor."""
        return self._translator

    def generate(self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False):
        """Translates raw text with the decoding options of this model.

        Args:
            inputs: a sentence, a list (or 1-D array or string tensor) of sentences, or a
                `tf.data.Dataset` of them (batches are translated in turn).
            max_length: must be None: the decoding length limit is the `beam_sampler`'s
                `max_length` and the `length_ratio`/`length_offset` rule.
            stop_token_ids: must be "auto": decoding stops at `</s>`.
            strip_prompt: accepted for keras-hub's signature; a translation never holds
                its source, so there is nothing to strip.

        Returns:
            The translation of a sentence, or a list of them in input order.
        """
        if max_length is not None:
            raise ValueError(
                f"generate: max_length={max_length} does not apply to a kerasnmt "
                f"translator: its decoding length limit is beam_sampler.max_length "
                f"({self.beam_sampler.max_length}) and the length_ratio/length_offset rule")
        if not (isinstance(stop_token_ids, str) and stop_token_ids == "auto"):
            raise ValueError(f"generate: stop_token_ids={stop_token_ids!r} does not apply to "
                             "a kerasnmt translator, which stops at </s>: leave it 'auto'")
        del strip_prompt  # a translation never holds its source
        if isinstance(inputs, tf.data.Dataset):
            return [translation for batch in inputs.as_numpy_iterator()
                    for translation in self._translate(np.asarray(batch).reshape([-1]))]
        if isinstance(inputs, (str, bytes)):
            return self._translate(string_array([inputs], "inputs"))[0]
        if isinstance(inputs, (np.ndarray, tf.Tensor)) and len(inputs.shape) == 0:
            return self._translate(tf.reshape(tf.convert_to_tensor(inputs, tf.string), [1]))[0]
        return self._translate(string_array(inputs, "inputs"))

    def _translate(self, sentences):
        return self.translator.translate(sentences, sampler=self.beam_sampler,
                                         **self.translate_options)

    def get_config(self):
        config = super().get_config()
        config.update(
            beam_sampler=keras.saving.serialize_keras_object(self.beam_sampler),
            label_smoothing=self.translator.label_smoothing,
            guided_alignment_type=self.translator.guided_alignment_type,
            guided_alignment_weight=self.translator.guided_alignment_weight,
            **self.translate_options,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("beam_sampler"), dict):
            config["beam_sampler"] = keras.saving.deserialize_keras_object(
                config["beam_sampler"])
        return super().from_config(config)
