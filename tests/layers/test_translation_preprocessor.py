import os
import tempfile

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kerasnmt.layers import (
    SentencePieceTokenizer,
    TranslationPreprocessor,
    VocabLookup,
    WhitespaceTokenizer,
)
from tests.layer_test_helper import run_layer_test
from tests.layers import tiny_sentencepiece
from tests.layers.reference_corpus import (
    CAN,
    FEATURES,
    HE,
    LABELS,
    MOZHET,
    ON,
    SOURCE_VOCABULARY,
    SPECIALS,
    TARGET_VOCABULARY,
)

# Pharaoh lines for FEATURES[5:9] -> LABELS[5:9], written by hand.
ALIGNMENTS = ["0-0 1-1", "0-0 1-1", "0-0 1-1 2-2", "0-0 0-1 0-2 0-3 1-4 2-5 2-6"]


def whitespace_kwargs(**kwargs):
    return dict(
        source_tokenizer=WhitespaceTokenizer(), target_tokenizer=WhitespaceTokenizer(),
        source_vocabulary=SOURCE_VOCABULARY, target_vocabulary=TARGET_VOCABULARY, **kwargs,
    )


def ids_by_hand(line, vocabulary):
    """Brute force: each token's position in the vocabulary, or len(vocabulary)."""
    return [vocabulary.index(t) if t in vocabulary else len(vocabulary) for t in line.split()]


def matrix_by_hand(line, source_length, target_length):
    matrix = np.zeros([target_length, source_length], np.float32)
    for pair in line.split():
        source, target = map(int, pair.split("-"))
        matrix[target, source] = 1
    return matrix


def pad(rows, width, value=0):
    return np.array([list(row) + [value] * (width - len(row)) for row in rows])


def test_reference_alignment_example_reproduces_the_notes_ids():
    # Vocabularies placing the tokens at the ids printed in the note: ▁he 7, ▁it 10, ▁knows 21;
    # ▁это 8, ▁он 9, ▁знает 17.
    source_vocabulary = SPECIALS + [f"s{i}" for i in range(3, 22)]
    target_vocabulary = SPECIALS + [f"t{i}" for i in range(3, 18)]
    for vocabulary, placed in ((source_vocabulary, {7: "▁he", 10: "▁it", 21: "▁knows"}),
                               (target_vocabulary, {8: "▁это", 9: "▁он", 17: "▁знает"})):
        for index, token in placed.items():
            vocabulary[index] = token
    preprocessor = TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), source_vocabulary, target_vocabulary,
        return_tokens=True,
    )
    features, labels = preprocessor(["▁he ▁knows ▁it"], ["▁он ▁знает ▁это"], ["0-0 1-1 2-2"])
    assert features["ids"].numpy().tolist() == [[7, 21, 10]]
    assert features["length"].numpy().tolist() == [3]
    assert features["tokens"].numpy().tolist() == [[t.encode() for t in ["▁he", "▁knows", "▁it"]]]
    assert labels["ids"].numpy().tolist() == [[1, 9, 17, 8]]
    assert labels["ids_out"].numpy().tolist() == [[9, 17, 8, 2]]
    assert labels["length"].numpy().tolist() == [4]
    assert labels["tokens"].numpy().tolist() == [[t.encode() for t in ["▁он", "▁знает", "▁это"]]]
    np.testing.assert_array_equal(labels["alignment"].numpy(), [np.eye(3)])


def test_one_example_with_alignment():
    features, labels = run_layer_test(
        TranslationPreprocessor, whitespace_kwargs(),
        (tf.constant("▁he ▁can"), tf.constant("▁он ▁может"), tf.constant("0-0 1-1")),
        expected_output=(
            {"ids": np.array([HE, CAN]), "length": np.array(2)},
            {"ids": np.array([1, ON, MOZHET]), "ids_out": np.array([ON, MOZHET, 2]),
             "length": np.array(3), "alignment": np.eye(2)},
        ),
        is_preprocessing=True,
    )
    assert labels["alignment"].dtype == tf.float32


