"""The exported SavedModel: signatures, equality with `Translator.translate`, bad inputs,
loading without Keras or kerasnmt, `saved_model_cli`, XLA buckets, atomic writes, the
warm-up file."""

import base64
import gc
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import config_pb2, saved_model_pb2
from tensorflow_serving.apis import prediction_log_pb2

from kerasnmt.data import train_sentencepiece
from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.data.vocabulary import SPECIAL_TOKENS
from kerasnmt.export import (
    DEFAULT_BATCH_SIZE_BUCKETS,
    N_BEST_SIGNATURE,
    SERVING_SIGNATURE,
    export_translator,
    next_version_path,
)
from kerasnmt.decoding import TranslateFunction, source_width_buckets
from kerasnmt.decoding import decode_call
from kerasnmt.decoding.widths import width_of
from kerasnmt.decoding import BeamSampler
from kerasnmt.layers import (
    SentencePieceTokenizer,
    TranslationPreprocessor,
    WhitespaceTokenizer,
)
from kerasnmt.models import Translator
from kerasnmt.export.serving_warmup import WARMUP_FILE, warm_up
from tests.models.translator_fixtures import tiny_translator
from tests.saved_model_process import run_all_without_keras

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(143)

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART_DATA = REPOSITORY / "examples" / "quickstart" / "data"
MAXIMUM_SOURCE_LENGTH = 12
SENTENCES = ["a b c", "d e", "h g f e d c b a", "b", "c c a"]
# For sentencepiece_export.
RAW_SENTENCES = [
    "A man rides a bike.", "Zwei Hunde spielen.", "Two dogs play.", "A woman sings."]
BATCH_SIZE = 8  # whitespace_export's
# Times an export built the decoding graph, by fixture.
GRAPHS_BUILT = {}


def _sampler():
    return BeamSampler(beam_size=2, n_best=2, length_penalty=0.6, max_length=20)


@pytest.fixture(scope="module")
def whitespace_export(tmp_path_factory):
    """A tiny whitespace-tokenized model exported with alignments (the graphs the export
    builds counted in `GRAPHS_BUILT`), in batches of 8: the tests' batches, of 8 sentences
    or fewer, compile one decoding a source width."""
    translator = tiny_translator(seed=3)
    path = tmp_path_factory.mktemp("whitespace") / "ende" / "1"
    build = TranslateFunction.hypotheses

    def counted_build(self, source):
        GRAPHS_BUILT["whitespace_export"] = GRAPHS_BUILT.get("whitespace_export", 0) + 1
        return build(self, source)

    TranslateFunction.hypotheses = counted_build
    try:
        returned = translator.export(path, sampler=_sampler(),
                                     maximum_source_length=MAXIMUM_SOURCE_LENGTH,
                                     batch_size_buckets=(BATCH_SIZE,), with_alignments=True)
    finally:
        TranslateFunction.hypotheses = build
    assert returned == path
    return translator, path


@pytest.fixture(scope="module")
def sentencepiece_export(tmp_path_factory):
    """A tiny model with a joint SentencePiece vocabulary (shared embeddings), decoding
    without XLA (each process that loads it would compile it again; `whitespace_export`
    has XLA)."""
    directory = tmp_path_factory.mktemp("sentencepiece")
    train_sentencepiece([QUICKSTART_DATA / "train.en", QUICKSTART_DATA / "train.de"],
                        str(directory / "sp"), 120, file_byte_budget=20000,
                        byte_fallback=False)
    # Seeded first: tf.random.set_seed clears TensorFlow's kernel cache, which destroys the
    # SentencePiece op resources of tokenizers created before it.
    keras.utils.set_random_seed(4)
    tokenizer = SentencePieceTokenizer(str(directory / "sp.model"))
    preprocessor = TranslationPreprocessor(
        tokenizer, tokenizer, str(directory / "sp.vocab"), str(directory / "sp.vocab")
    )
    translator = Translator(preprocessor, num_layers=1, num_units=16, num_heads=2,
                            ffn_inner_dim=32, maximum_relative_position=4,
                            share_embeddings="all")
    path = directory / "export"
    export_translator(translator, path, sampler=_sampler(), maximum_source_length=16,
                      jit_compile=False)
    return translator, path


@pytest.fixture(scope="module")
def whitespace_model(whitespace_export):
    """`whitespace_export` loaded once: each load compiles its decodings again."""
    return _loaded(whitespace_export[1])


def _loaded(path):
    return tf.saved_model.load(str(path))


def _strings(tensor):
    return [value.decode("utf-8") for value in np.asarray(tensor).reshape(-1)]


def _details(translator, sentences, **options):
    """The reference: `translate`'s n-best lists, decoded without XLA (not the point here;
    a compilation per translator and sampler)."""
    return translator.translate(sentences, sampler=_sampler(), return_details=True,
                                jit_compile=False, **options)


def _translations(translator, sentences, **options):
    """The best translations of `_details` (whose traced functions the other tests share)."""
    return [n_best[0]["text"] for n_best in _details(translator, sentences, **options)]


