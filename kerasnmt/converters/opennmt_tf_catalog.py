"""OpenNMT-tf 2.x's catalogue of Transformer models, as `TransformerBackbone` arguments.

A checkpoint's variables give the layer counts, the sizes, the relative position tables,
the embeddings sharing and the layer norm order, but not the number of heads of an
absolute-position model, the dropout rates or the activation. `--model-type` names the
catalogue model (`onmt-main --model_type`) that fills them in; its values are checked
against the checkpoint's.
"""

from kerasnmt.converters.conversion_error import ConversionError

# OpenNMT-tf's `Transformer` constructor defaults, which every catalogue model starts from.
_TRANSFORMER = dict(
    num_layers=6, num_units=512, num_heads=8, ffn_inner_dim=2048, dropout=0.1,
    attention_dropout=0.1, ffn_dropout=0.1, maximum_relative_position=None, pre_norm=True,
    share_embeddings="none", use_output_bias=True,
)
_BIG = dict(num_units=1024, num_heads=16, ffn_inner_dim=4096)
# `share_embeddings=None`: OpenNMT-tf's level AUTO, which the checkpoint resolves.
_SCALING_NMT = dict(num_units=1024, num_heads=16, ffn_inner_dim=4096, pre_norm=False,
                    dropout=0.3, ffn_dropout=0.0, use_output_bias=False, share_embeddings=None)
# `opennmt.models.catalog`'s Transformer models (aliases included) and how each differs
# from `Transformer`.
MODEL_TYPES = {
    "Transformer": {},
    "TransformerBase": {},
    "TransformerBaseSharedEmbeddings": dict(share_embeddings="all"),
    "TransformerRelative": dict(maximum_relative_position=20),
    "TransformerBaseRelative": dict(maximum_relative_position=20),
    "TransformerBig": _BIG,
    "TransformerBigSharedEmbeddings": dict(_BIG, share_embeddings="all"),
    "TransformerBigRelative": dict(_BIG, maximum_relative_position=20),
    "TransformerTiny": dict(num_layers=2, num_units=64, num_heads=2, ffn_inner_dim=64),
    "ScalingNmtEnDe": _SCALING_NMT,
    "ScalingNmtEnFr": dict(_SCALING_NMT, dropout=0.1, attention_dropout=0.0),
}
# The catalogue's other models, outside the Transformer family kerasnmt holds.
_OTHER_MODEL_TYPES = ("ListenAttendSpell", "LuongAttention", "NMTBigV1", "NMTMediumV1",
                      "NMTSmallV1", "LstmCnnCrfTagger", "GPT2Small")
# OpenNMT-tf 2.x's layer normalizations are Keras' with its default epsilon.
LAYER_NORM_EPSILON = 1e-3
# What a checkpoint cannot tell, without a model type: `Transformer`'s values.
UNSTATED_DEFAULTS = {key: _TRANSFORMER[key]
                     for key in ("dropout", "attention_dropout", "ffn_dropout")}


def catalog_architecture(model_type):
    """The `TransformerBackbone` arguments of an OpenNMT-tf catalogue model.

    Args:
        model_type: a name of `MODEL_TYPES`.

    Returns:
        A dict of architecture arguments (`num_heads`, `dropout`, ...).

    Raises:
        ConversionError: a model outside the Transformer family, or an unknown name.

    Examples:
        >>> catalog_architecture("TransformerBigRelative")["num_heads"]
        16
        >>> catalog_architecture("NMTSmallV1")
        Traceback (most recent call last):
        ...
        kerasnmt.converters.conversion_error.ConversionError: --model-type NMTSmallV1: ...
    """
    if model_type in MODEL_TYPES:
        return dict(_TRANSFORMER, **MODEL_TYPES[model_type])
    if model_type in _OTHER_MODEL_TYPES:
        raise ConversionError(
            f"--model-type {model_type}: an OpenNMT-tf model outside the Transformer family "
            f"kerasnmt converts ({', '.join(MODEL_TYPES)})")
    raise ConversionError(f"--model-type {model_type}: not an OpenNMT-tf catalogue model "
                          f"kerasnmt converts; expected one of {', '.join(MODEL_TYPES)}")
