import pytest

from kerasnmt.data.lexical_shortlist import LexicalShortlist, corpus_ids, ibm_model_1
from kerasnmt.data.text_files import CorpusError
from tests.models.translator_fixtures import preprocessor

# Koehn's "Statistical Machine Translation" (2010), section 4.2: das Haus / the house, ...
# Source ids: das 3, Haus 4, Buch 5, ein 6; target ids: the 3, house 4, book 5, a 6.
SOURCES = [[3, 4], [3, 5], [6, 5]]
TARGETS = [[3, 4], [3, 5], [6, 5]]


def reference_ibm_model_1(sources, targets, iterations):
    """IBM Model 1 EM written out as in the textbook (NULL is None)."""
    pairs = {(f, e) for fs, es in zip(sources, targets) for f in [None, *fs] for e in es}
    t = dict.fromkeys(pairs, 1.0)
    for _ in range(iterations):
        count, total = dict.fromkeys(pairs, 0.0), {}
        for fs, es in zip(sources, targets):
            for e in es:
                z = sum(t[f, e] for f in [None, *fs])
                for f in [None, *fs]:
                    count[f, e] += t[f, e] / z
                    total[f] = total.get(f, 0.0) + t[f, e] / z
        t = {(f, e): count[f, e] / total[f] for f, e in pairs}
    return t


@pytest.mark.parametrize("iterations", [1, 2, 10])
def test_ibm_model_1_equals_the_textbook_em(iterations):
    source, target, probability = ibm_model_1(SOURCES, TARGETS, iterations)
    expected = reference_ibm_model_1(SOURCES, TARGETS, iterations)
    got = {(None if f == -1 else int(f), int(e)): p for f, e, p in
           zip(source, target, probability)}
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value), key


def test_ibm_model_1_learns_the_translations():
    source, target, probability = ibm_model_1(SOURCES, TARGETS, iterations=30)
    t = {(int(f), int(e)): p for f, e, p in zip(source, target, probability)}
    assert t[4, 4] > 0.9 and t[5, 5] > 0.9 and t[6, 6] > 0.9  # Haus -> house, ...
    assert t[4, 3] < 0.1  # Haus -> the


def test_ibm_model_1_rejects_a_different_number_of_sentences():
    with pytest.raises(ValueError, match="3 source sentences but 2 target"):
        ibm_model_1(SOURCES, TARGETS[:2])


def test_estimate_keeps_the_most_probable_translations_and_frequent_tokens():
    # "x" (7) always with X (7) and once with Y (8): t(X|x) > t(Y|x).
    sources = [[7], [7], [7, 9], [9]]
    targets = [[7], [7], [8, 10], [10]]
    shortlist = LexicalShortlist.estimate(sources, targets, per_source=1, frequent=1,
                                          iterations=20)
    assert shortlist.candidates == {7: [7], 9: [10]}
    assert shortlist.always == [0, 1, 2, 7]  # specials and the most frequent target token
    everything = LexicalShortlist.estimate(sources, targets, per_source=5, frequent=0,
                                           minimum_probability=0.0, iterations=20)
    assert everything.candidates == {7: [7, 8, 10], 9: [8, 10]}
    assert everything.always == [0, 1, 2]


def test_a_batch_gets_the_union_of_its_source_tokens_shortlists():
    shortlist = LexicalShortlist({3: [10, 4], 5: [9], 0: [11]}, always=[6], width=8)
    assert shortlist.target_ids([[3, 3, 0], [7, 0, 0]]).numpy().tolist() == [0, 1, 2, 4, 6, 10]
    ids, fits = shortlist.padded_target_ids([[5, 3]])
    assert ids.numpy().tolist() == [0, 1, 2, 4, 6, 9, 10, -1] and fits
    ids, fits = LexicalShortlist(shortlist.candidates, [6], width=6).padded_target_ids([[5, 3]])
    assert ids.numpy().tolist() == [0, 1, 2, 4, 6, 9] and not fits  # 7 ids: more than 6
    # Source ids beyond those with candidates (8, 99) add nothing; nor do padding ids.
    assert shortlist.target_ids([[8, 99, 0]]).numpy().tolist() == [0, 1, 2, 6]
    with pytest.raises(ValueError, match="width must be an integer of at least 3"):
        LexicalShortlist({}, width=2)


def test_save_and_load_round_trip_as_tokens(tmp_path):
    vocabulary = preprocessor().source_vocabulary  # <blank> <s> </s> a ... h; <unk> is 11
    shortlist = LexicalShortlist({3: [4, 11], 10: [5]}, always=[7])
    path = tmp_path / "shortlist.txt"
    shortlist.save(path, vocabulary, vocabulary)
    assert path.read_text(encoding="utf-8").splitlines() == [
        "\t<blank> <s> </s> e", "a\tb <unk>", "h\tc"]
    loaded = LexicalShortlist.load(path, vocabulary, vocabulary, width=64)
    assert loaded.candidates == shortlist.candidates and loaded.always == shortlist.always
    assert loaded.width == 64


def test_a_save_that_fails_midway_keeps_the_previous_file(tmp_path):
    vocabulary = preprocessor().source_vocabulary
    path = tmp_path / "shortlist.txt"
    LexicalShortlist({3: [4]}, always=[7]).save(path, vocabulary, vocabulary)
    before = path.read_bytes()
    unencodable = [*vocabulary[:10], "\ud800"]  # a lone surrogate: not UTF-8
    with pytest.raises(UnicodeEncodeError):
        LexicalShortlist({3: [4], 10: [5]}, always=[7]).save(path, unencodable, vocabulary)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["shortlist.txt"]


@pytest.mark.parametrize("line, message", [
    ("a b c", r"line 2: expected 'source token<TAB>target tokens', got 'a b c'"),
    ("a\tb zz", "line 2: 'zz' is not in the target vocabulary"),
    ("zz\tb", "line 2: 'zz' is not in the source vocabulary"),
    ("a b\tc", "line 2: the source key 'a b' has several tokens"),
])
def test_load_names_the_file_and_line_of_a_bad_entry(tmp_path, line, message):
    vocabulary = preprocessor().source_vocabulary
    path = tmp_path / "shortlist.txt"
    path.write_text(f"\t<s>\n{line}\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=f"{path}, {message}"):
        LexicalShortlist.load(path, vocabulary, vocabulary)


def test_corpus_ids_looks_up_the_parallel_files(tmp_path):
    (tmp_path / "src").write_text("a b\n\nh zz\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("A\nB C\nH\n", encoding="utf-8")
    sources, targets = corpus_ids(tmp_path / "src", tmp_path / "tgt", preprocessor())
    assert [s.tolist() for s in sources] == [[3, 4], [], [10, 11]]
    assert [t.tolist() for t in targets] == [[3], [4, 5], [10]]
    (tmp_path / "tgt").write_text("A\nB C\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="src has 3 lines but .*tgt has 2"):
        corpus_ids([tmp_path / "src"], [tmp_path / "tgt"], preprocessor())