def test_signatures_count_unknown_source_tokens(whitespace_model):
    # The source vocabulary is a-h: "zz", "yy" and "Q" are unknown; the thirteenth token of
    # the last sentence is cut (maximum_source_length 12), so it is not translated as <unk>.
    sources = ["a zz b yy", "Q", "a b", "", " ".join(["a"] * MAXIMUM_SOURCE_LENGTH + ["zz"])]
    expected = [2, 1, 0, 0, 0]
    for name in (SERVING_SIGNATURE, N_BEST_SIGNATURE):
        outputs = whitespace_model.signatures[name](source=tf.constant(sources))
        assert outputs["unknown_source_tokens"].dtype == tf.int32
        assert outputs["unknown_source_tokens"].numpy().tolist() == expected


def test_signatures_equal_translate(whitespace_export, whitespace_model):
    translator, _ = whitespace_export
    model = whitespace_model
    assert set(model.signatures) == {SERVING_SIGNATURE, N_BEST_SIGNATURE}
    serving = model.signatures[SERVING_SIGNATURE]
    assert serving.structured_input_signature[1] == {
        "source": tf.TensorSpec([None], tf.string, name="source")}
    expected = _details(translator, SENTENCES)

    outputs = serving(source=tf.constant(SENTENCES))
    assert set(outputs) == {"translation", "score", "unknown_source_tokens"}
    assert outputs["translation"].dtype == tf.string and outputs["score"].dtype == tf.float32
    assert _strings(outputs["translation"]) == [n_best[0]["text"] for n_best in expected]
    np.testing.assert_allclose(outputs["score"], [n[0]["score"] for n in expected], atol=1e-4)

    outputs = model.signatures[N_BEST_SIGNATURE](source=tf.constant(SENTENCES))
    assert set(outputs) == {"translations", "scores", "log_probs", "alignments",
                            "unknown_source_tokens"}
    assert outputs["translations"].shape == (len(SENTENCES), 2)
    assert [_strings(row) for row in outputs["translations"]] == [
        [h["text"] for h in n_best] for n_best in expected]
    np.testing.assert_allclose(
        outputs["scores"], [[h["score"] for h in n] for n in expected], atol=1e-4)
    np.testing.assert_allclose(
        outputs["log_probs"], [[h["log_prob"] for h in n] for n in expected], atol=1e-4)
    _assert_alignments_equal(outputs["alignments"].numpy(), expected, SENTENCES)


def _assert_alignments_equal(alignments, expected, sentences):
    """The `alignments` of the n_best signature are `translate`'s (`expected` details of
    whitespace-tokenized `sentences`): one row per target token over the source tokens,
    zero-padded to the longest translation and the longest source."""
    longest_target = max(len(h["tokens"]) for n in expected for h in n)
    longest_source = max(len(sentence.split()) for sentence in sentences)
    assert alignments.shape == (len(expected), len(expected[0]), longest_target, longest_source)
    for i, n_best in enumerate(expected):
        for k, hypothesis in enumerate(n_best):
            rows, columns = hypothesis["alignment"].shape
            np.testing.assert_allclose(
                alignments[i, k, :rows, :columns], hypothesis["alignment"], atol=1e-5)
            assert not alignments[i, k, rows:].any() and not alignments[i, k, :, columns:].any()


def test_a_compact_batch_export_equals_translate(whitespace_export, tmp_path):
    """BeamSampler(compact_batch=True) in the SavedModel (batch size unknown when tracing;
    without XLA here: the sampler's tests compile that case): 10 sentences in chunks of 8
    (compacted to 2 and 1), then 1. The fixture's translator: `translate` decodes with
    the function test_each_sentence_is_decoded_at_the_width_of_its_own_bucket traces."""
    translator, _ = whitespace_export
    sampler = BeamSampler(beam_size=2, n_best=2, length_penalty=0.6, max_length=20,
                          compact_batch=True)
    path = translator.export(tmp_path / "compact", sampler=sampler, maximum_source_length=8,
                             batch_size_buckets=(1, 8), jit_compile=False)
    model = _loaded(path)
    sentences = SENTENCES + ["c b a", "a a", "g f e d", "h", "b c d e"]
    for batch in (sentences, sentences[:1]):
        expected = translator.translate(batch, sampler=sampler, return_details=True,
                                        jit_compile=False)
        outputs = model.signatures[N_BEST_SIGNATURE](source=tf.constant(batch))
        assert [_strings(row) for row in outputs["translations"]] == [
            [h["text"] for h in n_best] for n_best in expected]
        np.testing.assert_allclose(
            outputs["scores"], [[h["score"] for h in n] for n in expected], atol=1e-4)


