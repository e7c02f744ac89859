"""Translator decoding through slots (`decode(num_slots=...)`, and `translate` with
`compact_batch`): every sentence gets the result of its own decoding alone."""

import numpy as np
import pytest

from kerasnmt.data.lexical_shortlist import LexicalShortlist
from kerasnmt.decoding import BeamSampler
from kerasnmt.decoding import decoding_streams, source_width_buckets
from kerasnmt.decoding.widths import width_of
from tests.models.translator_fixtures import corpus, forbid_outside, tiny_translator

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(27)


@pytest.mark.parametrize("maximum_relative_position", [4, None])
def test_translate_streams_sentences_through_slots_each_as_if_alone(maximum_relative_position):
    """An untrained model (translations of all lengths, many cut at their limit; relative
    positions, or sinusoidal ones) translates 14 sentences (two source widths, so two
    streams, decoded by two threads through 2 slots each: `compact_batch`, batch size 4):
    each n-best list, score and alignment is that of the sentence decoded alone by the
    plain batch search. Without XLA: test_translator_translate.py streams through slots
    with it, and test_beam_sampler.py checks that XLA and graph mode agree."""
    translator = tiny_translator(seed=5, maximum_relative_position=maximum_relative_position)
    sentences, _ = corpus(13, seed=3)
    sentences = list(sentences) + [" ".join(sentences[:6])]
    assert len(sentences[-1].split()) > 16 >= max(len(s.split()) for s in sentences[:-1])
    options = dict(beam_size=3, n_best=2, length_penalty=0.6)
    streamed = translator.translate(sentences, sampler=BeamSampler(compact_batch=True, **options),
                                    batch_size=4, return_details=True, jit_compile=False)
    lengths = [len(n_best[0]["tokens"]) for n_best in streamed]
    assert min(lengths) < max(lengths)
    # One sentence a batch: each decoded alone.
    each_alone = translator.translate(sentences, sampler=BeamSampler(**options), batch_size=1,
                                      return_details=True, jit_compile=False)
    for n_best, alone in zip(streamed, each_alone, strict=True):
        assert [h["tokens"] for h in n_best] == [h["tokens"] for h in alone]
        for hypothesis, expected in zip(n_best, alone):
            for key in ("score", "log_prob", "alignment"):
                np.testing.assert_allclose(hypothesis[key], expected[key], atol=1e-5)


def test_decode_through_slots_leaves_padding_examples_empty_and_alignment_optional():
    translator = tiny_translator(seed=1)
    ids = np.array([[5, 6, 7, 0], [8, 0, 0, 0], [9, 10, 0, 0], [5, 5, 5, 5]], np.int32)
    length = np.array([3, 1, 2, 4], np.int32)
    sampler = BeamSampler(beam_size=2, compact_batch=True)
    expected = translator.decode(ids[:3], length[:3], sampler)
    outputs = translator.decode(ids, length, sampler, num_slots=2, num_examples=3,
                                alignment=False)
    assert "alignment" not in outputs
    np.testing.assert_array_equal(outputs["ids"][:3], expected["ids"])
    np.testing.assert_allclose(outputs["scores"][:3], expected["scores"], atol=1e-5)
    assert outputs["lengths"].numpy()[3].tolist() == [0]


@pytest.mark.parametrize("threads", [0, 1.5, True])
def test_translate_refuses_a_bad_number_of_decoding_threads(threads):
    translator = tiny_translator(seed=1)
    with pytest.raises(ValueError, match="decoding_threads must be an int >= 1"):
        translator.translate(["a b"], decoding_threads=threads)


