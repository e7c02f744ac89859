import gzip

import pytest
import sentencepiece

from kerasnmt.data.sentencepiece_trainer import (
    BYTE_PIECES,
    sample_lines_with_byte_budget,
    train_sentencepiece,
)
from kerasnmt.data.text_files import CorpusError
from kerasnmt.data.vocabulary import load_vocabulary

SPECIALS = ["<blank>", "<s>", "</s>"]
SENTENCES = [
    "Two young guys with shaggy hair look at their hands while hanging out in the yard.",
    "Several men in hard hats are operating a giant pulley system.",
    "A little girl climbing into a wooden playhouse.",
    "A man in a blue shirt is standing on a ladder cleaning a window.",
    "Two men are at the stove preparing food.",
    "A man in green holds a guitar while the other man observes his shirt.",
    "A man is smiling at a stuffed lion.",
    "A trendy girl talking on her cellphone while gliding slowly down the street.",
    "A woman with a large purse is walking by a gate.",
    "Boys dancing on poles in the middle of the night.",
]


def numbered_lines(tmp_path, name="lines.txt", count=30):
    """`count` lines 'l01 x' ... of 6 bytes each (5 characters + newline)."""
    path = tmp_path / name
    content = "".join(f"l{number:02d} x\n" for number in range(1, count + 1)).encode()
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(content))
    else:
        path.write_bytes(content)
    return path


def taken(path, budget):
    return [number for number, _ in sample_lines_with_byte_budget(path, budget)]


def test_stride_and_stop_by_hand(tmp_path):
    path = numbered_lines(tmp_path)  # 30 lines, 180 bytes
    # countermax = int(180 / 10 / 2) = 9: lines 10, 20, 30 are candidates; after 10 and 20
    # the budget is 10 - 5 - 5 = 0, so the loop stops at line 30.
    assert list(sample_lines_with_byte_budget(path, 10)) == [(10, "l10 x"), (20, "l20 x")]
    # countermax = int(180 / 12 / 2) = 7: lines 8, 16, 24; budget 12 -> 7 -> 2 -> -3 (the last
    # line taken may overshoot), and line 32 does not exist.
    assert taken(path, 12) == [8, 16, 24]
    # countermax = int(180 / 30 / 2) = 3: lines 4, 8, ..., 24 cost 6 * 5 = 30, line 28 is not taken.
    assert taken(path, 30) == [4, 8, 12, 16, 20, 24]


def test_budget_above_half_the_file_reads_from_the_first_line(tmp_path):
    path = numbered_lines(tmp_path)
    # countermax = int(180 / 100 / 2) = 0: every line until 100 characters are spent, which
    # is after line 20 (20 * 5 = 100).
    assert taken(path, 100) == list(range(1, 21))
    assert taken(path, 1e9) == list(range(1, 31))