def test_translate_after_keras_int8_quantization_equals_its_export(tmp_path):
    """`translate` traced before `quantize("int8")` must not keep decoding with the float
    kernels: after it, its scores are the quantized model's, those of its SavedModel."""
    translator = tiny_translator(seed=3)
    sampler = _sampler()
    float_details = translator.translate(SENTENCES, sampler=sampler, return_details=True,
                                         jit_compile=False)
    translator.quantize("int8")
    assert gc.get_freeze_count() == 0  # quantize froze the older objects only meanwhile
    expected = translator.translate(SENTENCES, sampler=sampler, return_details=True,
                                    jit_compile=False)
    float_scores = [[h["score"] for h in n] for n in float_details]
    scores = [[h["score"] for h in n] for n in expected]
    assert not np.allclose(scores, float_scores, atol=1e-4)
    path = translator.export(tmp_path / "int8", sampler=sampler, maximum_source_length=8,
                             batch_size_buckets=(8,), jit_compile=False, warmup=False)
    outputs = _loaded(path).signatures[N_BEST_SIGNATURE](source=tf.constant(SENTENCES))
    assert [_strings(row) for row in outputs["translations"]] == [
        [h["text"] for h in n_best] for n_best in expected]
    np.testing.assert_allclose(outputs["scores"], scores, atol=1e-4)


def test_a_mixed_precision_model_is_exported_in_float32(tmp_path):
    """A model built in `mixed_bfloat16` (trained with `train.mixed_precision`) is exported
    from its float32 copy: no bfloat16 tensor in the graph, and the SavedModel's scores
    are those of the float32 model's `translate`, not of the bfloat16 model's."""
    mixed = tiny_translator(seed=5, dtype="mixed_bfloat16")
    expected = _details(tiny_translator(seed=5), SENTENCES)  # the same weights, in float32
    scores = [[h["score"] for h in n] for n in expected]
    assert not np.allclose([[h["score"] for h in n] for n in _details(mixed, SENTENCES)],
                           scores, atol=1e-4)
    path = mixed.export(tmp_path / "mixed", sampler=_sampler(), maximum_source_length=8,
                        batch_size_buckets=(8,), jit_compile=False, warmup=False)
    graph = (path / "saved_model.pb").read_bytes()
    saved_model = saved_model_pb2.SavedModel.FromString(graph)
    graph_def = saved_model.meta_graphs[0].graph_def
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    dtypes = {value.type for node in nodes for value in node.attr.values()}
    assert types_pb2.DT_FLOAT in dtypes and types_pb2.DT_BFLOAT16 not in dtypes
    outputs = _loaded(path).signatures[N_BEST_SIGNATURE](source=tf.constant(SENTENCES))
    assert [_strings(row) for row in outputs["translations"]] == [
        [h["text"] for h in n_best] for n_best in expected]
    np.testing.assert_allclose(outputs["scores"], scores, atol=1e-4)


def test_a_shortlist_export_equals_translate(whitespace_export, tmp_path):
    """The SavedModel finds each chunk's shortlist in its graph: the translations and
    scores of `translate` with the shortlist, for a batch whose shortlist fits its width
    (7 ids), one decoded over the whole vocabulary (9 ids, more than 8), which the graph
    decodes at the widest source width (12, not their 8), and a sentence of that width."""
    translator, _ = whitespace_export
    shortlist = LexicalShortlist({3: [7, 9], 4: [8], 5: [11], 6: [10]}, always=[6], width=8)
    sampler = _sampler()
    path = translator.export(tmp_path / "shortlist", sampler=sampler, maximum_source_length=12,
                             batch_size_buckets=(4,), jit_compile=False, shortlist=shortlist,
                             with_alignments=True)
    model = _loaded(path)
    for batch in (["a b", "b b a", "a"], ["a b c d", "d c"], ["a b a b a b a b a", "b"]):
        expected = _details(translator, batch, shortlist=shortlist)
        outputs = model.signatures[N_BEST_SIGNATURE](source=tf.constant(batch))
        assert [_strings(row) for row in outputs["translations"]] == [
            [h["text"] for h in n_best] for n_best in expected]
        np.testing.assert_allclose(
            outputs["scores"], [[h["score"] for h in n] for n in expected], atol=1e-4)
        _assert_alignments_equal(outputs["alignments"].numpy(), expected, batch)
    fitting = _strings(model.signatures[N_BEST_SIGNATURE](
        source=tf.constant(["a b", "b b a", "a"]))["translations"])
    assert set(" ".join(fitting).split()) <= {"D", "E", "F", "G", "<unk>"}
    unrestricted = _details(translator, ["a b", "b b a", "a"])
    assert fitting != [h["text"] for n_best in unrestricted for h in n_best]


def test_a_shortlist_graph_traces_one_whole_vocabulary_decode():
    """With a shortlist, the graph of two source widths holds three decodes: one over the
    shortlist per width, and one over the whole vocabulary (at the widest width) that
    both widths' overflowing chunks share."""
    translator, sampler = tiny_translator(seed=3), _sampler()
    decode = decode_call.decode_function(translator, sampler, jit_compile=False, alignment=False)
    calls = []

    def recorded_decode(ids, length, shortlist_ids):
        calls.append((tuple(ids.shape), shortlist_ids is None))
        return decode(ids, length, shortlist_ids)

    function = TranslateFunction(
        translator, sampler, 12, [8, 12], [4], 2.0, 10, replace_unknown_target=False,
        jit_compile=False, shortlist=LexicalShortlist({3: [7, 9]}, always=[6], width=8),
        decode=recorded_decode)
    tf.function(function.serving_default, autograph=False).get_concrete_function(
        tf.TensorSpec([None], tf.string))
    assert sorted(set(calls)) == [((4, 8), False), ((4, 12), False), ((4, 12), True)]
    assert decode.experimental_get_tracing_count() == 3


