import math

import pytest

from kerasnmt.evaluation import (
    lowercase_and_moses_tokenize,
    score_files,
    score_translations,
)


def geometric_mean(values):
    return math.exp(sum(math.log(value) for value in values) / len(values))


def test_identical_translations_score_100():
    sentences = ["A man rides a bike.", "Zwei Hunde spielen im Schnee."]
    scores = score_translations(sentences, sentences)
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)


def test_bleu_of_one_sentence_by_hand():
    # Hypothesis "the cat sat on the mat", reference "the cat sat on a mat" (13a leaves
    # these words alone). Clipped n-gram matches over hypothesis n-grams:
    # 1-grams: the (1 of 2, clipped by the reference's single "the"), cat, sat, on, mat -> 5/6
    # 2-grams: the cat, cat sat, sat on (not: on the, the mat)                      -> 3/5
    # 3-grams: the cat sat, cat sat on                                              -> 2/4
    # 4-grams: the cat sat on                                                       -> 1/3
    # Both have 6 words: brevity penalty 1.
    expected = 100 * geometric_mean([5 / 6, 3 / 5, 2 / 4, 1 / 3])
    scores = score_translations(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert scores.bleu == pytest.approx(expected, abs=1e-9)
    assert round(expected, 2) == 53.73


def test_bleu_brevity_penalty_by_hand():
    # Every n-gram of "the cat sat on" is in the reference: precisions 4/4, 3/3, 2/2, 1/1.
    # Hypothesis length 4, reference length 6: BP = exp(1 - 6/4).
    scores = score_translations(["the cat sat on"], ["the cat sat on the mat"])
    assert scores.bleu == pytest.approx(100 * math.exp(1 - 6 / 4), abs=1e-9)


def test_bleu_sums_counts_over_the_corpus():
    # The two sentences above together: matches and totals add up per order,
    # (5+4)/(6+4), (3+3)/(5+3), (2+2)/(4+2), (1+1)/(3+1); lengths 10 against 12.
    scores = score_translations(
        ["the cat sat on the mat", "the cat sat on"],
        ["the cat sat on a mat", "the cat sat on the mat"],
    )
    expected = 100 * math.exp(1 - 12 / 10) * geometric_mean([9 / 10, 6 / 8, 4 / 6, 2 / 4])
    assert scores.bleu == pytest.approx(expected, abs=1e-9)
    # Not the mean of the two sentence scores (53.73 and 60.65).
    assert scores.bleu == pytest.approx(56.39, abs=0.005)


def test_chrf_by_hand():
    # chrF2 of "Hallo" against "Hallo!" (spaces play no part). For n = 1..5 every
    # hypothesis character n-gram is in the reference: precision 1; the reference has one
    # more n-gram than the hypothesis: recall (6 - n) / (7 - n). The hypothesis has no
    # 6-gram, so only 5 orders count. sacreBLEU 2 averages precision and recall over
    # those orders, then F_beta with beta = 2: (1 + 4) P R / (4 P + R).
    precision = 1.0
    recall = sum((6 - n) / (7 - n) for n in range(1, 6)) / 5
    expected = 100 * 5 * precision * recall / (4 * precision + recall)
    scores = score_translations(["Hallo"], ["Hallo!"])
    assert scores.chrf == pytest.approx(expected, abs=1e-9)
    assert round(expected, 2) == 75.37


def test_signatures_record_the_settings():
    scores = score_translations(["Ein Hund."], ["Ein Hund läuft."])
    assert scores.bleu_signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert scores.chrf_signature.startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|")
    lowercased = score_translations(
        ["ein hund läuft im park."], ["Ein Hund läuft im Park."], lowercase=True, tokenize="intl"
    )
    assert lowercased.bleu == pytest.approx(100.0)
    assert "case:lc" in lowercased.bleu_signature and "tok:intl" in lowercased.bleu_signature
    assert "case:lc" in lowercased.chrf_signature
    assert "BLEU = " in scores.bleu_details and "BP = " in scores.bleu_details
    printed = str(scores)
    assert scores.bleu_signature in printed and scores.chrf_signature in printed
    assert (f"BLEU tokenized lc = {scores.bleu_tokenized_lc:.2f}  "
            f"{scores.bleu_tokenized_lc_signature}\n") in printed


def test_bad_inputs_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        score_translations(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no hypotheses"):
        score_translations([], [])
    with pytest.raises(ValueError, match="unknown sacreBLEU tokenizer 'moses'"):
        score_translations(["a"], ["a"], tokenize="moses")
    with pytest.raises(ValueError, match="hypothesis line 2 contains the SentencePiece marker"):
        score_translations(["Ein Hund.", "\u2581Ein \u2581Hund ."], ["Ein Hund.", "Ein Hund."])


def test_moses_tokenization_by_hand():
    # Lowercased first, then Moses: "," and the final "." split off, the quotes “ ”
    # normalized to " and split off, "&" left unescaped (tokenizer.perl would write &amp;),
    # and English splits "dog's" before the apostrophe.
    line = "The dog's ball, a “Toy” & more."
    assert lowercase_and_moses_tokenize([line]) == ['the dog \'s ball , a " toy " & more .']
    # German has no English apostrophe rule: the apostrophe stands alone.
    assert lowercase_and_moses_tokenize([line], language="de") == [
        'the dog \' s ball , a " toy " & more .']


def test_moses_tokenization_lowercases_before_tokenizing():
    # From Multi30k's test_2016_flickr.de, line 369. "Bart" is on the German (and English)
    # lists of nonbreaking prefixes, "bart" is not: tokenized first, the period would stay
    # attached ("bart."); the data set's lc.norm.tok file, made by lowercase.perl before
    # tokenizer.perl, has "bart .".
    assert lowercase_and_moses_tokenize(
        ["Ein Mann mit ergrauenden Haaren rasiert seinen Bart."], language="de"
    ) == ["ein mann mit ergrauenden haaren rasiert seinen bart ."]


def test_moses_normalization_keeps_the_quirks_of_the_perl_script():
    # From Multi30k's val.fr, line 861: normalize-punctuation.perl turns ’ into ", and the
    # data set's val.lc.norm.tok.fr has "coup d &quot; œil" (sacremoses' default would
    # give "coup d' œil").
    assert lowercase_and_moses_tokenize(
        ["Une femme jette un coup d’œil dans un télescope dans les bois."], language="fr"
    ) == ['une femme jette un coup d " œil dans un télescope dans les bois .']


def test_moses_normalization_moves_a_final_period_after_the_quote_as_perl_does():
    # From Multi30k's val.de, line 656. normalize-punctuation.perl (-l de) moves a period
    # out of closing quotes when a character follows them; Perl reads the line with its
    # newline, so the rule applies at the end of the line too: the data set's
    # val.lc.norm.tok.de (and Wu et al.'s valid.de) end with "tea &quot; .".
    line = ("Ein Mann in einem blauen Hemd hält ein Schild, auf dem steht: „Come on now ... "
            "what's gayer than tea.“")
    assert lowercase_and_moses_tokenize([line], language="de", escape=True) == [
        "ein mann in einem blauen hemd hält ein schild , auf dem steht : &quot; come on now "
        "... what &apos; s gayer than tea &quot; ."]


def test_published_bleu_differs_from_detokenized_bleu_by_hand():
    # Only case and the attachment of the quotes “ ” differ. 13a leaves non-ASCII
    # punctuation attached: reference "Two dogs play with a “ball” in the snow ." (10
    # tokens), hypothesis "two dogs play with a “ ball ” in the snow ." (12 tokens).
    # Matching hypothesis n-grams: 1-grams all but "two" "“" "ball" "”" -> 8/12; 2-grams dogs
    # play, play with, with a, in the, the snow, snow . -> 6/11; 3-grams dogs play with,
    # play with a, in the snow, the snow . -> 4/10; 4-grams dogs play with a, in the snow .
    # -> 2/9; no brevity penalty (12 > 10).
    # Lowercased and Moses-tokenized (“ ” normalized to "), both are
    # 'two dogs play with a " ball " in the snow .': BLEU 100.
    scores = score_translations(["two dogs play with a “ ball ” in the snow."],
                                ["Two dogs play with a “ball” in the snow."])
    expected = 100 * geometric_mean([8 / 12, 6 / 11, 4 / 10, 2 / 9])
    assert scores.bleu == pytest.approx(expected, abs=1e-9)
    assert round(expected, 2) == 42.40
    assert scores.bleu_tokenized_lc == pytest.approx(100.0)
    assert scores.bleu_tokenized_lc_signature.startswith(
        "moses:lc+norm+tok|lang:en|nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:")
    # The detokenized scores keep their own settings.
    assert scores.bleu_signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|")


def test_published_bleu_counts_moses_tokens_by_hand():
    # Reference "The dog's ball is red." and hypothesis "the dog's ball is blue.":
    # English Moses tokens "the dog 's ball is red ." against "... blue ." (7 each):
    # matches 6/7, 4/6 (the dog, dog 's, 's ball, ball is), 3/5, 2/4.
    scores = score_translations(["the dog's ball is blue."], ["The dog's ball is red."])
    assert scores.bleu_tokenized_lc == pytest.approx(
        100 * geometric_mean([6 / 7, 4 / 6, 3 / 5, 2 / 4]), abs=1e-9)
    # German splits "dog ' s" (8 tokens each): 7/8, 5/7, 4/6, 3/5, whose product is 1/4.
    german = score_translations(["the dog's ball is blue."], ["The dog's ball is red."],
                                language="de")
    assert german.bleu_tokenized_lc == pytest.approx(100 * 0.25 ** 0.25, abs=1e-9)
    assert "|lang:de|" in german.bleu_tokenized_lc_signature
    # The language plays no part in the detokenized scores.
    assert (german.bleu, german.chrf) == (scores.bleu, scores.chrf)


def test_the_language_picks_the_nonbreaking_prefixes():
    # German lists the numbers as nonbreaking prefixes (ordinals: "am 10. Mai"), so a
    # sentence-final "10." keeps its period; English splits it off. Multi30k's own
    # tokenized German test set has "... mit der nummer 10." this way.
    # German: reference "der spieler trägt die nummer 10." (6 tokens), hypothesis without
    # the period, "... nummer 10" (6): 5/6, 4/5, 3/4, 2/3, product 1/3, no brevity penalty.
    # English: reference "... nummer 10 ." (7 tokens), hypothesis "... nummer 10" (6): every
    # n-gram matches, brevity penalty exp(1 - 7/6).
    hypothesis = ["Der Spieler trägt die Nummer 10"]
    reference = ["Der Spieler trägt die Nummer 10."]
    german = score_translations(hypothesis, reference, language="de")
    english = score_translations(hypothesis, reference, language="en")
    assert german.bleu_tokenized_lc == pytest.approx(100 * (1 / 3) ** 0.25, abs=1e-9)
    assert english.bleu_tokenized_lc == pytest.approx(100 * math.exp(1 - 7 / 6), abs=1e-9)
    assert round(german.bleu_tokenized_lc, 2) == 75.98
    assert round(english.bleu_tokenized_lc, 2) == 84.65


def test_published_bleu_matches_moses_escaped_text_and_sacrebleu():
    # The independent reference: the Moses pipeline of Multi30k's task1-tokenize.sh with
    # tokenizer.perl's default XML escaping (&amp; &apos; &quot; ...), called here through
    # sacremoses, and multi-bleu-style BLEU through sacreBLEU. Escaping changes no token
    # boundary, so the score is the one of the unescaped text.
    from sacrebleu.metrics import BLEU
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    hypotheses = ["A dog & a cat's toy [red] <ok>.", "He said \"hi\" | twice.", "Nothing."]
    references = ["A dog & the cat's toy [red] <ok>.", "He said \"hello\" | twice.",
                  "Nothing at all."]
    normalizer, tokenizer = MosesPunctNormalizer(lang="en", perl_parity=True), MosesTokenizer()

    def moses(lines):
        return [tokenizer.tokenize(normalizer.normalize(line.lower()), return_str=True)
                for line in lines]

    assert "&amp;" in moses(hypotheses)[0] and "&apos;" in moses(hypotheses)[0]
    expected = BLEU(tokenize="none", force=True).corpus_score(
        moses(hypotheses), [moses(references)]).score
    scores = score_translations(hypotheses, references)
    assert scores.bleu_tokenized_lc == pytest.approx(expected, abs=1e-9)
    assert 0 < expected < 100


def test_language_codes_are_checked():
    with pytest.raises(ValueError, match=r"language code .* got 'EN'"):
        score_translations(["a"], ["a"], language="EN")
    with pytest.raises(ValueError, match=r"got 'german'"):
        lowercase_and_moses_tokenize(["a"], language="german")


def test_score_files(tmp_path):
    hypotheses = tmp_path / "hyp.de"
    references = tmp_path / "ref.de"
    hypotheses.write_text("the cat sat on the mat\nthe cat sat on\n", encoding="utf-8")
    references.write_text("the cat sat on a mat\r\nthe cat sat on the mat\r\n", encoding="utf-8")
    from_files = score_files(hypotheses, references)
    from_lists = score_translations(
        ["the cat sat on the mat", "the cat sat on"],
        ["the cat sat on a mat", "the cat sat on the mat"],
    )
    assert from_files == from_lists

    references.write_text("one line\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"hyp.de has 2 lines but .*ref.de has 1"):
        score_files(hypotheses, references)

    references.write_bytes(b"the cat\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match=r"ref.de, line 2: not valid UTF-8"):
        score_files(hypotheses, references)


def test_evaluate_command(tmp_path, capsys):
    from kerasnmt import cli

    hypotheses = tmp_path / "hyp.de"
    references = tmp_path / "ref.de"
    hypotheses.write_text("the cat sat on the mat\n", encoding="utf-8")
    references.write_text("the cat sat on a mat\n", encoding="utf-8")

    assert cli.main(["evaluate", str(hypotheses), str(references)]) == 0
    lines = capsys.readouterr().out.splitlines()
    bleu = 100 * geometric_mean([5 / 6, 3 / 5, 2 / 4, 1 / 3])
    assert len(lines) == 4
    assert lines[0].startswith(f"BLEU = {bleu:.2f}  nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|")
    # Lowercase words without punctuation: Moses changes nothing, the same BLEU.
    assert lines[1].startswith(f"BLEU tokenized lc = {bleu:.2f}  moses:lc+norm+tok|lang:en|"
                               "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|")
    assert lines[2].startswith("chrF2 = ") and "|nc:6|nw:0|space:no|" in lines[2]
    assert lines[3].startswith("BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000")

    options = ["--lowercase", "--tokenize", "intl"]
    assert cli.main(["evaluate", *options, str(hypotheses), str(references)]) == 0
    assert "case:lc|eff:no|tok:intl|" in capsys.readouterr().out

    # The German final ordinal "10." (see test_the_language_picks_the_nonbreaking_prefixes):
    # --language reaches the Moses tokenizer, and only the tokenized score.
    hypotheses.write_text("Der Spieler trägt die Nummer 10\n", encoding="utf-8")
    references.write_text("Der Spieler trägt die Nummer 10.\n", encoding="utf-8")
    printed = {}
    for language in ("de", "en"):
        assert cli.main(["evaluate", "--language", language, str(hypotheses),
                         str(references)]) == 0
        printed[language] = capsys.readouterr().out.splitlines()
    assert printed["de"][1].startswith("BLEU tokenized lc = 75.98  moses:lc+norm+tok|lang:de|")
    assert printed["en"][1].startswith("BLEU tokenized lc = 84.65  moses:lc+norm+tok|lang:en|")
    assert printed["de"][0] == printed["en"][0] and printed["de"][2] == printed["en"][2]

    references.write_text("one\ntwo\n", encoding="utf-8")
    assert cli.main(["evaluate", str(hypotheses), str(references)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("kerasnmt evaluate: error: ") and "has 1 lines but" in error
    assert error.count("\n") == 1

    assert cli.main(["evaluate", str(hypotheses), str(tmp_path / "absent.de")]) == 2
    assert "absent.de" in capsys.readouterr().err

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    for option in ["HYPOTHESES", "REFERENCES", "--lowercase", "--tokenize", "signature",
                   "--language", "Moses"]:
        assert option in help_text
