"""Export a `Translator` as a CTranslate2 model directory (`pip install kerasnmt[ctranslate2]`).

[CTranslate2](https://opennmt.net/CTranslate2/) runs Transformer models on CPU (and GPU)
with its own kernels and quantization. `export_ctranslate2` builds a
`ctranslate2.specs.TransformerSpec` from the `Translator`'s weights, as CTranslate2's
OpenNMT-tf converter does for OpenNMT-tf's Transformer, and writes the directory
atomically (`kerasnmt.export.write_atomically`):

- `model.bin`, `config.json` and the vocabularies (`source_vocabulary.json` and
  `target_vocabulary.json`, or `shared_vocabulary.json`), written by CTranslate2: each
  vocabulary file's tokens followed by `<unk>`, the out-of-vocabulary id kerasnmt puts
  after them;
- `source_sentencepiece.model` and `target_sentencepiece.model` when the preprocessor
  tokenizes with SentencePiece;
- `translate_options.json` (`OPTIONS_FILE`): the `translate_batch` arguments that
  reproduce the decoding options (`translate_batch_options`), the decoding length limit
  and the tokenizers (`tokenizers`).

The weights map one to one: embeddings (scaled by `sqrt(num_units)` in both), the
sinusoidal positions (both count from 1) or the relative position tables (clipped
alike), the attention projections (the self-attention's query, key and value fused into
one, the cross-attention's key and value into one, as CTranslate2 stores them), the
feed-forward layers, the layer norms (pre-norm or post-norm, epsilon kept), the output
projection (the target embeddings when shared) and its bias. Alignments are the first
head of the last decoder layer's cross-attention in both (`return_attention=True`).
`ctranslate2.Translator.translate_batch` takes tokens: `tokenizers(path)` gives the
functions that turn text into them and back as the preprocessor does.

Refused before anything is written (`ValueError` naming each): a feed-forward activation
CTranslate2 lacks, a vocabulary that holds `<unk>` as a token of its own (CTranslate2
would map out-of-vocabulary tokens to it instead of kerasnmt's unknown id), layers
quantized by Keras (CTranslate2 quantizes the float weights itself), an unknown
`quantization`, and an output path that is not an empty directory without `force`.

Examples:
    >>> import tempfile, ctranslate2
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> from kerasnmt.models import Translator
    >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b", "c"])
    >>> translator = Translator(preprocessor, num_layers=1, num_units=8, num_heads=2,
    ...                         ffn_inner_dim=16, maximum_relative_position=4)
    >>> path = export_ctranslate2(translator, os.path.join(tempfile.mkdtemp(), "ct2"),
    ...                           sampler=BeamSampler(beam_size=1, max_length=6))
    >>> sorted(os.listdir(path))
    ['config.json', 'model.bin', 'shared_vocabulary.json', 'translate_options.json']
    >>> options = read_translate_options(path)
    >>> tokenize, detokenize = tokenizers(path)
    >>> tokens = tokenize("a b c")
    >>> result = ctranslate2.Translator(path).translate_batch(
    ...     [tokens], **translate_batch_options(options, len(tokens)))
    >>> detokenize(result[0].hypotheses[0]) == translator.translate(
    ...     ["a b c"], sampler=BeamSampler(beam_size=1, max_length=6), jit_compile=False)[0]
    True
"""

import json
import math
import os

import keras
import numpy as np

from kerasnmt.data.vocabulary import (
    PADDING_TOKEN,
    START_OF_SENTENCE_TOKEN,
    UNKNOWN_TOKEN,
)
from kerasnmt.export.directories import check_output, write_atomically
from kerasnmt.decoding.widths import (
    DEFAULT_LENGTH_OFFSET,
    DEFAULT_LENGTH_RATIO,
    DEFAULT_MAXIMUM_SOURCE_LENGTH,
    check_maximum_source_length,
)
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import SentencePieceTokenizer, WhitespaceTokenizer
from kerasnmt.models import Translator

# CTranslate2's weight types (`ct2-*-converter --quantization`).
QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16",
                 "bfloat16", "float32")
OPTIONS_FILE = "translate_options.json"
SENTENCEPIECE_FILES = {"source": "source_sentencepiece.model",
                       "target": "target_sentencepiece.model"}
# Keras activation names and their `ctranslate2.specs.common_spec.Activation` (Keras'
# "gelu" is the exact one; OpenNMT-tf's is the tanh approximation, GELUTanh).
_ACTIVATIONS = {"relu": "RELU", "gelu": "GELU", "silu": "SWISH", "tanh": "Tanh",
                "sigmoid": "Sigmoid"}


