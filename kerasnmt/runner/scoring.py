"""`kerasnmt evaluate`: translations scored against references (sacreBLEU)."""

from kerasnmt.evaluation import DEFAULT_LANGUAGE, score_files


def evaluate(hypotheses, references, lowercase=False, tokenize="13a",
             language=DEFAULT_LANGUAGE):
    """Score translations against references with BLEU and chrF2 (sacreBLEU).

    Both files are detokenized text, UTF-8, one sentence a line, line-aligned: score
    what a reader sees, not SentencePiece pieces or tokens (sacreBLEU tokenizes the
    text itself for BLEU). Prints corpus BLEU and chrF2, each with sacreBLEU's
    signature, which records the settings so that scores can be compared and
    reproduced; then BLEU as papers on Multi30k publish it ("BLEU tokenized lc"): both
    files lowercased, punctuation-normalized and tokenized with the Moses scripts for
    --language, then scored without further tokenization, with a signature that names
    these steps; then the detokenized BLEU's n-gram precisions, brevity penalty and
    lengths.

    Args:
        hypotheses: the translations to score
        references: the reference translations
        lowercase: compare lowercased text (recorded as case:lc in the signatures)
        tokenize: sacreBLEU's tokenizer for BLEU (its default is sacreBLEU's own)
        language: language of the translations, for the Moses tokenizer of the
            tokenized lowercased BLEU, as the Moses scripts' -l

    Returns:
        The `kerasnmt.evaluation.TranslationScores` printed.

    Raises:
        ValueError: naming both files when their line counts differ, or the file and line
            of a problem in one of them.

    Examples:
        >>> import os, tempfile
        >>> directory = tempfile.mkdtemp()
        >>> for name in ("hypotheses.de", "references.de"):
        ...     with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        ...         _ = file.write("Ein Hund läuft im Schnee .\\n")
        >>> scores = evaluate(*(os.path.join(directory, name)  # doctest: +ELLIPSIS
        ...                     for name in ("hypotheses.de", "references.de")))
        BLEU = 100.00 ...
        >>> round(scores.bleu, 2)
        100.0
    """
    scores = score_files(hypotheses, references, lowercase=lowercase, tokenize=tokenize,
                         language=language)
    print(scores)
    return scores
