"""`kerasnmt build-shortlist`: a lexical shortlist estimated from a run's training corpus."""

from kerasnmt.data.lexical_shortlist import LexicalShortlist, corpus_ids
from kerasnmt.runner.run_config import run_configuration
from kerasnmt.runner.run_model import MODEL_KEYS, build_preprocessor


def build_shortlist(config, output, per_source=20, frequent=100, minimum_probability=0.001,
                    iterations=5):
    """Estimates a lexical shortlist (IBM Model 1) from the training pairs of a run and
    writes it in CTranslate2's vmap format.

    Args:
        config: the run configuration (path or dictionary): its tokenizers, vocabularies
            and `data.train_features_file` / `data.train_labels_file`.
        output: the shortlist file to write.
        per_source: target tokens kept per source token.
        frequent: the most frequent target tokens, always allowed.
        minimum_probability: translations less probable than this are dropped.
        iterations: EM iterations of IBM Model 1.

    Returns:
        The `LexicalShortlist` written.

    Examples:
        >>> import inspect
        >>> list(inspect.signature(build_shortlist).parameters)[:2]
        ['config', 'output']
    """
    config = run_configuration(config, required=MODEL_KEYS + ("data.train_features_file",))
    preprocessor = build_preprocessor(config)
    data = config["data"]
    sources, targets = corpus_ids(
        data["train_features_file"], data["train_labels_file"], preprocessor
    )
    shortlist = LexicalShortlist.estimate(
        sources, targets, per_source=per_source, frequent=frequent,
        minimum_probability=minimum_probability, iterations=iterations,
    )
    shortlist.save(output, preprocessor.source_vocabulary, preprocessor.target_vocabulary)
    print(f"{len(sources)} sentence pairs: {len(shortlist.candidates)} source tokens, "
          f"{sum(map(len, shortlist.candidates.values()))} translations, "
          f"{len(shortlist.always)} target tokens always allowed; wrote {output}")
    return shortlist
