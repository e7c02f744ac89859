"""The pieces of a run's model, each built from its configuration: the preprocessor, the
`Translator`, the sampler and the lexical shortlist of its decoding options.

Examples:
    >>> from kerasnmt.config import default_config
    >>> config = default_config()
    >>> build_sampler(config, n_best=2).get_config()["n_best"]
    2
    >>> sorted(decoding_options(config))
    ['length_offset', 'length_ratio', 'maximum_source_length']
"""

from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.decoding.beam_sampler import BeamSampler
from kerasnmt.layers import (
    SentencePieceTokenizer,
    TranslationPreprocessor,
    WhitespaceTokenizer,
)
from kerasnmt.models import Translator
from kerasnmt.models.transformer_backbone import ARCHITECTURE_ARGUMENTS
from kerasnmt.training.precision import choose_precision

# What a configuration must set to build a model.
MODEL_KEYS = ("data.source_vocabulary", "data.target_vocabulary")


def build_preprocessor(config):
    """The `TranslationPreprocessor` of `config["data"]` (see `preprocessor_of`)."""
    data = config["data"]
    return preprocessor_of(
        data["source_vocabulary"], data["target_vocabulary"],
        data["source_sentencepiece"], data["target_sentencepiece"],
        data["sentencepiece_sampling_alpha"],
    )


def preprocessor_of(source_vocabulary, target_vocabulary, source_sentencepiece=None,
                    target_sentencepiece=None, sentencepiece_sampling_alpha=None):
    """A `TranslationPreprocessor` of SentencePiece tokenizers (whitespace ones where no
    model is given; `sentencepiece_sampling_alpha` samples their segmentations in
    training) and the two vocabularies; no maximum lengths: training drops long pairs,
    serving truncates at export."""

    def tokenizer(model):
        if not model:
            return WhitespaceTokenizer()
        return SentencePieceTokenizer(model, sampling_alpha=sentencepiece_sampling_alpha)

    return TranslationPreprocessor(
        tokenizer(source_sentencepiece), tokenizer(target_sentencepiece),
        source_vocabulary, target_vocabulary,
    )


def run_precision(config):
    """The `Precision` (dtype policy and why) of `train.mixed_precision`, `auto` resolved
    for this machine (see `kerasnmt.training.precision.choose_precision`)."""
    train_section = config["train"]
    return choose_precision(train_section["mixed_precision"], tpu=train_section["tpu"] is not None)


def build_translator(config):
    """A new `Translator` shaped by `config["model"]` (and the loss options of `params`),
    in the dtype policy of `run_precision` when it is not float32."""
    model, params = config["model"], config["params"]
    options = {}
    policy = run_precision(config).policy
    if policy is not None:
        options["dtype"] = policy
    return Translator(
        build_preprocessor(config),
        **{key: model[key] for key in ARCHITECTURE_ARGUMENTS if key in model},
        label_smoothing=params["label_smoothing"],
        guided_alignment_type=params["guided_alignment_type"],
        guided_alignment_weight=params["guided_alignment_weight"],
        **options,
    )


def build_sampler(config, n_best=None):
    """The `BeamSampler` of the decoding options in `config["params"]`.

    Args:
        config: a checked configuration.
        n_best: hypotheses to return; default `params.num_hypotheses`.
    """
    params = config["params"]
    return BeamSampler(
        beam_size=params["beam_width"],
        length_penalty=params["length_penalty"],
        length_normalization=params["length_normalization"],
        freeze_finished_scores=params["freeze_finished_scores"],
        finished_hypotheses=params["finished_hypotheses"],
        coverage_penalty=params["coverage_penalty"],
        top_k=params["sampling_topk"],
        temperature=params["sampling_temperature"],
        n_best=params["num_hypotheses"] if n_best is None else n_best,
        max_length=params["maximum_decoding_length"],
        min_length=params["minimum_decoding_length"],
        seed=config["train"]["seed"],
        compact_batch=params["compact_batch"],
        early_exit=params["early_exit"],
    )


def build_shortlist(config, preprocessor, path=None):
    """The `LexicalShortlist` of `path`, else of `params.shortlist`, for `preprocessor`'s
    vocabularies (`params.shortlist_width` wide), or None. `config` may be None."""
    path = path or (config["params"]["shortlist"] if config else None)
    if path is None:
        return None
    width = {"width": config["params"]["shortlist_width"]} if config else {}
    return LexicalShortlist.load(path, preprocessor.source_vocabulary,
                                 preprocessor.target_vocabulary, **width)


def decoding_options(config):
    """The options of `Translator.translate` and `export_translator` that come from the
    configuration: the decoding length limit and the source cut (the longest sources the
    model was trained on, `train.maximum_features_length`, when it is set)."""
    options = {
        "length_ratio": config["params"]["decoding_length_ratio"],
        "length_offset": config["params"]["decoding_length_offset"],
    }
    maximum = config["train"]["maximum_features_length"]
    if maximum is not None:
        options["maximum_source_length"] = maximum
    return options