def export_ctranslate2(
    translator,
    path,
    quantization=None,
    sampler=None,
    maximum_source_length=DEFAULT_MAXIMUM_SOURCE_LENGTH,
    length_ratio=DEFAULT_LENGTH_RATIO,
    length_offset=DEFAULT_LENGTH_OFFSET,
    replace_unknown_target=False,
    force=False,
):
    """Writes `translator` as a CTranslate2 model directory at `path` (see the module doc).

    Args:
        translator: a `kerasnmt.Translator`.
        path: the directory to write; it must not exist or be empty, unless `force`.
        quantization: CTranslate2's weight type, one of `QUANTIZATIONS` (`"int8"`,
            `"int8_float32"`, `"int16"`, `"float16"`, ...); `None` keeps float32.
        sampler: the `BeamSampler` whose options `translate_options.json` keeps (default
            `BeamSampler()`): `beam_size`, `length_penalty`, `coverage_penalty`, `n_best`
            (`num_hypotheses`), `top_k` and `temperature` (`sampling_topk`,
            `sampling_temperature`), `max_length` and `min_length`
            (`max_decoding_length`, `min_decoding_length`).
        maximum_source_length: sources are cut to this many tokens (`max_input_length`).
        length_ratio: `a` of kerasnmt's decoding length limit `floor(a * n) + b`
            (`translate_batch_options` turns it into `max_decoding_length`).
        length_offset: `b` of that limit.
        replace_unknown_target: `replace_unknowns=True`.
        force: replace a `path` that is not an empty directory.

    Returns:
        `path`.

    Raises:
        ValueError: an unknown `quantization`, a `path` in the way, or a model option
            CTranslate2 cannot express (nothing is written).
        ImportError: `ctranslate2` is not installed.
    """
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}: CTranslate2 takes one of "
                         f"{', '.join(QUANTIZATIONS)}")
    check_maximum_source_length(maximum_source_length)
    check_output(path, force)
    spec = transformer_spec(translator)
    sampler = BeamSampler() if sampler is None else sampler
    options = {
        "translate_batch": {
            "beam_size": sampler.beam_size,
            "length_penalty": sampler.length_penalty,
            "coverage_penalty": sampler.coverage_penalty,
            "num_hypotheses": sampler.n_best,
            "sampling_topk": sampler.top_k,
            "sampling_temperature": sampler.temperature,
            # CTranslate2 adds </s> (add_source_eos) before it cuts to this length.
            "max_input_length": maximum_source_length + translator.backbone.source_eos,
            "max_decoding_length": sampler.max_length,
            "min_decoding_length": sampler.min_length,
            "replace_unknowns": replace_unknown_target,
        },
        "maximum_source_length": maximum_source_length,
        "decoding_length_ratio": length_ratio,
        "decoding_length_offset": length_offset,
    }
    preprocessor = translator.preprocessor
    sentencepiece_models = {}
    for side in ("source", "target"):
        tokenizer = getattr(preprocessor, f"{side}_tokenizer")
        if isinstance(tokenizer, SentencePieceTokenizer):
            sentencepiece_models[SENTENCEPIECE_FILES[side]] = tokenizer.proto
            options[f"{side}_tokenizer"] = {"type": "sentencepiece",
                                            "model": SENTENCEPIECE_FILES[side]}
        elif isinstance(tokenizer, WhitespaceTokenizer):
            options[f"{side}_tokenizer"] = {"type": "whitespace"}
        else:
            options[f"{side}_tokenizer"] = {"type": type(tokenizer).__name__}

    def write(directory):
        spec.optimize(quantization=quantization)
        spec.save(directory)
        for name, proto in sentencepiece_models.items():
            with open(os.path.join(directory, name), "wb") as file:
                file.write(proto)
        with open(os.path.join(directory, OPTIONS_FILE), "w", encoding="utf-8") as file:
            json.dump(options, file, indent=2)
            file.write("\n")

    write_atomically(write, os.fspath(path))
    return path


