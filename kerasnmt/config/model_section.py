"""The `model` section of the run configuration: the architecture, whose defaults are the
backbone's (`TransformerBackbone`'s signature).

Examples:
    >>> MODEL_SECTION["maximum_relative_position"].default
    20
"""

from kerasnmt.config.option_types import Boolean, Choice, Integer, Layers, Number, Option
from kerasnmt.models.transformer_backbone import (
    ARCHITECTURE_DEFAULTS,
    EMBEDDINGS_INITIALIZERS,
    SHARE_EMBEDDINGS,
)


# The kind and meaning of each option, by `TransformerBackbone` argument (the option's
# name); the defaults are the backbone's.
_KINDS_AND_DOCS = {
    "num_layers": (
        Layers(),
        "Number of encoder and decoder layers, or `[encoder_layers, decoder_layers]`.",
    ),
    "num_units": (Integer(minimum=1), "Model width (embedding size)."),
    "num_heads": (Integer(minimum=1), "Attention heads; must divide `num_units`."),
    "ffn_inner_dim": (Integer(minimum=1), "Inner width of the feed-forward sublayers."),
    "dropout": (
        Number(0, 1, closed=(True, False)),
        "Dropout on the embeddings and on the output of each sublayer.",
    ),
    "attention_dropout": (Number(0, 1, closed=(True, False)), "Dropout on the attention weights."),
    "ffn_dropout": (
        Number(0, 1, closed=(True, False)),
        "Dropout after the activation of the feed-forward sublayers.",
    ),
    "maximum_relative_position": (
        Integer(minimum=1, nullable=True),
        "Clipping distance `k` of the relative position representations (Shaw et al., "
        "2018) in self-attention; null uses absolute sinusoidal position encodings instead.",
    ),
    "share_embeddings": (
        Choice(*SHARE_EMBEDDINGS),
        "Which embeddings share one matrix, as OpenNMT-tf's levels: `source_target_input` "
        "(source and target input embeddings), `target` (target input embeddings and "
        "output projection), `all` (all three; needs one joint vocabulary).",
    ),
    "pre_norm": (
        Boolean(),
        "Layer normalization before each sublayer (true) or after the residual (false).",
    ),
    "embeddings_initializer": (
        Choice(*EMBEDDINGS_INITIALIZERS),
        "`glorot_uniform` (OpenNMT-tf's) or `scaled_normal`: `N(0, num_units ** -0.5)`, as "
        "fairseq and Tensor2Tensor initialize embeddings (unit variance once scaled by "
        "`sqrt(num_units)`, as the sinusoidal position encodings).",
    ),
    "source_eos": (
        Boolean(),
        "The encoder reads `</s>` after each source's tokens, as fairseq's sources end "
        "(CTranslate2's `add_source_eos`); added inside the model, after preprocessing.",
    ),
    "use_output_bias": (
        Boolean(),
        "Whether the output projection has a bias (fairseq's has none).",
    ),
    "query_key_value_init_gain": (
        Number(minimum=0, closed=(False, True)),
        "Gain of the Glorot-uniform initialization of the attention query, key and value "
        "kernels: fairseq's 0.7071 (`1 / sqrt(2)`) gives the separate projections the "
        "scale of one fused `[D, 3D]` kernel.",
    ),
    "layer_norm_epsilon": (
        Number(minimum=0, closed=(False, True)),
        "Epsilon of the layer normalizations: 1e-6, or OpenNMT-tf 2.x's 1e-3 (Keras' "
        "default), which `kerasnmt convert opennmt-tf` writes for a converted model.",
    ),
}

MODEL_SECTION = {
    name: Option(ARCHITECTURE_DEFAULTS[name], kind, doc)
    for name, (kind, doc) in _KINDS_AND_DOCS.items()
}
