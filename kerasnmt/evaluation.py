"""Corpus-level BLEU and chrF of detokenized translations, with sacreBLEU and its signatures,
and BLEU as papers on Multi30k publish it (Moses-tokenized, lowercased text)."""

import dataclasses
import re

from sacrebleu.metrics import BLEU, CHRF

from kerasnmt.data import text_files

SENTENCEPIECE_MARKER = "\u2581"
BLEU_TOKENIZERS = tuple(BLEU.TOKENIZERS)
# A language code as the Moses scripts take it (`-l de`): sacremoses compares it as is
# (`lang == "en"` picks the English apostrophe rules), so "EN" or "english" would be
# tokenized half as English (the prefix lists) and half not (the apostrophes).
MOSES_LANGUAGE = re.compile(r"[a-z]{2,3}")
# The language of the text when none is given (`eval.target_language`, `--language`).
DEFAULT_LANGUAGE = "en"
# The scores a run can ask for by name (`eval.scorers`); `bleu` brings `bleu_tokenized_lc`.
SCORERS = ("bleu", "chrf")
# What `lowercase_and_moses_tokenize` does, in order, as its signatures name it.
MOSES_STEPS = "lc+norm+tok"


@dataclasses.dataclass(frozen=True)
class TranslationScores:
    """Corpus BLEU and chrF2 of a set of translations, with what makes them reproducible.

    Attributes:
        bleu: corpus BLEU of the detokenized text, 0 to 100.
        chrf: corpus chrF2 (character 6-grams, beta 2), 0 to 100.
        bleu_signature: sacreBLEU's signature of the BLEU settings, e.g.
            `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`.
        chrf_signature: sacreBLEU's signature of the chrF settings.
        bleu_details: sacreBLEU's line with the n-gram precisions, brevity penalty and
            lengths of `bleu`, e.g.
            `BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 ...)`.
        bleu_tokenized_lc: corpus BLEU as papers on Multi30k report it (multi-bleu.perl
            on the lowercased, Moses-tokenized files): both sides go through
            `lowercase_and_moses_tokenize`, then BLEU splits on spaces only, 0 to 100.
        bleu_tokenized_lc_signature: what was done for `bleu_tokenized_lc`: the Moses
            steps and language, then sacreBLEU's signature, e.g.
            `moses:lc+norm+tok|lang:de|nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0`.
    """

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    bleu_details: str
    bleu_tokenized_lc: float
    bleu_tokenized_lc_signature: str

    def __str__(self):
        return (
            f"BLEU = {self.bleu:.2f}  {self.bleu_signature}\n"
            f"BLEU tokenized lc = {self.bleu_tokenized_lc:.2f}  "
            f"{self.bleu_tokenized_lc_signature}\n"
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


def check_moses_language(language):
    """Returns `language` if it is a language code as the Moses tokenizer takes it (2 or 3
    lowercase letters: `en`, `de`, `fr`, `cs`, ...), else raises a `ValueError`.

    A code that sacremoses has no nonbreaking prefixes for (such as `ja`) is accepted: it
    uses the English ones, as `tokenizer.perl` does.
    """
    if not isinstance(language, str) or not MOSES_LANGUAGE.fullmatch(language):
        raise ValueError(
            f"expected a language code for the Moses tokenizer (2 or 3 lowercase letters "
            f"such as en, de, fr, cs), got {language!r}"
        )
    return language


def lowercase_and_moses_tokenize(lines, language=DEFAULT_LANGUAGE, escape=False):
    """The text that published Multi30k scores compare: each line lowercased, its
    punctuation normalized and tokenized with the Moses scripts (`sacremoses`), in the
    order of the Multi30k data set's own `scripts/task1-tokenize.sh`
    (`lowercase.perl | normalize-punctuation.perl -l L | tokenizer.perl -l L`, which
    made its `*.lc.norm.tok.*` files).

    On `test_2016_flickr` this reproduces the data set's `lc.norm.tok` references line
    for line, in German and in English. The order matters: tokenized before being
    lowercased, "seinen Bart." would keep its final period attached, `Bart` being on the
    English and German lists of abbreviations (nonbreaking prefixes); lowercased first,
    "bart" is not, and the period is split off, as in the data set's file.

    Unlike `tokenizer.perl`'s default, the tokens are not XML-escaped (`&` stays `&`,
    not `&amp;`) unless `escape`: escaping replaces each of `& | < > ' " [ ]` by its own
    entity inside the tokens, on both sides alike, without adding or removing a space, so
    the tokens match, and BLEU comes out the same, escaped or not; unescaped text is the
    one a reader can check. `normalize-punctuation.perl`'s quirks are kept (sacremoses'
    `perl_parity`: `’` becomes `"`), since the published references have them, and so is
    its end of line: Perl reads each line with its newline, on which the rule that moves
    a period after a closing quote (`."` to `".`, in every language but English) matches
    at the end of the line too.

    Args:
        lines: strings.
        language: the language of the text, as the Moses scripts' `-l` (default `en`,
            as theirs): it picks the nonbreaking prefixes (German keeps "10." in "die
            Nummer 10." as an ordinal), the apostrophe rules ("dog's" is "dog 's" in
            English, "dog ' s" in German) and the quotation rules.
        escape: XML-escape the tokens as `tokenizer.perl` does by default (`'` becomes
            `&apos;`), as the text Multi30k models are trained on (default False).

    Returns:
        A list of strings, tokens separated by single spaces.

    Raises:
        ValueError: `language` is not a language code (see `check_moses_language`).

    Examples:
        >>> line = "The dog's ball, a “toy” & more."
        >>> print(*lowercase_and_moses_tokenize([line]))
        the dog 's ball , a " toy " & more .
        >>> print(*lowercase_and_moses_tokenize([line], language="de"))
        the dog ' s ball , a " toy " & more .
        >>> lowercase_and_moses_tokenize(["Der Spieler trägt die Nummer 10."], language="de")
        ['der spieler trägt die nummer 10.']
        >>> lowercase_and_moses_tokenize(["Der Spieler trägt die Nummer 10."], language="en")
        ['der spieler trägt die nummer 10 .']
        >>> lowercase_and_moses_tokenize(['Es steht: "Komm."'], language="de", escape=True)
        ['es steht : &quot; komm &quot; .']
    """
    check_moses_language(language)
    # Imported here: sacremoses takes a third of a second to import, which every command
    # that imports this module (for its constants) would pay without scoring anything.
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    normalizer = MosesPunctNormalizer(lang=language, perl_parity=True)
    tokenizer = MosesTokenizer(lang=language)
    return [
        tokenizer.tokenize(
            normalizer.normalize(line.lower() + "\n"), return_str=True, escape=escape
        )
        for line in lines
    ]


def _corpus_bleu(hypotheses, references, tokenize, lowercase):
    """sacreBLEU's corpus BLEU of `hypotheses` against one reference each, tokenized with
    its `tokenize` (`none`: split on spaces only) and lowercased or not: the score (a
    `sacrebleu.metrics.bleu.BLEUScore`) and the signature of these settings. Every BLEU of
    this module is computed here.

    Examples:
        >>> score, signature = _corpus_bleu(["a b c d"], ["a b c d e"], "none", True)
        >>> round(score.score, 2), signature  # precisions 1, brevity penalty exp(1 - 5/4)
        (77.88, 'nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:...')
    """
    # `force`: text tokenized on purpose is not a mistake to warn about.
    bleu = BLEU(lowercase=lowercase, tokenize=tokenize, force=tokenize == "none")
    return bleu.corpus_score(hypotheses, [references]), str(bleu.get_signature())


def score_translations(hypotheses, references, lowercase=False, tokenize="13a",
                       language=DEFAULT_LANGUAGE):
    """Scores translations against one reference each with sacreBLEU's BLEU and chrF, and
    with BLEU as published on Multi30k.

    The metrics are computed over the whole corpus (n-gram counts summed over sentences,
    not sentence scores averaged). `bleu` and `chrf` take the detokenized text: sacreBLEU
    applies its own tokenization (`tokenize`) for BLEU, so that scores compare across
    systems. `bleu_tokenized_lc` is the score papers report: the text of both sides
    lowercased and Moses-tokenized (`lowercase_and_moses_tokenize`), then BLEU on those
    tokens with no further tokenization (multi-bleu.perl's way).

    Args:
        hypotheses: the translations, a list of strings.
        references: the reference translations, a list of strings in the same order.
        lowercase: compare lowercased text for `bleu` and `chrf` (recorded in the
            signatures as `case:lc`); `bleu_tokenized_lc` is always lowercased.
        tokenize: sacreBLEU's tokenizer for `bleu`: `13a` (its default, as
            `mteval-v13a`), `intl`, `char`, `none`, ... (recorded as `tok:` in the
            signature).
        language: the language of the translations, for the Moses tokenizer of
            `bleu_tokenized_lc` (default `en`, as the Moses scripts'; see
            `lowercase_and_moses_tokenize`).

    Returns:
        A `TranslationScores`.

    Raises:
        ValueError: no hypotheses, a different number of hypotheses and references, an
            unknown tokenizer or language code, or text that still holds SentencePiece
            pieces.

    Examples:
        >>> scores = score_translations(["the cat sat on the mat"], ["the cat sat on a mat"])
        >>> round(scores.bleu, 2)  # (5/6 * 3/5 * 2/4 * 1/3) ** (1/4), no brevity penalty
        53.73
        >>> scores.bleu_signature
        'nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:...'

        A translation that differs from its reference in case and in where punctuation
        attaches only. 13a splits ASCII punctuation off the words, not the quotes “ ”:
        the reference is 10 tokens, `Two dogs play with a “ball” in the snow .`, the
        translation 12, `two dogs play with a “ ball ” in the snow .`; `two`,
        `“`, `ball`, `”` match nothing, and the n-grams of the translation that match
        are 8 of 12, 6 of 11, 4 of 10 and 2 of 9 (`dogs play with a`, `in the snow .`),
        with no brevity penalty (12 > 10): BLEU = (8/12 * 6/11 * 4/10 * 2/9) ** (1/4)
        = (16/495) ** (1/4). Lowercased, normalized (“ ” become ") and Moses-tokenized,
        both are `two dogs play with a " ball " in the snow .`: BLEU 100.

        >>> scores = score_translations(["two dogs play with a “ ball ” in the snow."],
        ...                             ["Two dogs play with a “ball” in the snow."])
        >>> round(scores.bleu, 2), round(100 * (16 / 495) ** (1 / 4), 2)
        (42.4, 42.4)
        >>> round(scores.bleu_tokenized_lc, 2)
        100.0
        >>> scores.bleu_tokenized_lc_signature
        'moses:lc+norm+tok|lang:en|nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:...'
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
    check_moses_language(language)
    _check_detokenized(hypotheses, "hypothesis")
    _check_detokenized(references, "reference")
    bleu_score, bleu_signature = _corpus_bleu(hypotheses, references, tokenize, lowercase)
    # Lowercased already; sacreBLEU's `lowercase` changes nothing more but puts `case:lc`
    # in the signature.
    tokenized_score, tokenized_signature = _corpus_bleu(
        lowercase_and_moses_tokenize(hypotheses, language),
        lowercase_and_moses_tokenize(references, language),
        tokenize="none",
        lowercase=True,
    )
    chrf = CHRF(lowercase=lowercase)
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return TranslationScores(
        bleu=bleu_score.score,
        chrf=chrf_score.score,
        bleu_signature=bleu_signature,
        chrf_signature=str(chrf.get_signature()),
        bleu_details=str(bleu_score),
        bleu_tokenized_lc=tokenized_score.score,
        bleu_tokenized_lc_signature=f"moses:{MOSES_STEPS}|lang:{language}|{tokenized_signature}",
    )


def read_lines(path):
    """The lines of a UTF-8 text file (gzip-compressed if its name ends with `.gz`) as a
    list, without their line endings, split as `kerasnmt.data.read_lines` splits them.

    Raises:
        kerasnmt.data.CorpusError (a `ValueError`): naming the file, the line and the
            offending byte when a line is not valid UTF-8.
    """
    return [text for _, text in text_files.read_lines(path)]


def score_files(hypothesis_path, reference_path, lowercase=False, tokenize="13a",
                language=DEFAULT_LANGUAGE):
    """Scores a file of translations against a file of references, line by line.

    Args:
        hypothesis_path: detokenized translations, one a line, UTF-8.
        reference_path: references, one a line, in the same order.
        lowercase: see `score_translations`.
        tokenize: see `score_translations`.
        language: the language of the translations, for the Moses tokenizer of
            `bleu_tokenized_lc`; see `score_translations`.

    Returns:
        A `TranslationScores`.

    Raises:
        ValueError: naming both files and their line counts when these differ, or the
            file and line of a problem in one of them.
    """
    hypotheses, references = text_files.read_line_aligned(hypothesis_path, reference_path)
    try:
        return score_translations(hypotheses, references, lowercase=lowercase,
                                  tokenize=tokenize, language=language)
    except ValueError as error:
        raise ValueError(f"{hypothesis_path} against {reference_path}: {error}") from None
