"""`kerasnmt evaluate`: translations scored against references (sacreBLEU)."""

from kerasnmt.evaluation import score_files


def evaluate(hypotheses, references, lowercase=False, tokenize="13a", language="en"):
    """Scores a file of translations against a file of references and prints the scores.

    Args:
        hypotheses: the translations, detokenized, one a line, UTF-8.
        references: the reference translations, line-aligned with `hypotheses`.
        lowercase: compare lowercased text.
        tokenize: sacreBLEU's tokenizer for BLEU.
        language: the language of the translations, for the Moses tokenizer of the
            tokenized lowercased BLEU.

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
