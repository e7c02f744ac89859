"""Corpus-level BLEU and chrF of detokenized translations, with sacreBLEU and its signatures."""

import dataclasses

from sacrebleu.metrics import BLEU, CHRF

from kerasnmt.data import text_files

SENTENCEPIECE_MARKER = "\u2581"
BLEU_TOKENIZERS = tuple(BLEU.TOKENIZERS)


@dataclasses.dataclass(frozen=True)
class TranslationScores:
    """Corpus BLEU and chrF2 of a set of translations, with what makes them reproducible.

    Attributes:
        bleu: corpus BLEU, 0 to 100.
        chrf: corpus chrF2 (character 6-grams, beta 2), 0 to 100.
        bleu_signature: sacreBLEU's signature of the BLEU settings, e.g.
            `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`.
        chrf_signature: sacreBLEU's signature of the chrF settings.
        bleu_details: sacreBLEU's line with the n-gram precisions, brevity penalty and
            lengths, e.g. `BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 ...)`.
    """

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    bleu_details: str

    def __str__(self):
        return (
            f"BLEU = {self.bleu:.2f}  {self.bleu_signature}\n"
            f"chrF2 = {self.chrf:.2f}  {self.chrf_signature}\n"
            f"{self.bleu_details}"
        )


def _check_detokenized(lines, role):
    for line_number, line in enumerate(lines, start=1):
        if SENTENCEPIECE_MARKER in line:
            raise ValueError(
                f"{role} line {line_number} contains the SentencePiece marker "
                f"{SENTENCEPIECE_MARKER!r}: score detokenized text, not pieces: {line!r}"
            )


def score_translations(hypotheses, references, lowercase=False, tokenize="13a"):
    """Scores translations against one reference each with sacreBLEU's BLEU and chrF.

    Both metrics are computed over the whole corpus (n-gram counts summed over sentences,
    not sentence scores averaged), on detokenized text: sacreBLEU applies its own
    tokenization (`tokenize`) for BLEU, so that scores compare across systems.

    Args:
        hypotheses: the translations, a list of strings.
        references: the reference translations, a list of strings in the same order.
        lowercase: compare lowercased text (recorded in the signatures as `case:lc`).
        tokenize: sacreBLEU's BLEU tokenizer: `13a` (its default, as `mteval-v13a`),
            `intl`, `char`, `none`, ... (recorded as `tok:` in the signature).

    Returns:
        A `TranslationScores`.

    Raises:
        ValueError: no hypotheses, a different number of hypotheses and references, an
            unknown tokenizer, or text that still holds SentencePiece pieces.

    Examples:
        >>> scores = score_translations(["the cat sat on the mat"], ["the cat sat on a mat"])
        >>> round(scores.bleu, 2)  # (5/6 * 3/5 * 2/4 * 1/3) ** (1/4), no brevity penalty
        53.73
        >>> scores.bleu_signature
        'nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:...'
    """
    hypotheses, references = list(hypotheses), list(references)
    if not hypotheses:
        raise ValueError("no hypotheses to score")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: "
            "each hypothesis needs exactly one reference"
        )
    if tokenize not in BLEU_TOKENIZERS:
        raise ValueError(
            f"unknown sacreBLEU tokenizer {tokenize!r}; choose one of {', '.join(BLEU_TOKENIZERS)}"
        )
    _check_detokenized(hypotheses, "hypothesis")
    _check_detokenized(references, "reference")
    bleu = BLEU(lowercase=lowercase, tokenize=tokenize)
    chrf = CHRF(lowercase=lowercase)
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return TranslationScores(
        bleu=bleu_score.score,
        chrf=chrf_score.score,
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        bleu_details=str(bleu_score),
    )


def read_lines(path):
    """The lines of a UTF-8 text file (gzip-compressed if its name ends with `.gz`) as a
    list, without their line endings, split as `kerasnmt.data.read_lines` splits them.

    Raises:
        kerasnmt.data.CorpusError (a `ValueError`): naming the file, the line and the
            offending byte when a line is not valid UTF-8.
    """
    return [text for _, text in text_files.read_lines(path)]


def score_files(hypothesis_path, reference_path, lowercase=False, tokenize="13a"):
    """Scores a file of translations against a file of references, line by line.

    Args:
        hypothesis_path: detokenized translations, one a line, UTF-8.
        reference_path: references, one a line, in the same order.
        lowercase: see `score_translations`.
        tokenize: see `score_translations`.

    Returns:
        A `TranslationScores`.

    Raises:
        ValueError: naming both files and their line counts when these differ, or the
            file and line of a problem in one of them.
    """
    hypotheses, references = text_files.read_line_aligned(hypothesis_path, reference_path)
    try:
        return score_translations(hypotheses, references, lowercase=lowercase, tokenize=tokenize)
    except ValueError as error:
        raise ValueError(f"{hypothesis_path} against {reference_path}: {error}") from None
