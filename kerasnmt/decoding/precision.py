"""The precision a model decodes in: float32, whatever precision it was trained in.

Mixed precision (`train.mixed_precision`) is a training setting. On CPUs XLA decodes the
small products of a translation model 1.5 times slower in bfloat16 than in float32 (the
Multi30k tiny model's 1,000 test sentences, 2026-11-27; its SavedModel 1.45 times, on 2
cores with AVX-512 BF16, 2026-11-28), and a mixed policy keeps its
weights as float32 variables anyway. So the SavedModel (`kerasnmt.export`) and the
commands that decode a trained model (`kerasnmt translate`, `kerasnmt export`) use a
float32 copy of a model built in a mixed policy, as OpenNMT-tf exports float32 by default
and as CTranslate2's converter keeps float32 weights. `Translator.translate` itself
decodes in the model's own policy (the evaluations during training use it).

Examples:
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> from kerasnmt.models import Translator
    >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
    >>> trained = Translator(preprocessor, num_layers=1, num_units=8, num_heads=2,
    ...                      ffn_inner_dim=16, dtype="mixed_bfloat16")
    >>> decoding = float32_translator(trained)
    >>> trained.compute_dtype, decoding.compute_dtype
    ('bfloat16', 'float32')
    >>> float32_translator(decoding) is decoding
    True
"""


def float32_translator(translator):
    """`translator` itself when its dtype policy is float32, else a float32 copy with its
    weights (the same values: a mixed policy's variables are float32) and its
    preprocessor.

    Raises:
        ValueError: `translator` has quantized layers (`keras.Model.quantize`) and a mixed
            policy: its copy could not hold their weights; quantize a float32 copy instead.
    """
    if translator.dtype_policy.name == "float32":
        return translator
    quantized = translator.quantized_layers()
    if quantized:
        raise ValueError(
            f"{translator.name}: its dtype policy is {translator.dtype_policy.name} and "
            f"layers {quantized[:3]} are quantized: quantize a float32 copy instead "
            f"(float32_translator(model).quantize(...)) to decode or export it")
    backbone = translator.backbone
    config = translator.get_config()
    config.update(
        preprocessor=translator.preprocessor, dtype="float32",
        backbone=type(backbone).from_config(dict(backbone.get_config(), dtype="float32")))
    copy = type(translator)(**config)
    copy.set_weights(translator.get_weights())
    return copy
