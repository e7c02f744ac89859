import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.layers import WhitespaceTokenizer
from tests.layer_test_helper import run_layer_test


def test_one_sentence_gives_1d_tokens():
    tokens = run_layer_test(
        WhitespaceTokenizer, {}, tf.constant("▁he ▁can"),
        expected_output=np.array(["▁he".encode(), "▁can".encode()], dtype=object),
        is_preprocessing=True,
    )
    assert tokens.shape.rank == 1


def test_batch_gives_ragged_tokens_and_blank_lines_give_none():
    batch = tf.constant(["▁I ▁like ▁it", "", "  \t ", " ▁a\t▁b  "])
    tokens = run_layer_test(
        WhitespaceTokenizer, {}, batch,
        expected_output=[[b"\xe2\x96\x81I", b"\xe2\x96\x81like", b"\xe2\x96\x81it"], [], [],
                         [b"\xe2\x96\x81a", b"\xe2\x96\x81b"]],
        is_preprocessing=True,
    )
    assert isinstance(tokens, tf.RaggedTensor)


def test_empty_and_whitespace_only_sentence_give_zero_tokens():
    tokenizer = WhitespaceTokenizer()
    assert tokenizer("").shape == (0,)
    assert tokenizer(" \t\n ").shape == (0,)


def test_detokenize_joins_with_single_spaces():
    tokenizer = WhitespaceTokenizer()
    assert tokenizer.detokenize(["a", "b", "c"]).numpy() == b"a b c"
    assert tokenizer.detokenize(tf.constant([], tf.string)).numpy() == b""
    ragged = tokenizer(["x  y", "", "z"])
    assert tokenizer.detokenize(ragged).numpy().tolist() == [b"x y", b"", b"z"]
    padded = tf.constant([["x", "y"], ["", ""], ["z", ""]])
    assert tokenizer.detokenize(padded).numpy().tolist() == [b"x y", b"", b"z"]


def test_detokenize_in_graph_and_dataset():
    tokenizer = WhitespaceTokenizer()
    round_trip = tf.function(lambda text: tokenizer.detokenize(tokenizer(text)))
    assert round_trip(tf.constant(["  a  b ", "c"])).numpy().tolist() == [b"a b", b"c"]
    dataset = tf.data.Dataset.from_tensor_slices(["a\tb", " "]).map(tokenizer).map(
        tokenizer.detokenize
    )
    assert list(dataset.as_numpy_iterator()) == [b"a b", b""]


def test_string_layer_is_not_jit_compiled():
    assert WhitespaceTokenizer().supports_jit is False


def test_rank_2_input_is_refused():
    with pytest.raises(ValueError, match="string scalar or a 1-D batch"):
        WhitespaceTokenizer()([["a b"]])


def test_is_a_keras_hub_tokenizer_without_a_vocabulary():
    tokenizer = WhitespaceTokenizer()
    assert isinstance(tokenizer, keras_hub.tokenizers.Tokenizer)
    assert tokenizer.compute_dtype == "string"
    assert isinstance(tokenizer.tokenize(["a b"]), tf.RaggedTensor)  # not keras-hub's lists
    for method, args in [("get_vocabulary", ()), ("vocabulary_size", ()),
                         ("id_to_token", (0,)), ("token_to_id", ("a",))]:
        with pytest.raises(NotImplementedError, match=rf"no vocabulary, so no {method}\(\)"):
            getattr(tokenizer, method)(*args)


def test_keras_hubs_start_end_packer_packs_its_tokens():
    tokenizer = WhitespaceTokenizer()
    packer = keras_hub.layers.StartEndPacker(sequence_length=4, start_value="<s>",
                                             end_value="</s>", pad_value="")
    dataset = tf.data.Dataset.from_tensor_slices(["a b", "c d e f", " "]).batch(3)
    packed = next(iter(dataset.map(tokenizer).map(packer)))
    assert packed.numpy().tolist() == [[b"<s>", b"a", b"b", b"</s>"],
                                       [b"<s>", b"c", b"d", b"</s>"],
                                       [b"<s>", b"</s>", b"", b""]]
    assert tokenizer.detokenize(packed).numpy().tolist() == [b"<s> a b </s>", b"<s> c d </s>",
                                                              b"<s> </s>"]


def test_a_config_saved_before_it_was_a_keras_hub_tokenizer_loads():
    """A float32 dtype and no keras-hub `config_file`, as kerasnmt wrote them before."""
    tokenizer = keras.saving.deserialize_keras_object({
        "module": "kerasnmt.layers.whitespace_tokenizer", "class_name": "WhitespaceTokenizer",
        "config": {"name": "whitespace_tokenizer", "trainable": True,
                   "dtype": {"module": "keras", "class_name": "DTypePolicy",
                             "config": {"name": "float32"}, "registered_name": None}},
        "registered_name": "kerasnmt>WhitespaceTokenizer",
    })
    assert tokenizer.compute_dtype == "string"
    assert tokenizer("a b").numpy().tolist() == [b"a", b"b"]
    assert WhitespaceTokenizer.from_config(tokenizer.get_config()).get_config() == (
        tokenizer.get_config())