def test_batch_matches_brute_force():
    sources, targets = FEATURES[5:9] + ["▁zebra ▁cat"], LABELS[5:9] + [""]
    alignments = ALIGNMENTS + [""]
    source_ids = [ids_by_hand(s, SOURCE_VOCABULARY) for s in sources]
    target_ids = [ids_by_hand(t, TARGET_VOCABULARY) for t in targets]
    width = max(map(len, target_ids)) + 1
    matrices = [matrix_by_hand(a, len(s), len(t))
                for a, s, t in zip(alignments, source_ids, target_ids)]
    alignment = np.zeros([len(sources), width - 1, max(map(len, source_ids))], np.float32)
    for row, matrix in enumerate(matrices):
        alignment[row, : matrix.shape[0], : matrix.shape[1]] = matrix
    assert source_ids[-1] == [len(SOURCE_VOCABULARY), 11]
    run_layer_test(
        TranslationPreprocessor, whitespace_kwargs(),
        (tf.constant(sources), tf.constant(targets), tf.constant(alignments)),
        expected_output=(
            {"ids": pad(source_ids, max(map(len, source_ids))),
             "length": np.array([len(i) for i in source_ids])},
            {"ids": pad([[1] + i for i in target_ids], width),
             "ids_out": pad([i + [2] for i in target_ids], width),
             "length": np.array([len(i) + 1 for i in target_ids]),
             "alignment": alignment},
        ),
        is_preprocessing=True,
    )


def test_source_only_gives_features_with_tokens():
    features = run_layer_test(
        TranslationPreprocessor, whitespace_kwargs(return_tokens=True),
        tf.constant(["▁he ▁can", "", "  "]),
        expected_output={
            "ids": np.array([[HE, CAN], [0, 0], [0, 0]]),
            "length": np.array([2, 0, 0]),
            "tokens": np.array([["▁he".encode(), "▁can".encode()], [b"", b""], [b"", b""]],
                               dtype=object),
        },
        is_preprocessing=True,
    )
    assert set(features) == {"ids", "length", "tokens"}


def test_sentencepiece_tokenizers_from_raw_text():
    kwargs = dict(
        source_tokenizer=SentencePieceTokenizer(tiny_sentencepiece.train()),
        target_tokenizer=WhitespaceTokenizer(),
        source_vocabulary=SOURCE_VOCABULARY, target_vocabulary=TARGET_VOCABULARY,
    )
    run_layer_test(
        TranslationPreprocessor, kwargs, (tf.constant(["he can"]), tf.constant(["▁он ▁может"])),
        expected_output=(
            {"ids": np.array([[HE, CAN]]), "length": np.array([2])},
            {"ids": np.array([[1, ON, MOZHET]]), "ids_out": np.array([[ON, MOZHET, 2]]),
             "length": np.array([3])},
        ),
        is_preprocessing=True,
    )


def test_empty_lines():
    features, labels = TranslationPreprocessor(**whitespace_kwargs())("", " \t", "")
    assert features["ids"].numpy().tolist() == [] and int(features["length"]) == 0
    assert labels["ids"].numpy().tolist() == [1] and labels["ids_out"].numpy().tolist() == [2]
    assert int(labels["length"]) == 1 and labels["alignment"].shape == (0, 0)


def test_truncation_cuts_ids_tokens_and_alignment_alike():
    preprocessor = TranslationPreprocessor(
        **whitespace_kwargs(maximum_source_length=2, maximum_target_length=1, return_tokens=True)
    )
    features, labels = preprocessor("▁I ▁like ▁it", "▁Мне ▁нравится ▁это", "0-0 1-1 2-2")
    assert features["ids"].numpy().tolist() == ids_by_hand("▁I ▁like", SOURCE_VOCABULARY)
    assert features["tokens"].numpy().tolist() == ["▁I".encode(), "▁like".encode()]
    assert labels["ids_out"].numpy().tolist() == ids_by_hand("▁Мне", TARGET_VOCABULARY) + [2]
    assert labels["tokens"].numpy().tolist() == ["▁Мне".encode()]
    np.testing.assert_array_equal(labels["alignment"].numpy(), [[1, 0]])
    _, batch = preprocessor(["▁I ▁like ▁it", "▁cat"], ["▁Мне ▁нравится ▁это", "▁кот"],
                            ["0-0 1-1 2-2", "0-0"])
    np.testing.assert_array_equal(batch["alignment"].numpy(), [[[1, 0]], [[1, 0]]])


def test_alignment_errors_name_the_line_and_token_counts():
    preprocessor = TranslationPreprocessor(**whitespace_kwargs())
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"source_length=2 and target < target_length=2, got line: 0-0 2-1"):
        preprocessor("▁he ▁can", "▁он ▁может", "0-0 2-1")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"got line: 0-0 1-x"):
        tf.function(preprocessor)(["▁he ▁can"], ["▁он ▁может"], ["0-0 1-x"])
    with pytest.raises(ValueError, match="an alignment needs a target"):
        preprocessor("▁he", None, "0-0")