def transformer_spec(translator):
    """The `ctranslate2.specs.TransformerSpec` of `translator`, weights and vocabularies set
    and validated.

    Raises:
        ValueError: naming each option of the model that CTranslate2 cannot express.
        ImportError: `ctranslate2` is not installed.
    """
    if not isinstance(translator, Translator):
        raise TypeError(f"export_ctranslate2 takes a kerasnmt Translator, got "
                        f"{type(translator).__name__}")
    try:
        from ctranslate2.specs import TransformerSpec, common_spec  # noqa: PLC0415
    except ImportError as error:
        raise ImportError("exporting to CTranslate2 needs the ctranslate2 package: "
                          "pip install 'kerasnmt[ctranslate2]'") from error
    network = translator.backbone
    activation = keras.activations.serialize(network.ffn_activation)
    problems = []
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        problems.append(f"ffn_activation {activation!r} (CTranslate2's feed-forward "
                        f"activations are {', '.join(_ACTIVATIONS)})")
    preprocessor = translator.preprocessor
    vocabularies = {"source": preprocessor.source_vocabulary,
                    "target": preprocessor.target_vocabulary}
    for side, tokens in vocabularies.items():
        if UNKNOWN_TOKEN in tokens:
            problems.append(
                f"the {side} vocabulary holds {UNKNOWN_TOKEN} as a token of its own (line "
                f"{tokens.index(UNKNOWN_TOKEN) + 1}), where CTranslate2 needs it for the "
                "out-of-vocabulary id kerasnmt puts after the tokens"
            )
    quantized = translator.quantized_layers()
    if quantized:
        problems.append(f"layers quantized by Keras ({', '.join(quantized)}): export the "
                        "float model and pass quantization= instead")
    if problems:
        raise ValueError("cannot export to CTranslate2: " + "; ".join(problems))

    encoder, decoder = network.encoder, network.decoder
    spec = TransformerSpec.from_config(
        (encoder.num_layers, decoder.num_layers),
        network.num_heads,
        with_relative_position=network.maximum_relative_position is not None,
        pre_norm=network.pre_norm,
        activation=getattr(common_spec.Activation, _ACTIVATIONS[activation]),
    )
    spec.config.layer_norm_epsilon = encoder.layer_0.ffn_norm.epsilon
    spec.config.add_source_eos = network.source_eos
    for side, tokens in vocabularies.items():
        getattr(spec, f"register_{side}_vocabulary")(list(tokens) + [UNKNOWN_TOKEN])

    spec.encoder.embeddings[0].weight = _value(network.source_embedding.embeddings)
    for layer_spec, layer in zip(spec.encoder.layer, encoder.transformer_layers):
        _set_attention(layer_spec.self_attention, layer.self_attention,
                       layer.self_attention_norm, self_attention=True)
        _set_feed_forward(layer_spec.ffn, layer)
    spec.decoder.embeddings.weight = _value(network.target_embedding.embeddings)
    for layer_spec, layer in zip(spec.decoder.layer, decoder.transformer_layers):
        _set_attention(layer_spec.self_attention, layer.self_attention,
                       layer.self_attention_norm, self_attention=True)
        _set_attention(layer_spec.attention, layer.cross_attention,
                       layer.cross_attention_norm, self_attention=False)
        _set_feed_forward(layer_spec.ffn, layer)
    if network.pre_norm:
        _set_layer_norm(spec.encoder.layer_norm, encoder.output_norm)
        _set_layer_norm(spec.decoder.layer_norm, decoder.output_norm)
    if network.output_layer is None:
        spec.decoder.projection.weight = _value(network.target_embedding.embeddings)
        if network.output_bias is not None:
            spec.decoder.projection.bias = _value(network.output_bias)
    else:
        _set_linear(spec.decoder.projection, network.output_layer)
    spec.validate()
    return spec


def read_translate_options(path):
    """The decoding options an export wrote (`translate_options.json` of `path`)."""
    with open(os.path.join(path, OPTIONS_FILE), encoding="utf-8") as file:
        return json.load(file)


def translate_batch_options(options, source_length):
    """The `translate_batch` arguments that decode a source of `source_length` tokens as
    kerasnmt does.

    kerasnmt limits each translation to `min(max_length, max(min_length, floor(a * n) +
    b))` tokens, `n` the source length after the cut to `maximum_source_length`;
    CTranslate2 takes one `max_decoding_length` a batch. Batch sentences of one source
    length (or pass the longest, which only lets the others run longer) to get kerasnmt's
    limits.

    Args:
        options: `read_translate_options(path)`.
        source_length: the number of source tokens.

    Returns:
        `options["translate_batch"]` with that sentence's `max_decoding_length`.

    Examples:
        >>> options = {"translate_batch": {"max_decoding_length": 250, "min_decoding_length": 0},
        ...            "maximum_source_length": 256, "decoding_length_ratio": 2.0,
        ...            "decoding_length_offset": 10}
        >>> translate_batch_options(options, 7)["max_decoding_length"]  # 2 * 7 + 10
        24
        >>> translate_batch_options(options, 300)["max_decoding_length"]  # capped
        250
    """
    arguments = dict(options["translate_batch"])
    length = min(source_length, options["maximum_source_length"])
    # In float32, as kerasnmt.decoding.widths.decoding_length_limit computes it.
    scaled = math.floor(np.float32(options["decoding_length_ratio"]) * np.float32(length))
    limit = max(arguments["min_decoding_length"], scaled + options["decoding_length_offset"])
    arguments["max_decoding_length"] = min(arguments["max_decoding_length"], limit)
    return arguments


