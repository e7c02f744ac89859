import gzip

import numpy as np
import pytest

from kerasnmt.data.text_files import CorpusError
from kerasnmt.data.vocabulary import VocabularyError, load_vocabulary, save_vocabulary
from kerasnmt.data.vocabulary_builder import (
    build_vocabulary,
    count_tokens,
    min_frequency_for_target_size,
    pad_to_multiple,
)

SPECIALS = ["<blank>", "<s>", "</s>"]


@pytest.fixture
def corpus(tmp_path):
    """Two files, one gzipped, with empty and whitespace-only lines.

    Hand count: the 4; a 2, cat 2, dog 2; and 1, end 1, mat 1, on 1, sat 1.
    """
    first = tmp_path / "first.txt"
    first.write_text("the cat sat on the mat\n\n   \nthe dog\n\t \t\n", encoding="utf-8")
    second = tmp_path / "second.txt.gz"
    with gzip.open(second, "wt", encoding="utf-8") as file:
        file.write("a cat and a dog\nthe end")
    return [first, second]


def test_counts_by_hand(corpus):
    assert count_tokens(corpus) == {
        "the": 4, "a": 2, "cat": 2, "dog": 2, "and": 1, "end": 1, "mat": 1, "on": 1, "sat": 1,
    }


def test_order_is_frequency_then_token(corpus):
    assert build_vocabulary(corpus) == SPECIALS + [
        "the", "a", "cat", "dog", "and", "end", "mat", "on", "sat",
    ]


def test_size_counts_the_special_tokens(corpus):
    assert build_vocabulary(corpus, size=6) == SPECIALS + ["the", "a", "cat"]
    assert build_vocabulary(corpus, size=100) == build_vocabulary(corpus)


def test_min_frequency(corpus):
    assert build_vocabulary(corpus, min_frequency=2) == SPECIALS + ["the", "a", "cat", "dog"]
    assert build_vocabulary(corpus, min_frequency=4) == SPECIALS + ["the"]


def test_size_multiple_pads_with_opennmt_filler_names(corpus):
    # 12 entries + 1 OOV id = 13; the next multiple of 8 is 16, so 15 entries: 3 fillers.
    vocabulary = build_vocabulary(corpus, size_multiple=8)
    assert len(vocabulary) == 15
    assert vocabulary[12:] == ["averyunlikelytoken0", "averyunlikelytoken1", "averyunlikelytoken2"]
    # 7 entries + 1 = 8 is already a multiple of 8: no filler.
    assert build_vocabulary(corpus, min_frequency=2, size_multiple=8) == (
        SPECIALS + ["the", "a", "cat", "dog"]
    )
    # size applies before the padding: 6 + 1 = 7, padded to 10 - 1 = 9 entries.
    assert build_vocabulary(corpus, size=6, size_multiple=5)[6:] == [
        "averyunlikelytoken0", "averyunlikelytoken1", "averyunlikelytoken2",
    ]


@pytest.mark.parametrize(
    "entries, multiple, fillers",
    [(5, 1, 0), (5, 2, 0), (5, 3, 0), (6, 3, 2), (5, 7, 1), (5, 8, 2), (8, 8, 7), (15, 16, 0)],
)
def test_pad_to_multiple_filler_count(entries, multiple, fillers):
    tokens = SPECIALS + [f"t{i}" for i in range(entries - 3)]
    padded = pad_to_multiple(tokens, multiple)
    assert len(padded) == entries + fillers
    assert (len(padded) + 1) % multiple == 0