def test_lookups_and_detokenize_target():
    preprocessor = TranslationPreprocessor(**whitespace_kwargs())
    assert isinstance(preprocessor.source_lookup, VocabLookup)
    assert preprocessor.target_lookup.vocabulary_size == len(TARGET_VOCABULARY) + 1
    assert preprocessor.source_lookup.get_vocabulary() == SOURCE_VOCABULARY
    _, labels = preprocessor(LABELS[5:9], LABELS[5:9])
    expected = [line.encode() for line in LABELS[5:9]]
    assert preprocessor.detokenize_target(labels["ids_out"]).numpy().tolist() == expected
    assert tf.function(preprocessor.detokenize_target)(labels["ids"]).numpy().tolist() == expected
    one = preprocessor.detokenize_target([1, ON, len(TARGET_VOCABULARY), 2, MOZHET])
    assert one.numpy() == "▁он <unk>".encode()


def test_dataset_map_then_padded_batch_equals_a_batch_call():
    preprocessor = TranslationPreprocessor(**whitespace_kwargs())
    lines = (FEATURES[5:9], LABELS[5:9], ALIGNMENTS)
    dataset = tf.data.Dataset.from_tensor_slices(lines).map(preprocessor).padded_batch(4)
    batched = next(iter(dataset))
    direct = preprocessor(*[tf.constant(column) for column in lines])
    for actual, expected in zip(tf.nest.flatten(batched), tf.nest.flatten(direct)):
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


def test_export_archive_serves_raw_strings():
    preprocessor = TranslationPreprocessor(**whitespace_kwargs())
    archive = keras.export.ExportArchive()
    archive.track(preprocessor)
    archive.add_endpoint("features", preprocessor, [tf.TensorSpec([None], tf.string)])
    archive.add_endpoint(
        "detokenize", preprocessor.detokenize_target, [tf.TensorSpec([None, None], tf.int32)]
    )
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "exported")
        archive.write_out(path, verbose=False)
        del archive, preprocessor
        reloaded = tf.saved_model.load(path)
        features = reloaded.features(tf.constant(["▁he ▁can", "▁cat ▁zebra"]))
        text = reloaded.detokenize(tf.constant([[1, ON, MOZHET, 2], [1, ON, 0, 0]]))
    assert features["ids"].numpy().tolist() == [[HE, CAN], [11, len(SOURCE_VOCABULARY)]]
    assert text.numpy().tolist() == [t.encode() for t in ["▁он ▁может", "▁он"]]


def test_kerasnmts_sentencepiece_gives_its_vocabulary_and_detokenizes_pieces():
    """A keras-hub tokenizer, but kerasnmt's: without vocabularies its model's pieces are
    used (<blank>, <s>, </s> at 0, 1, 2 in this model), and `detokenize_target` gives it
    pieces, not its own ids as keras-hub's tokenizers get: a piece outside its model is kept,
    where keras-hub's would drop it."""
    model = tiny_sentencepiece.train(vocab_size=22, pad_id=0, pad_piece="<blank>", bos_id=1,
                                     eos_id=2, unk_id=3)
    tokenizer = SentencePieceTokenizer(model)
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer)
    assert preprocessor.source_vocabulary == preprocessor.target_vocabulary == (
        tokenizer.get_vocabulary())
    features, labels = preprocessor(["he can", "I like it"], ["door open", "a"])
    encoded = sentencepiece.SentencePieceProcessor(model_proto=model).encode(
        ["he can", "I like it", "door open", "a"])
    assert features["ids"].numpy().tolist() == pad(encoded[:2], 3).tolist()
    ids_out = pad([row + [2] for row in encoded[2:]], 3)
    assert labels["ids_out"].numpy().tolist() == ids_out.tolist()
    assert preprocessor.detokenize_target(labels["ids"]).numpy().tolist() == [b"door open", b"a"]

    vocabulary = tokenizer.get_vocabulary() + ["▁zebra"]
    with_zebra = TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary)
    pieces = ["▁he", "▁zebra", "▁can"]
    text = with_zebra.detokenize_target([1] + [vocabulary.index(p) for p in pieces] + [2])
    assert text.numpy() == tokenizer.detokenize(pieces).numpy()
    assert b"zebra" in text.numpy()


def test_a_tokenizer_without_a_vocabulary_needs_one():
    with pytest.raises(ValueError, match=r"source_vocabulary is needed: the source tokenizer "
                                         r"\(WhitespaceTokenizer\) has no vocabulary of its own"):
        TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer())
    with pytest.raises(ValueError, match=r"target_vocabulary is needed: .* \(WhitespaceTokenizer"):
        TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(), SOURCE_VOCABULARY)