def tokenizers(path):
    """`(tokenize, detokenize)` for the CTranslate2 model an export wrote at `path`.

    `tokenize(text)` gives the source tokens as the preprocessor splits them (SentencePiece
    pieces, or whitespace-separated tokens); `detokenize(tokens)` the text of target
    tokens as kerasnmt gives it (without `<blank>` and `<s>`, which kerasnmt drops too).
    An empty or blank text gives no token: kerasnmt translates it to `""` without
    decoding it, so leave it out of the batch.

    Raises:
        ValueError: the preprocessor has another tokenizer (tokenize as it does).
    """
    options = read_translate_options(path)
    functions = []
    for side in ("source", "target"):
        tokenizer = options[f"{side}_tokenizer"]
        if tokenizer["type"] == "sentencepiece":
            import sentencepiece  # noqa: PLC0415 (only for SentencePiece models)

            processor = sentencepiece.SentencePieceProcessor(
                model_file=os.path.join(path, tokenizer["model"]))
            functions.append((lambda text, p=processor: p.encode(text, out_type=str),
                              lambda tokens, p=processor: p.decode_pieces(tokens)))
        elif tokenizer["type"] == "whitespace":
            functions.append((str.split, " ".join))
        else:
            raise ValueError(f"{path}: the {side} tokenizer is a {tokenizer['type']}: "
                             "tokenize as it does")
    tokenize, detokenize_target = functions[0][0], functions[1][1]

    def detokenize(tokens):
        return detokenize_target([token for token in tokens
                                  if token not in (PADDING_TOKEN, START_OF_SENTENCE_TOKEN)])

    return tokenize, detokenize


def _value(variable):
    return np.asarray(keras.ops.convert_to_numpy(variable), dtype=np.float32)


def _set_linear(spec, dense):
    """A Keras `Dense` (kernel `[in, out]`) as a CTranslate2 linear (weight `[out, in]`)."""
    _set_fused_linear(spec, [dense])


def _set_fused_linear(spec, layers):
    """Dense layers of one input as one linear whose outputs follow each other."""
    spec.weight = np.concatenate([_value(layer.kernel).T for layer in layers])
    if layers[0].use_bias:
        spec.bias = np.concatenate([_value(layer.bias) for layer in layers])


def _set_layer_norm(spec, norm):
    spec.gamma = _value(norm.gamma)
    spec.beta = _value(norm.beta)


def _set_attention(spec, attention, norm, self_attention):
    """A `RelativeMultiHeadAttention` and the layer norm of its block: CTranslate2 fuses
    the query, key and value projections of a self-attention, and the key and value
    projections of an attention over the encoder."""
    projections = [attention.query_dense, attention.key_dense, attention.value_dense]
    if self_attention:
        _set_fused_linear(spec.linear[0], projections)
    else:
        _set_linear(spec.linear[0], projections[0])
        _set_fused_linear(spec.linear[1], projections[1:])
    _set_linear(spec.linear[-1], attention.output_dense)
    if attention.maximum_relative_position is not None:
        spec.relative_position_keys = _value(attention.relative_position_keys)
        spec.relative_position_values = _value(attention.relative_position_values)
    _set_layer_norm(spec.layer_norm, norm)


def _set_feed_forward(spec, layer):
    _set_linear(spec.linear_0, layer.ffn.inner)
    _set_linear(spec.linear_1, layer.ffn.outer)
    _set_layer_norm(spec.layer_norm, layer.ffn_norm)


__all__ = [
    "OPTIONS_FILE",
    "QUANTIZATIONS",
    "SENTENCEPIECE_FILES",
    "check_output",
    "export_ctranslate2",
    "read_translate_options",
    "tokenizers",
    "transformer_spec",
    "translate_batch_options",
]
