import doctest
import math

import pytest

from kerasnmt import evaluation
from kerasnmt.evaluation import score_files, score_translations


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


def test_bad_inputs_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        score_translations(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no hypotheses"):
        score_translations([], [])
    with pytest.raises(ValueError, match="unknown sacreBLEU tokenizer 'moses'"):
        score_translations(["a"], ["a"], tokenize="moses")
    with pytest.raises(ValueError, match="hypothesis line 2 contains the SentencePiece marker"):
        score_translations(["Ein Hund.", "\u2581Ein \u2581Hund ."], ["Ein Hund.", "Ein Hund."])


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


def test_docstring_examples_run():
    results = doctest.testmod(evaluation, optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0 and results.failed == 0


def test_evaluate_command(tmp_path, capsys):
    from kerasnmt import cli

    hypotheses = tmp_path / "hyp.de"
    references = tmp_path / "ref.de"
    hypotheses.write_text("the cat sat on the mat\n", encoding="utf-8")
    references.write_text("the cat sat on a mat\n", encoding="utf-8")

    assert cli.main(["evaluate", str(hypotheses), str(references)]) == 0
    lines = capsys.readouterr().out.splitlines()
    bleu = 100 * geometric_mean([5 / 6, 3 / 5, 2 / 4, 1 / 3])
    assert lines[0].startswith(f"BLEU = {bleu:.2f}  nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|")
    assert lines[1].startswith("chrF2 = ") and "|nc:6|nw:0|space:no|" in lines[1]
    assert lines[2].startswith("BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000")

    options = ["--lowercase", "--tokenize", "intl"]
    assert cli.main(["evaluate", *options, str(hypotheses), str(references)]) == 0
    assert "case:lc|eff:no|tok:intl|" in capsys.readouterr().out

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
    for option in ["HYPOTHESES", "REFERENCES", "--lowercase", "--tokenize", "signature"]:
        assert option in help_text