def test_filler_names_already_in_the_corpus_are_skipped(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("averyunlikelytoken0\n", encoding="utf-8")
    # 4 entries + 1 = 5; with multiple 3 one filler makes 6, and it cannot reuse token0.
    assert build_vocabulary([path], size_multiple=3) == SPECIALS + [
        "averyunlikelytoken0", "averyunlikelytoken1",
    ]


def test_ties_are_broken_by_code_point(tmp_path):
    # Code points: B 0x42 < a 0x61 < z 0x7a < É 0xc9 < é 0xe9 < � 0xfffd < 😀 0x1f600
    # (UTF-16 order would put 😀, a surrogate pair starting 0xd83d, before �).
    path = tmp_path / "c.txt"
    path.write_text("é z 😀 \ufffd a É B\n", encoding="utf-8")
    assert build_vocabulary([path])[3:] == ["B", "a", "z", "É", "é", "\ufffd", "😀"]


def test_special_tokens_in_the_corpus_are_not_repeated(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("<s> hello </s> <blank>\n<s> world </s>\n", encoding="utf-8")
    assert build_vocabulary([path]) == SPECIALS + ["hello", "world"]


def test_default_split_is_on_any_whitespace(tmp_path):
    # str.split(), as OpenNMT-tf's onmt-build-vocab: no-break space and tab separate tokens.
    path = tmp_path / "c.txt"
    path.write_text("x\u00a0y\tx\n", encoding="utf-8")
    assert build_vocabulary([path]) == SPECIALS + ["x", "y"]


def test_custom_tokenizer(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("abca\n\nbb\n", encoding="utf-8")
    # characters: a 2, b 3, c 1
    assert build_vocabulary([path], tokenizer=list) == SPECIALS + ["b", "a", "c"]


def test_tokenizer_producing_a_token_with_whitespace_is_an_error(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=r"token 'a b' is empty or contains whitespace"):
        build_vocabulary([path], tokenizer=lambda line: [line])


def test_built_vocabulary_round_trips_through_a_file(corpus, tmp_path):
    vocabulary = build_vocabulary(corpus, size_multiple=8)
    save_vocabulary(vocabulary, tmp_path / "vocab.txt")
    assert load_vocabulary(tmp_path / "vocab.txt") == vocabulary


@pytest.mark.parametrize("content", [b"", b"\n", b"\n   \n\t\n"])
def test_empty_corpus_is_an_error_naming_the_files(tmp_path, content):
    first, second = tmp_path / "empty1.txt", tmp_path / "empty2.txt"
    first.write_bytes(content)
    second.write_bytes(b"")
    with pytest.raises(CorpusError, match=r"no tokens to build a vocabulary from: .*empty1\.txt, "
                       r".*empty2\.txt hold only empty or whitespace-only lines"):
        build_vocabulary([first, second])


def test_corpus_of_special_tokens_only_is_an_error(tmp_path):
    path = tmp_path / "specials.txt"
    path.write_text("<s> </s>\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"specials\.txt hold only empty or whitespace-only "
                       r"lines and the special tokens <s>, </s>"):
        build_vocabulary([path])


def test_no_token_reaching_min_frequency_is_an_error(corpus):
    with pytest.raises(CorpusError, match=r"no token occurs at least 5 times .*'the', occurs 4"):
        build_vocabulary(corpus, min_frequency=5)


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a b\nc \xe9 d\n")
    with pytest.raises(CorpusError, match=r"bad\.txt, line 2: not valid UTF-8"):
        build_vocabulary([path])
    assert build_vocabulary([path], errors="replace") == SPECIALS + ["a", "b", "c", "d", "\ufffd"]


@pytest.mark.parametrize("arguments, message", [
    (dict(size=3), "size must be larger than 3"),
    (dict(min_frequency=0), "min_frequency must be at least 1"),
    (dict(size_multiple=0), "size_multiple must be a positive integer"),
])
def test_bad_arguments(corpus, arguments, message):
    with pytest.raises(ValueError, match=message):
        build_vocabulary(corpus, **arguments)


def brute_force_target_size(counts, target_size):
    """Every minimum frequency tried: the closest size, ties to the smaller frequency."""
    sizes = {m: 3 + sum(c >= m for c in counts.values())
             for m in range(1, max(counts.values()) + 2)}
    best = min(sizes, key=lambda m: (abs(sizes[m] - target_size), m))
    return best, sizes[best]


@pytest.fixture
def zipf_corpus(tmp_path):
    """Token t_k occurs 60 // k times (k = 1 ... 40): many ties among the rare ones."""
    rng = np.random.default_rng(0)
    tokens = [f"t{k}" for k in range(1, 41) for _ in range(60 // k)]
    rng.shuffle(tokens)
    path = tmp_path / "zipf.tok"
    path.write_text("\n".join(" ".join(tokens[i:i + 7]) for i in range(0, len(tokens), 7)) + "\n",
                    encoding="utf-8")
    return path


def test_target_size_bisection_equals_a_brute_force_search(zipf_corpus):
    counts = count_tokens([zipf_corpus])
    assert counts["t1"] == 60 and counts["t7"] == 8 and counts["t40"] == 1
    for target_size in range(4, 50):
        expected = brute_force_target_size(counts, target_size)
        assert min_frequency_for_target_size(counts, target_size, tolerance=100) == expected
        min_frequency, size = expected
        vocabulary = build_vocabulary([zipf_corpus], target_size=target_size, tolerance=100)
        assert len(vocabulary) == size
        assert all(counts[token] >= min_frequency for token in vocabulary[3:])
        assert not [t for t, c in counts.items() if c >= min_frequency and t not in vocabulary]


def test_target_size_out_of_tolerance_names_the_closest_size(zipf_corpus):
    # By hand: counts 60 // k for k = 1..40; 20 tokens are seen at least 3 times (k <= 20)
    # and 30 at least twice (k <= 30): sizes 23 and 33, nothing between.
    counts = count_tokens([zipf_corpus])
    assert min_frequency_for_target_size(counts, 23, tolerance=0) == (3, 23)
    assert min_frequency_for_target_size(counts, 28, tolerance=20) == (2, 33)  # tie: larger
    with pytest.raises(ValueError, match=r"zipf\.tok: no minimum frequency gives a vocabulary "
                       r"within 1% of 28 entries: the closest is 33 entries \(tokens seen at "
                       r"least 2 times\)"):
        build_vocabulary([zipf_corpus], target_size=28)
    with pytest.raises(ValueError, match="give no size or min_frequency with it"):
        build_vocabulary([zipf_corpus], target_size=28, size=10)
    with pytest.raises(ValueError, match="target_size must be larger than 3"):
        min_frequency_for_target_size(counts, 3)