def test_decoding_streams_group_by_width_longest_first():
    """Sentences regroup by source width bucket (8, 16, 32), longest first, at
    most `maximum_size` a stream, padded to the slots times a power of two."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=40)
    batches = []
    for start in range(0, 40, 8):
        batch_lengths = lengths[start:start + 8]
        ids = np.zeros([8, batch_lengths.max()], np.int32)
        for row, n in enumerate(batch_lengths):
            ids[row, :n] = start + row + 1  # each sentence's ids name it
        batches.append({"index": np.arange(start, start + 8), "ids": ids,
                        "length": batch_lengths})
    buckets = source_width_buckets(256)
    streams = decoding_streams(batches, num_slots=4, width_buckets=buckets, maximum_size=12)
    assert sorted({stream["width"] for stream in streams}) == [8, 16, 32]
    seen = []
    for stream in streams:
        widths = {width_of(n, buckets) for n in stream["length"]}
        assert widths == {stream["width"]} and len(stream["index"]) <= 12
        assert list(stream["length"]) == sorted(stream["length"], reverse=True)
        assert stream["size"] in (4, 8, 12) and stream["size"] >= len(stream["index"])
        assert stream["ids"].shape[1] == stream["length"].max()
        for row, index in enumerate(stream["index"]):
            n = lengths[index]
            assert (stream["ids"][row, :n] == index + 1).all() and not stream["ids"][row, n:].any()
        seen.extend(stream["index"].tolist())
    assert sorted(seen) == list(range(40))


def test_decoding_streams_fit_the_shortlist_width():
    """With a shortlist, a stream ends before the sentence that would take the union of
    its sentences' target ids beyond the width: sentence i (ids [10 + i]) adds the target
    ids {20 + i, 40 + i} to the 3 always allowed (0, 1, 2), so a width of 9 holds three
    sentences; sentence 5's own shortlist (source id 99) is wider than 9, and its stream,
    decoded over the whole vocabulary anyway, takes sentences up to `maximum_size`."""
    candidates = {10 + i: [20 + i, 40 + i] for i in range(8)}
    candidates[99] = list(range(100, 110))
    shortlist = LexicalShortlist(candidates, width=9)
    lengths = np.array([8, 7, 6, 5, 4, 3, 2, 1])  # longest first: the order of the rows
    ids = np.zeros([8, 8], np.int32)
    for row, n in enumerate(lengths):
        ids[row, :n] = 10 + row
    ids[5, 0] = 99
    batch = {"index": np.arange(8), "ids": ids, "length": lengths}
    streams = decoding_streams([batch], num_slots=2, width_buckets=[8], maximum_size=4,
                               shortlist=shortlist)
    assert [s["index"].tolist() for s in streams] == [[0, 1, 2], [3, 4], [5, 6, 7]]
    assert [bool(shortlist.padded_target_ids(s["ids"])[1]) for s in streams] == [
        True, True, False]
    assert [s["size"] for s in streams] == [4, 2, 4]
    without = decoding_streams([batch], num_slots=2, width_buckets=[8], maximum_size=4)
    assert [s["index"].tolist() for s in without] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    for row in ids:
        assert shortlist.target_id_set(row) == set(shortlist.target_ids([row]).numpy())


def test_translate_streams_are_cut_to_fit_the_shortlist():
    """`translate` with `compact_batch` and a shortlist too narrow for all the sentences
    together: the {a, b} sentences (longest) and the {c, d} ones each fill the width of 7
    ids (3 always allowed, 2 per source word), so they stream apart, each stream over its
    own shortlist: every result is that of its sentence decoded alone by the model that
    forbids the target tokens outside its group's shortlist."""
    translator = tiny_translator(seed=5)
    # Source a b c d are ids 3-6; target A-H are 3-10.
    shortlist = LexicalShortlist({3: [3, 4], 4: [5, 6], 5: [7, 8], 6: [9, 10]}, width=7)
    groups = [["a b a b", "b a a"], ["c d", "d", "c"]]
    options = dict(beam_size=3, n_best=2, length_penalty=0.6)
    streamed = translator.translate(
        groups[0] + groups[1], sampler=BeamSampler(compact_batch=True, **options),
        batch_size=4, return_details=True, jit_compile=False, shortlist=shortlist)
    expected = []
    restricted = tiny_translator(seed=5)  # one model, its output bias set for each group
    bias = restricted.output_layer.bias.numpy()
    for group, allowed in zip(groups, [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 7, 8, 9, 10]]):
        restricted.output_layer.bias.assign(bias)
        forbid_outside(restricted, allowed)
        expected += restricted.translate(group, sampler=BeamSampler(**options), batch_size=1,
                                         return_details=True, jit_compile=False)
    for n_best, alone in zip(streamed, expected, strict=True):
        assert [h["tokens"] for h in n_best] == [h["tokens"] for h in alone]
        for hypothesis, expected_hypothesis in zip(n_best, alone):
            for key in ("score", "log_prob", "alignment"):
                np.testing.assert_allclose(hypothesis[key], expected_hypothesis[key],
                                           atol=1e-5)


@pytest.mark.parametrize("maximum", [0, None, 2.5, True])
def test_translate_and_export_refuse_a_bad_maximum_source_length(maximum, tmp_path):
    translator = tiny_translator(seed=1)
    message = "maximum_source_length must be a positive integer"
    with pytest.raises(ValueError, match=message):
        translator.translate(["a b"], maximum_source_length=maximum)
    with pytest.raises(ValueError, match=message):
        translator.export(tmp_path / "1", maximum_source_length=maximum)
    assert not (tmp_path / "1").exists()