def _stored_float_values(path):
    checkpoint = str(path / "variables" / "variables")
    dtypes = tf.train.load_checkpoint(checkpoint).get_variable_to_dtype_map()
    return sum(int(np.prod(shape)) for name, shape in tf.train.list_variables(checkpoint)
               if dtypes[name].is_floating)


def test_small_weights_are_compiled_in_and_larger_ones_stored_once(
        whitespace_export, tmp_path, monkeypatch):
    """Under XLA a model within `CONSTANT_WEIGHTS_MAX_BYTES` is exported with its weights
    as constants of the decoding programs, none left as variables; a larger one keeps
    each weight once, as a variable."""
    translator, path = whitespace_export
    assert _stored_float_values(path) == 0
    monkeypatch.setattr(decode_call, "CONSTANT_WEIGHTS_MAX_BYTES", 0)
    path = translator.export(tmp_path / "variables", sampler=_sampler(),
                             maximum_source_length=MAXIMUM_SOURCE_LENGTH,
                             batch_size_buckets=(BATCH_SIZE,), warmup=False)
    assert _stored_float_values(path) == sum(
        int(np.prod(weight.shape)) for weight in translator.trainable_weights)


def test_each_signature_is_traced_once(whitespace_export):
    """Two signatures, two graphs: Keras's ExportArchive would trace each endpoint twice
    (once more inside tf.saved_model.save)."""
    assert GRAPHS_BUILT["whitespace_export"] == 2


def test_bad_inputs_do_not_crash_the_loaded_model(whitespace_export, whitespace_model):
    translator, _ = whitespace_export
    serving = whitespace_model.signatures[SERVING_SIGNATURE]

    empty = serving(source=tf.constant([], tf.string))
    assert empty["translation"].shape == (0,) and empty["score"].shape == (0,)

    long_sentence = " ".join(["a", "b", "c", "d", "e"] * 6)  # 30 tokens > 12
    first_tokens = " ".join(long_sentence.split()[:MAXIMUM_SOURCE_LENGTH])
    batch = ["", "   ", "\t \n", long_sentence, "a \xff b".encode("latin-1"), "d e"]
    outputs = serving(source=tf.constant(batch, tf.string))
    translations = _strings(outputs["translation"])
    assert np.isfinite(outputs["score"].numpy()).all()
    # Empty and whitespace-only sentences have no tokens: nothing to translate.
    assert translations[:3] == ["", "", ""]
    np.testing.assert_array_equal(outputs["score"][:3], [0.0, 0.0, 0.0])
    # A long sentence is cut to its first maximum_source_length tokens; bytes that are
    # not UTF-8 become U+FFFD (here an unknown token).
    assert translations[3:] == _translations(translator, [first_tokens, "a \ufffd b", "d e"],
                                             batch_size=BATCH_SIZE)


def _not_a_batch(shape):
    """The error of a source that is not a 1-D batch, as a pattern."""
    return re.escape(f"expected a 1-D batch of strings (shape [batch]), got shape {shape}")


def test_the_loaded_signatures_refuse_a_source_that_is_not_a_1d_batch(whitespace_export,
                                                                     whitespace_model):
    """Both signatures refuse a 2-D batch and a scalar in the graph: the declared `[None]`
    is not checked when `tf.saved_model.load` runs them (a SentencePiece model translated
    each string of a 2-D batch, and a scalar as a batch of one). The check comes before
    the tokenizer, so one flavour covers both (the session loader's test below takes the
    SentencePiece one). A 1-D batch translates as `translate` does."""
    translator, _ = whitespace_export
    model = whitespace_model
    sentences = SENTENCES[:4]
    for name in (SERVING_SIGNATURE, N_BEST_SIGNATURE):
        signature = model.signatures[name]
        with pytest.raises(tf.errors.InvalidArgumentError, match=_not_a_batch("[2, 2]")):
            signature(source=tf.constant([sentences[:2], sentences[2:]]))
        with pytest.raises(tf.errors.InvalidArgumentError, match=_not_a_batch("[]")):
            signature(source=tf.constant(sentences[0]))
    outputs = model.signatures[SERVING_SIGNATURE](source=tf.constant(sentences))
    expected = _details(translator, sentences)
    assert _strings(outputs["translation"]) == [n_best[0]["text"] for n_best in expected]
    np.testing.assert_allclose(outputs["score"], [n[0]["score"] for n in expected], atol=1e-4)