def test_training_samples_pairs_but_never_aligned_examples():
    from tests.layers.test_sentencepiece_tokenizer import SUBWORD_TEXT

    model = tiny_sentencepiece.train("bpe", 60, tuple(SUBWORD_TEXT * 10))
    tokenizer = SentencePieceTokenizer(model, sampling_alpha=0.3)
    vocabulary = ["<blank>", "<s>", "</s>"] + tokenizer.get_vocabulary()[3:]
    preprocessor = TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary)
    sentences = tf.constant(["the children are playing outside"] * 50)
    best = preprocessor(sentences[:1], sentences[:1])[1]["ids_out"].numpy().tolist()[0]

    def distinct(*inputs):
        _, labels = preprocessor(*inputs, training=True)
        return {tuple(row) for row in labels["ids_out"].numpy().tolist()}

    assert len(distinct(sentences, sentences)) > 5
    # Alignment indices hold for the best segmentation only.
    assert distinct(sentences, sentences, tf.constant(["0-0"] * 50)) == {tuple(best)}


def test_a_byte_fallback_model_and_its_vocabulary_must_agree(tmp_path):
    """A byte-fallback model with a vocabulary lacking byte pieces, or a vocabulary holding
    them with a model that has no byte fallback, is refused naming the model file."""
    text = ("he can open the door", "a cat in a bad day", "today I like the good bat") * 10
    byte_model = tmp_path / "bytes.model"
    byte_model.write_bytes(tiny_sentencepiece.train("unigram", 300, text, byte_fallback=True,
                                                    hard_vocab_limit=False))
    plain_model = tmp_path / "plain.model"
    plain_model.write_bytes(tiny_sentencepiece.train("unigram", 25, text))
    byte_vocabulary = SPECIALS + [f"<0x{value:02X}>" for value in range(256)] + ["▁he"]
    plain_vocabulary = tmp_path / "plain.vocab"
    plain_vocabulary.write_text("\n".join(SPECIALS + ["▁he", "<0x41>"]) + "\n", encoding="utf-8")

    with pytest.raises(ValueError, match=rf"^{tmp_path}/bytes\.model encodes unseen characters "
                       rf"as byte pieces \(byte fallback\), but {tmp_path}/plain\.vocab lacks "
                       r"255 of the 256 \(e\.g\. <0x00>\), whose bytes would become unknown"):
        TranslationPreprocessor(SentencePieceTokenizer(str(byte_model)), WhitespaceTokenizer(),
                                str(plain_vocabulary), TARGET_VOCABULARY)
    with pytest.raises(ValueError, match=rf"^{tmp_path}/plain\.model has no byte fallback, but "
                       r"the target vocabulary holds the 256 byte pieces <0x00> \.\.\. <0xFF>"):
        TranslationPreprocessor(WhitespaceTokenizer(), SentencePieceTokenizer(str(plain_model)),
                                SOURCE_VOCABULARY, byte_vocabulary)
    # Agreeing pairs, and byte pieces with a whitespace tokenizer (pre-tokenized text).
    preprocessor = TranslationPreprocessor(
        SentencePieceTokenizer(str(byte_model)), WhitespaceTokenizer(), byte_vocabulary,
        byte_vocabulary)
    assert preprocessor("ë")["ids"].numpy().tolist()[-2:] == [3 + 0xC3, 3 + 0xAB]
    TranslationPreprocessor(SentencePieceTokenizer(str(plain_model)), WhitespaceTokenizer(),
                            str(plain_vocabulary), TARGET_VOCABULARY)


def test_whitespace_builds_the_ids_of_the_explicit_constructor():
    vocabulary = ["<blank>", "<s>", "</s>", "a", "b", "c"]
    explicit = TranslationPreprocessor(
        WhitespaceTokenizer(), WhitespaceTokenizer(), vocabulary, vocabulary,
        maximum_source_length=2,
    )
    shortcut = TranslationPreprocessor.whitespace(vocabulary, maximum_source_length=2)
    assert isinstance(shortcut.source_tokenizer, WhitespaceTokenizer)
    assert isinstance(shortcut.target_tokenizer, WhitespaceTokenizer)
    assert shortcut.target_vocabulary == vocabulary
    # By hand: c b a -> 5 4 (cut to 2); b z -> <s> 4 6 (z unknown: len(vocabulary)) and 4 6 </s>.
    for preprocessor in (explicit, shortcut):
        features, labels = preprocessor("c b a", "b z")
        assert features["ids"].numpy().tolist() == [5, 4]
        assert labels["ids"].numpy().tolist() == [1, 4, 6]
        assert labels["ids_out"].numpy().tolist() == [4, 6, 2]


def test_whitespace_takes_a_separate_target_vocabulary():
    preprocessor = TranslationPreprocessor.whitespace(SOURCE_VOCABULARY, TARGET_VOCABULARY)
    features, labels = preprocessor("▁he ▁can", "▁он ▁может")
    assert features["ids"].numpy().tolist() == [HE, CAN]
    assert labels["ids"].numpy().tolist() == [1, ON, MOZHET]