def test_no_budget_takes_every_line_stripped(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(" a \n\n\tb\n", encoding="utf-8")
    assert list(sample_lines_with_byte_budget(path, None)) == [(1, "a"), (2, ""), (3, "b")]


def test_lines_are_stripped_and_charged_their_stripped_length(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("   aaaa   \nb\n\n\tcc\t\ndddddd\ne\n", encoding="utf-8")  # 28 bytes
    # countermax = int(28 / 15 / 2) = 0. Stripped costs 4, 1, 0, 2, 6 leave 15 - 13 = 2, so
    # "e" is taken too (unstripped costs 10, 1, 0, 4 would stop before "dddddd").
    assert [line for _, line in sample_lines_with_byte_budget(path, 15)] == [
        "aaaa", "b", "", "cc", "dddddd", "e",
    ]


def test_line_length_is_counted_in_characters(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("éé\n" * 10, encoding="utf-8")  # 50 bytes, 2 characters (4 bytes) a line
    # countermax = int(50 / 26 / 2) = 0. At 2 characters a line, 10 lines cost 20 < 26: all
    # are taken (at 4 bytes a line the budget would be spent after line 7).
    assert taken(path, 26) == list(range(1, 11))


def test_gzip_file_is_sampled_by_its_decompressed_size(tmp_path):
    plain = numbered_lines(tmp_path, "lines.txt")
    compressed = numbered_lines(tmp_path, "lines.txt.gz")
    assert compressed.stat().st_size < 180
    assert taken(compressed, 12) == taken(plain, 12) == [8, 16, 24]


def test_sampling_is_lazy(tmp_path):
    path = numbered_lines(tmp_path)
    with open(path, "ab") as file:
        file.write(b"\xff\n" * 5)
    # Reading stops when the budget is spent, before the bad lines at the end.
    assert taken(path, 10) == [10, 20]


def test_invalid_utf8_in_a_line_read_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\n\xff\nok\n")
    # countermax = 0, so line 2 is read.
    with pytest.raises(CorpusError, match=r"bad\.txt, line 2: not valid UTF-8"):
        list(sample_lines_with_byte_budget(path, 100))
    assert [line for _, line in sample_lines_with_byte_budget(path, 100, errors="replace")] == [
        "ok", "\ufffd", "ok",
    ]


@pytest.mark.parametrize("budget", [0, -1])
def test_budget_must_be_positive(tmp_path, budget):
    with pytest.raises(ValueError, match="file_byte_budget must be positive"):
        list(sample_lines_with_byte_budget(numbered_lines(tmp_path), budget))


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "train.en"
    path.write_text("\n".join(SENTENCES * 3) + "\n\n  \n", encoding="utf-8")
    return path


def pieces_of(model_path):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model_path))
    return processor, [processor.id_to_piece(i) for i in range(len(processor))]


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_trained_model_pieces_are_the_vocabulary(tmp_path, corpus, model_type):
    vocabulary = train_sentencepiece([corpus], tmp_path / "sp", 50, model_type=model_type,
                                     byte_fallback=False)
    assert load_vocabulary(tmp_path / "sp.vocab") == vocabulary
    assert len(vocabulary) == 50
    processor, pieces = pieces_of(tmp_path / "sp.model")
    assert pieces[:3] == ["<unk>", "<s>", "</s>"]
    # Every other piece has the same id in the vocabulary as in the model.
    assert vocabulary == SPECIALS + pieces[3:]
    # Encoding the training text never needs <unk> (character_coverage=1.0), and every
    # piece it produces is in the vocabulary.
    for sentence in SENTENCES:
        for piece in processor.encode(sentence, out_type=str):
            assert piece in vocabulary[3:]


def test_size_multiple_raises_the_sentencepiece_size(tmp_path, corpus):
    # 45 + 1 = 46; the next multiple of 8 is 48, so 47 entries, all real pieces.
    vocabulary = train_sentencepiece([corpus], tmp_path / "sp", 45, size_multiple=8,
                                     byte_fallback=False)
    assert len(vocabulary) == 47
    _, pieces = pieces_of(tmp_path / "sp.model")
    assert vocabulary == SPECIALS + pieces[3:]


def test_char_model_below_the_size_is_padded_with_fillers(tmp_path):
    path = tmp_path / "abc.txt"
    path.write_text("abc cab\n" * 5, encoding="utf-8")
    # A char model has one piece per character: <unk> <s> </s> ▁ a b c, whatever the size.
    vocabulary = train_sentencepiece([path], tmp_path / "sp", 30, model_type="char",
                                     size_multiple=5, byte_fallback=False)
    # 7 entries + 1 = 8, padded to 10: 9 entries, 2 fillers.
    assert sorted(vocabulary[3:7]) == ["a", "b", "c", "▁"]
    assert vocabulary[7:] == ["averyunlikelytoken0", "averyunlikelytoken1"]


def test_training_uses_only_the_sampled_lines(tmp_path):
    # Odd lines hold Cyrillic, even lines English. With countermax = 1 only even lines are
    # sampled, so no Cyrillic character reaches the model.
    path = tmp_path / "mixed.txt"
    lines = []
    for sentence in SENTENCES * 2:
        lines += ["жук ёж щука", sentence]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    size = path.stat().st_size
    budget = size / 3  # countermax = int(1.5) = 1
    assert {line for _, line in sample_lines_with_byte_budget(path, budget)} <= set(SENTENCES)
    vocabulary = train_sentencepiece([path], tmp_path / "sp", 40, file_byte_budget=budget,
                                     byte_fallback=False)
    assert not any(set(token) & set("жукёща") for token in vocabulary)
    everything = train_sentencepiece([path], tmp_path / "all", 40, file_byte_budget=None,
                                     byte_fallback=False)
    assert any(set(token) & set("жукёща") for token in everything)


def test_empty_corpus_is_an_error_naming_the_files(tmp_path):
    first, second = tmp_path / "empty.txt", tmp_path / "blank.txt.gz"
    first.write_bytes(b"")
    second.write_bytes(gzip.compress(b"\n  \n\t\n"))
    with pytest.raises(CorpusError, match=r"no text to train SentencePiece on: .*empty\.txt, "
                       r".*blank\.txt\.gz hold only empty or whitespace-only lines"):
        train_sentencepiece([first, second], tmp_path / "sp", 40)
    assert not (tmp_path / "sp.model").exists()


def test_size_too_large_for_the_sample_is_a_clear_error(tmp_path, corpus):
    with pytest.raises(CorpusError, match=r"SentencePiece training on 30 lines sampled from "
                       r".*train\.en failed: .*Vocabulary size too high \(5000\)"):
        train_sentencepiece([corpus], tmp_path / "sp", 5000)


def test_invalid_utf8_names_file_and_line(tmp_path, corpus):
    with open(corpus, "ab") as file:
        file.write(b"caf\xe9\n")
    with pytest.raises(CorpusError, match=r"train\.en, line 33: not valid UTF-8"):
        train_sentencepiece([corpus], tmp_path / "sp", 40)


@pytest.mark.parametrize("arguments, error, message", [
    (dict(vocab_size=3), ValueError, "vocab_size must be larger than 3"),
    (dict(vocab_size=40, model_type="wordpiece"), ValueError, "model_type must be one of"),
    (dict(vocab_size=40, unk_id=3), ValueError, "sets unk_id itself"),
    (dict(vocab_size=40, size_multiple=0), ValueError, "size_multiple must be a positive"),
])
def test_bad_arguments(tmp_path, corpus, arguments, error, message):
    with pytest.raises(error, match=message):
        train_sentencepiece([corpus], tmp_path / "sp", **arguments)


def test_byte_fallback_is_the_default(tmp_path, corpus):
    """The 256 byte pieces take ids 3 to 258 in the model and the vocabulary; a character
    the corpus never showed is encoded as its UTF-8 bytes and decoded back."""
    vocabulary = train_sentencepiece([corpus], tmp_path / "sp", 320)
    assert vocabulary[3:259] == [f"<0x{value:02X}>" for value in range(256)]
    assert vocabulary[3:259] == list(BYTE_PIECES)
    processor, pieces = pieces_of(tmp_path / "sp.model")
    assert vocabulary == SPECIALS + pieces[3:]
    text = "Zoë in 東京 🙂"
    encoded = processor.encode(text, out_type=str)
    assert processor.unk_id() not in processor.encode(text)
    # "ë" is C3 AB, "東" E6 9D B1, "京" E4 BA AC, "🙂" F0 9F 99 82.
    for character in "ë東京🙂":
        bytes_ = [f"<0x{byte:02X}>" for byte in character.encode()]
        assert any(encoded[i:i + len(bytes_)] == bytes_ for i in range(len(encoded)))
    assert processor.decode(processor.encode(text)) == text
    without = train_sentencepiece([corpus], tmp_path / "plain", 60, byte_fallback=False)
    assert not set(BYTE_PIECES) & set(without)
    assert 0 in sentencepiece.SentencePieceProcessor(
        model_file=str(tmp_path / "plain.model")).encode(text)  # <unk>


def test_byte_fallback_needs_room_for_the_byte_pieces(tmp_path, corpus):
    with pytest.raises(CorpusError, match=r"Vocabulary size is smaller than required_chars\. "
                       r"100 vs \d+.* \(byte fallback adds the 256 byte pieces to the special "
                       r"tokens and the characters: raise the size, or train without byte "
                       r"fallback, --no-byte-fallback\)"):
        train_sentencepiece([corpus], tmp_path / "sp", 100)


def test_a_word_model_is_refused_byte_fallback(tmp_path, corpus):
    with pytest.raises(ValueError, match=r"word model does not round-trip byte fallback .* "
                       r"--no-byte-fallback"):
        train_sentencepiece([corpus], tmp_path / "sp", 300, model_type="word")
    assert not (tmp_path / "sp.model").exists()