def test_the_session_loader_refuses_a_source_that_is_not_a_1d_batch(sentencepiece_export):
    """The graph TF Serving runs: loaded by the TF1 session loader, fed by the tensor names
    of the signature. Python's `session.run` refuses a shape the `[None]` placeholder does
    not allow before anything runs; a feed from C++, as TF Serving's `Session::Run`, is not
    checked (here `Session::RunCallable`, which `_make_callable_from_options` wraps), and
    the graph refuses it itself (before the tokenizer: the SentencePiece flavour, which
    used to translate each string of a 2-D batch, stands for both). A 1-D batch translates
    as `translate` does."""
    translator, path = sentencepiece_export
    sentences = [sentence.encode("utf-8") for sentence in RAW_SENTENCES]
    two_rows = np.array([sentences[:2], sentences[2:]], dtype=object)
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
        for name in (SERVING_SIGNATURE, N_BEST_SIGNATURE):
            signature = meta_graph.signature_def[name]
            source = signature.inputs["source"].name
            fetches = [signature.outputs[key].name for key in sorted(signature.outputs)]
            with pytest.raises(ValueError, match=re.escape(
                    f"Cannot feed value of shape (2, 2) for Tensor {source}, which has shape "
                    "(None,)")):
                session.run(fetches, {source: two_rows})
            run = session._make_callable_from_options(
                config_pb2.CallableOptions(feed=[source], fetch=fetches))
            with pytest.raises(tf.errors.InvalidArgumentError, match=_not_a_batch("[2, 2]")):
                run(two_rows)
            with pytest.raises(tf.errors.InvalidArgumentError, match=_not_a_batch("[]")):
                run(np.array(sentences[0], dtype=object))
        signature = meta_graph.signature_def[SERVING_SIGNATURE]
        run = session._make_callable_from_options(config_pb2.CallableOptions(
            feed=[signature.inputs["source"].name],
            fetch=[signature.outputs[key].name for key in ("translation", "score")]))
        translation, score = run(np.array(sentences, dtype=object))
    expected = _details(translator, [sentence.decode("utf-8") for sentence in sentences])
    assert _strings(translation) == [n_best[0]["text"] for n_best in expected]
    np.testing.assert_allclose(score, [n[0]["score"] for n in expected], atol=1e-4)


def test_translate_and_the_saved_model_agree_on_empty_and_overlong_sources(whitespace_export,
                                                                         whitespace_model):
    """Where the two paths used to disagree: an empty or blank line translates to "" with
    score 0 through both (translate made a sentence up), and a source longer than
    maximum_source_length is cut by both (translate decoded a 100,000-character line whole
    and ran out of memory). Same request, same batch bucket: the same n-best lists."""
    translator, _ = whitespace_export
    long_sentence = " ".join(["a", "b", "c", "d", "e"] * 4000)  # 20,000 tokens
    batch = ["", "   ", long_sentence, "a \xff b".encode("latin-1"), "d e", "\t"]
    outputs = whitespace_model.signatures[N_BEST_SIGNATURE](source=tf.constant(batch, tf.string))
    expected = translator.translate(
        batch, sampler=_sampler(), batch_size=BATCH_SIZE, return_details=True,
        jit_compile=False, maximum_source_length=MAXIMUM_SOURCE_LENGTH)
    assert [_strings(row) for row in outputs["translations"]] == [
        [h["text"] for h in n_best] for n_best in expected]
    np.testing.assert_allclose(
        outputs["scores"], [[h["score"] for h in n] for n in expected], atol=1e-4)
    for index in (0, 1, 5):
        for hypothesis in expected[index]:
            assert (hypothesis["text"], hypothesis["tokens"], hypothesis["score"],
                    hypothesis["log_prob"]) == ("", [], 0.0, 0.0)
            assert hypothesis["alignment"].shape == (0, 0)
    assert expected[2][0]["alignment"].shape[1] == MAXIMUM_SOURCE_LENGTH
    cut = " ".join(long_sentence.split()[:MAXIMUM_SOURCE_LENGTH])
    assert _details(translator, [cut], batch_size=BATCH_SIZE)[0][0]["text"] == (
        expected[2][0]["text"])


def test_each_sentence_is_decoded_at_the_width_of_its_own_bucket(whitespace_export):
    """A request mixing widths: each width bucket's sentences are decoded together, longest
    first, at that width (a long sentence does not widen the others' decoding), and the
    outputs come back in input order (run eagerly: only the decodings that run are seen)."""
    translator, _ = whitespace_export
    # compact_batch: each result is its sentence's decoded alone, whatever the batch.
    sampler = BeamSampler(beam_size=2, n_best=2, length_penalty=0.6, max_length=20,
                          compact_batch=True)
    function = TranslateFunction(
        translator, sampler, MAXIMUM_SOURCE_LENGTH, [4, 8, MAXIMUM_SOURCE_LENGTH], [8],
        length_ratio=2.0, length_offset=10, replace_unknown_target=False, jit_compile=False,
        shortlist=None,
    )
    batch = ["a b", "h g f e d c b a h g", "b c d e f", "c", "d e f g h a"]
    decoded = []
    decode_width = function._decode_width

    def recorded(ids, length, batch_size, width):
        decoded.append((width, length.numpy().tolist()))
        return decode_width(ids, length, batch_size, width)

    function._decode_width = recorded
    outputs = function.n_best(tf.constant(batch), with_alignments=False)
    assert decoded == [(4, [2, 1]), (8, [6, 5]), (MAXIMUM_SOURCE_LENGTH, [10])]
    expected = translator.translate(batch, sampler=sampler, return_details=True,
                                    jit_compile=False)
    assert [_strings(row) for row in outputs["translations"]] == [
        [h["text"] for h in n_best] for n_best in expected]
    np.testing.assert_allclose(
        outputs["scores"], [[h["score"] for h in n] for n in expected], atol=1e-4)


def test_batches_larger_than_the_largest_bucket_go_in_chunks(whitespace_export,
                                                           whitespace_model):
    translator, _ = whitespace_export
    sentences = [SENTENCES[i % len(SENTENCES)] for i in range(2 * BATCH_SIZE + 3)]
    outputs = whitespace_model.signatures[SERVING_SIGNATURE](source=tf.constant(sentences))
    expected = _translations(translator, SENTENCES)
    assert _strings(outputs["translation"]) == [
        expected[i % len(SENTENCES)] for i in range(len(sentences))]


def test_decoding_is_xla_compiled_once_per_source_width(whitespace_export):
    _, path = whitespace_export
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((path / "saved_model.pb").read_bytes())
    compiled = [
        function for function in proto.meta_graphs[0].graph_def.library.function
        if function.attr["_XlaMustCompile"].b
    ]
    # Both signatures share one traced decode per width of the buckets [8, 12].
    assert source_width_buckets(MAXIMUM_SOURCE_LENGTH) == [8, 12]
    assert len(compiled) == 2
    widths = sorted(
        function.signature.input_arg and int(
            function.arg_attr[0].attr["_output_shapes"].list.shape[0].dim[1].size)
        for function in compiled
    )
    assert widths == [8, 12]


def test_copies_run_in_a_process_without_keras_or_kerasnmt(whitespace_export,
                                                          sentencepiece_export, tmp_path):
    """A copy of each export (self-contained: nothing outside its directory is read) runs in
    one process where Keras, kerasnmt and TensorFlow Text cannot be imported, the
    whitespace one before the SentencePiece op library is loaded for the other, and
    translates as `translate` does."""
    runs = [("whitespace", whitespace_export, SENTENCES),
            ("sentencepiece", sentencepiece_export, RAW_SENTENCES[:2])]
    requests = []
    for flavour, (_, path), sentences in runs:
        copy = tmp_path / flavour / "7"
        shutil.copytree(path, copy)
        requests.append((copy, sentences, flavour == "sentencepiece"))
    results = run_all_without_keras(requests, SERVING_SIGNATURE, tmp_path)
    for (_, (translator, _), sentences), outputs in zip(runs, results):
        expected = _details(translator, sentences)
        decoded = [base64.b64decode(text).decode() for text in outputs["translation"]]
        assert decoded == [n_best[0]["text"] for n_best in expected]
        np.testing.assert_allclose(outputs["score"], [n[0]["score"] for n in expected],
                                   atol=1e-4)


def _saved_model_cli_run(path, sentences, tmp_path, sentencepiece=False):
    """`saved_model_cli run` (the session loader); outputs saved as .npy files."""
    outdir = tmp_path / "cli_outputs"
    arguments = ["run", "--dir", str(path), "--tag_set", "serve", "--signature_def",
                 SERVING_SIGNATURE, "--input_exprs", f"source={sentences!r}",
                 "--outdir", str(outdir)]
    if sentencepiece:
        # saved_model_cli itself loads no custom op; load TensorFlow Text's first.
        code = (
            "import sys, tensorflow as tf\n"
            f"tf.load_op_library({_sentencepiece_library()!r})\n"
            "from tensorflow.python.tools.saved_model_cli import main\n"
            "sys.argv[0] = 'saved_model_cli'\n"
            "main()\n"
        )
        command = [sys.executable, "-c", code] + arguments
    else:
        command = [str(pathlib.Path(sys.executable).parent / "saved_model_cli")] + arguments
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return {name: np.load(outdir / f"{name}.npy", allow_pickle=True)
            for name in ("translation", "score")}


def _sentencepiece_library():
    from tests.saved_model_process import sentencepiece_op_library

    return sentencepiece_op_library()


@pytest.mark.parametrize("flavour", ["whitespace", "sentencepiece"])
def test_saved_model_cli_runs_it_with_the_session_loader(
    flavour, whitespace_export, sentencepiece_export, tmp_path
):
    translator, path = whitespace_export if flavour == "whitespace" else sentencepiece_export
    sentences = SENTENCES[:2] if flavour == "whitespace" else RAW_SENTENCES[2:3]
    outputs = _saved_model_cli_run(path, sentences, tmp_path,
                                   sentencepiece=flavour == "sentencepiece")
    expected = _details(translator, sentences)
    assert _strings(outputs["translation"]) == [n_best[0]["text"] for n_best in expected]
    np.testing.assert_allclose(outputs["score"], [n[0]["score"] for n in expected], atol=1e-4)


def test_unknown_target_tokens_are_replaced_by_the_most_attended_source_token(tmp_path):
    translator = tiny_translator(seed=5)
    bias = translator.output_layer.bias
    unknown_id = translator.backbone.target_vocabulary_size - 1
    # The model now prefers the unknown id everywhere but must still stop: </s> second.
    bias.assign(tf.tensor_scatter_nd_update(
        bias, [[unknown_id], [2]], [20.0, 18.0]))
    path = tmp_path / "replace"
    # Without XLA: the replacement follows the decoding, which whitespace_export compiles.
    export_translator(translator, path, sampler=_sampler(), maximum_source_length=8,
                      replace_unknown_target=True, jit_compile=False)
    outputs = _loaded(path).signatures[SERVING_SIGNATURE](source=tf.constant(SENTENCES))
    expected = _details(translator, SENTENCES, replace_unknown_target=True)
    translations = _strings(outputs["translation"])
    assert translations == [n_best[0]["text"] for n_best in expected]
    # Independently: every output token is a source token, the most attended one.
    for sentence, n_best in zip(SENTENCES, expected):
        best = n_best[0]
        assert best["tokens"] and set(best["tokens"]) <= set(sentence.split())
        attended = [sentence.split()[j] for j in best["alignment"].argmax(-1)]
        assert best["tokens"] == attended


def _files(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_failed_export_leaves_the_previous_one_intact_and_the_next_cleans_up(
        whitespace_export, tmp_path, monkeypatch):
    """A failed export leaves the previous one byte for byte and no temporary directory. A
    killed export leaves `.1.tmp-*`; the next successful export of `1` replaces the
    previous one and removes that, leaving nothing else of its own behind, and another
    path's partial directory and an `.old-*` one (possibly the last complete export)
    alone."""
    translator, exported = whitespace_export
    path = tmp_path / "ende" / "1"
    shutil.copytree(exported, path)
    before = _files(path)

    def write_half_then_fail(self, filepath, *args, **kwargs):
        (pathlib.Path(filepath) / "variables").mkdir()
        (pathlib.Path(filepath) / "saved_model.pb").write_bytes(b"half a protocol buffer")
        raise OSError(28, "No space left on device")

    archive_class = type(keras.export.ExportArchive())
    monkeypatch.setattr(archive_class, "write_out", write_half_then_fail)
    with pytest.raises(OSError, match="No space left on device"):
        export_translator(translator, path, sampler=BeamSampler(beam_size=1),
                          maximum_source_length=8)
    monkeypatch.undo()
    # Byte for byte the export that test_signatures_equal_translate runs.
    assert _files(path) == before
    assert os.listdir(path.parent) == ["1"]  # no temporary directory left

    # What a killed export of this path, and other exports, left.
    for name in (".1.tmp-killed/variables", ".2.tmp-running", ".1.old-kept"):
        (path.parent / name).mkdir(parents=True)
    export_translator(translator, path, sampler=BeamSampler(beam_size=1, max_length=20),
                      maximum_source_length=8, jit_compile=False)
    assert sorted(os.listdir(path.parent)) == [".1.old-kept", ".2.tmp-running", "1"]
    assert _files(path) != before
    greedy = _loaded(path).signatures[N_BEST_SIGNATURE](source=tf.constant(SENTENCES))
    assert greedy["translations"].shape == (len(SENTENCES), 1)


def test_next_version_path(tmp_path):
    base = tmp_path / "ende"
    assert next_version_path(base) == str(base / "1")
    for name in ("1", "3", ".3.tmp-x", "notes"):
        (base / name).mkdir(parents=True)
    assert next_version_path(base) == str(base / "4")


def test_bucket_arguments_are_checked(whitespace_export, tmp_path):
    translator, _ = whitespace_export
    with pytest.raises(ValueError, match="the last of source_length_buckets"):
        export_translator(translator, tmp_path / "x", source_length_buckets=[8, 16],
                          maximum_source_length=20)
    with pytest.raises(ValueError, match="batch_size_buckets must be increasing"):
        export_translator(translator, tmp_path / "x", batch_size_buckets=[4, 2])
    assert not (tmp_path / "x").exists()


def _warmup_records(path):
    """The `PredictionLog` records of an export's warm-up file, read as TF Serving reads
    them."""
    return [prediction_log_pb2.PredictionLog.FromString(record.numpy())
            for record in tf.data.TFRecordDataset(str(path / WARMUP_FILE))]


@pytest.mark.parametrize("flavour, maximum_source_length, batch_size_buckets", [
    ("whitespace", MAXIMUM_SOURCE_LENGTH, [BATCH_SIZE]),
    ("sentencepiece", 16, DEFAULT_BATCH_SIZE_BUCKETS),
])
def test_the_warmup_file_requests_every_compiled_shape_once(
    flavour, maximum_source_length, batch_size_buckets, whitespace_export, sentencepiece_export
):
    """One `serving_default` request a (rows, source width) pair the export compiles, each
    pair found by tokenizing the request with the model's preprocessor, and one `n_best`
    request of one sentence."""
    translator, path = whitespace_export if flavour == "whitespace" else sentencepiece_export
    # A copy: a test that seeded TensorFlow since the fixture ran destroyed the op resources
    # of its SentencePiece tokenizer.
    preprocessor = TranslationPreprocessor.from_config(translator.preprocessor.get_config())
    widths = source_width_buckets(maximum_source_length)
    shapes, n_best_requests = [], []
    for log in _warmup_records(path):
        assert log.WhichOneof("log_type") == "predict_log"
        request = log.predict_log.request
        assert list(request.inputs) == ["source"] and not request.model_spec.name
        source = request.inputs["source"]
        assert source.dtype == types_pb2.DT_STRING and len(source.tensor_shape.dim) == 1
        sentences = tf.make_ndarray(source)
        if request.model_spec.signature_name == N_BEST_SIGNATURE:
            n_best_requests.append(sentences)
            continue
        assert request.model_spec.signature_name == SERVING_SIGNATURE
        lengths = np.minimum(preprocessor(tf.constant(sentences))["length"],
                             maximum_source_length)
        (width,) = {width_of(length, widths) for length in lengths}
        rows = next(size for size in batch_size_buckets if size >= len(sentences))
        shapes.append((rows, width))
    assert sorted(shapes) == sorted(
        (rows, width) for rows in batch_size_buckets for width in widths)
    assert [len(sentences) for sentences in n_best_requests] == [1]


def test_warm_up_compiles_every_shape_before_the_first_request(whitespace_export, tmp_path):
    """In a fresh process (XLA dumps each module it compiles): `warm_up` runs the file's
    3 requests and compiles the 2 shapes of the export ((8 rows, width 8) and (8, 12));
    then requests of every shape through both signatures compile nothing."""
    _, path = whitespace_export
    dump = tmp_path / "xla"
    requests = [["a b", "c", "d e f", "g h", "a", "b b", "c d", "e"],
                ["a b c d e f g h a", "h g f e d c b a h g f e"] * 4,
                ["a b c", "d"] * 2 + ["a b c d e f g h a b"] * 4]
    code = (
        "import json, os, sys\n"
        f"os.environ['XLA_FLAGS'] = '--xla_dump_to={dump}'\n"
        "import tensorflow as tf\n"
        "from kerasnmt.export.serving_warmup import warm_up\n"
        "def compiled():\n"
        f"    return len({{name.split('.')[0] for name in os.listdir({str(dump)!r})}})\n"
        f"model = tf.saved_model.load({str(path)!r})\n"
        f"counts = [warm_up(model, {str(path)!r}), compiled()]\n"
        f"for sentences in {requests!r}:\n"
        "    for signature in model.signatures.values():\n"
        "        signature(source=tf.constant(sentences))\n"
        "print(json.dumps(counts + [compiled()]))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               cwd=REPOSITORY, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert json.loads(completed.stdout.splitlines()[-1]) == [3, 2, 2]


def test_warm_up_runs_each_request_of_the_file(sentencepiece_export):
    _, path = sentencepiece_export
    assert warm_up(_loaded(path), str(path)) == len(_warmup_records(path)) == 2 * 10 + 1


def test_an_export_that_cannot_be_warmed_up_is_refused(whitespace_export, tmp_path):
    """No warm-up sentence (a source vocabulary of special tokens only), or more requests
    than TF Serving loads: an error before anything is written; without warm-up, the
    export has no warm-up file."""
    vocabulary = list(SPECIAL_TOKENS)
    empty = Translator(TranslationPreprocessor(WhitespaceTokenizer(), WhitespaceTokenizer(),
                                               vocabulary, vocabulary + ["A"]),
                       num_layers=1, num_units=8, num_heads=2, ffn_inner_dim=8,
                       maximum_relative_position=None)
    with pytest.raises(ValueError, match=r"no warm-up sentences: .* sources of \[1, 9\] "
                                         r"tokens .* source width \[8, 12\]"):
        export_translator(empty, tmp_path / "x", maximum_source_length=12)
    translator, _ = whitespace_export
    with pytest.raises(ValueError, match=r"6 source widths x 200 batch sizes make 1201 warm-up "
                                         r"requests, more than TF Serving loads \(1000\)"):
        export_translator(translator, tmp_path / "x", batch_size_buckets=range(1, 201))
    assert not (tmp_path / "x").exists()

    export_translator(empty, tmp_path / "x", sampler=BeamSampler(beam_size=1, max_length=4),
                      maximum_source_length=12, jit_compile=False, warmup=False)
    assert (tmp_path / "x" / "saved_model.pb").exists()
    assert not (tmp_path / "x" / "assets.extra").exists()
    assert warm_up(_loaded(tmp_path / "x"), str(tmp_path / "x")) == 0
