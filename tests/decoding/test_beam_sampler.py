"""BeamSampler and gather_tree against answers known independently: brute-force enumeration,
formulas evaluated by hand on 2-step examples, plain Python greedy loops.

`run_layer_test` does not fit this layer: its first call argument is a Python callable
(`step_fn`), which `keras.Model` inputs and `.keras` configs cannot carry. The same checks are
made here directly: config round trip, eager, `tf.function`, XLA, and a `keras.Model` holding
the sampler saved and reloaded.
"""

import functools
import itertools
import math
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding import BeamSampler
from kerasnmt.decoding.search.top_k_by_chunks import top_k_by_chunks
from kerasnmt.decoding.gather_tree import gather_tree

# Long tests (tests/conftest.py runs them first).
pytestmark = pytest.mark.heavy(46)

END = 2


def markov_step_fn(logits_table, attention_table=None):
    """A model whose next-token logits (and attention) depend only on the last token."""
    logits_table = tf.constant(logits_table, tf.float32)
    if attention_table is not None:
        attention_table = tf.constant(attention_table, tf.float32)

    def step_fn(ids, step, state):
        attention = None if attention_table is None else tf.gather(attention_table, ids)
        return tf.gather(logits_table, ids), attention, state

    return step_fn


def log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def length_penalty(length, alpha, normalization="gnmt"):
    """GNMT's divisor (Wu et al., 2016), or fairseq's `length ** alpha`."""
    if normalization == "power":
        return float(length) ** alpha
    return ((5.0 + length) / 6.0) ** alpha


def coverage(accumulated_attention):
    """sum(log(min(a, 1))) with never-attended positions (a == 0) counting as 1."""
    return sum(math.log(min(a, 1.0)) for a in accumulated_attention if a != 0)


def brute_force(table, start_id, max_length, alpha=0.0, beta=0.0, attention_table=None,
                freeze_finished_scores=False, min_length=0, normalization="gnmt"):
    """Every hypothesis of a Markov model, with the score a beam search ranks it by at its
    last step. Returns [(score, tokens without </s>, log_prob)], best first."""
    table = np.asarray(table, np.float64)
    size = table.shape[0] if attention_table is None else np.shape(attention_table)[1]
    hypotheses = []

    def extend(prefix, last, log_prob, accumulated):
        step = len(prefix)
        logits = table[last].copy()
        if step < min_length:
            logits[END] += -1e7
        log_probs = log_softmax(logits)
        if attention_table is not None:
            accumulated = accumulated + np.asarray(attention_table[last], np.float64)
        for word in range(len(log_probs)):
            total = log_prob + log_probs[word]
            if word == END:
                if step < min_length:
                    continue
                length = step + 1
                # OpenNMT-tf ranks a hypothesis that finished before the last step with
                # length + 1 and with its coverage penalty; one finishing at the last step
                # with its length and no coverage penalty.
                finished_earlier = length < max_length
                if freeze_finished_scores:
                    scored_length, with_coverage = length, True
                else:
                    scored_length = length + 1 if finished_earlier else length
                    with_coverage = finished_earlier
                score = total / length_penalty(scored_length, alpha, normalization)
                if with_coverage and beta:
                    score += beta * coverage(accumulated)
                hypotheses.append((score, prefix, total))
            elif step + 1 == max_length:
                hypotheses.append((total / length_penalty(max_length, alpha, normalization),
                                   prefix + [word], total))
            else:
                extend(prefix + [word], word, total, accumulated)

    extend([], start_id, 0.0, np.zeros(size))
    return sorted(hypotheses, key=lambda hypothesis: -hypothesis[0])


def as_lists(outputs, example):
    ids = outputs["ids"].numpy()[example]
    lengths = outputs["lengths"].numpy()[example]
    return [ids[n, :lengths[n]].tolist() for n in range(len(lengths))]


def assert_outputs_equal(actual, expected, atol=1e-5):
    assert sorted(actual) == sorted(expected)
    for key in expected:
        if expected[key].dtype.is_integer:
            np.testing.assert_array_equal(actual[key].numpy(), expected[key].numpy(), key)
        else:
            np.testing.assert_allclose(actual[key].numpy(), expected[key].numpy(), atol=atol,
                                       err_msg=key)


# ----------------------------------------------------------------------------- config


def test_config_round_trip():
    kwargs = dict(beam_size=5, length_penalty=0.6, coverage_penalty=0.2, top_k=3,
                  temperature=0.7, n_best=2, max_length=17, min_length=3, seed=11,
                  freeze_finished_scores=True, early_exit=True, compact_batch=True,
                  length_normalization="power", name="sampler")
    sampler = BeamSampler(**kwargs)
    config = sampler.get_config()
    assert config["finished_hypotheses"] == "in_beam"
    set_aside = BeamSampler(finished_hypotheses="set_aside").get_config()
    assert BeamSampler.from_config(set_aside).finished_hypotheses == "set_aside"
    for key, value in kwargs.items():
        assert config[key] == value
    revived = BeamSampler.from_config(config)
    assert revived.get_config() == config
    assert BeamSampler().get_config()["beam_size"] == 4
    numpy_ints = BeamSampler(beam_size=np.int64(3), max_length=np.int32(9)).get_config()
    assert type(numpy_ints["beam_size"]) is int and numpy_ints["max_length"] == 9
    assert not sampler.weights


@pytest.mark.parametrize("kwargs, message", [
    (dict(beam_size=2, n_best=3), "n_best"),
    (dict(beam_size=0), "beam_size"),
    (dict(top_k=-1), "top_k"),
    (dict(temperature=0.0), "temperature"),
    (dict(max_length=0), "max_length"),
    (dict(max_length=3, min_length=4), "min_length"),
    (dict(seed=2**40), "seed"),
    (dict(beam_size=2.0), "beam_size"),
    (dict(length_normalization="average"), "length_normalization"),
    (dict(finished_hypotheses="dropped"), "finished_hypotheses must be one of"),
    (dict(finished_hypotheses="set_aside", early_exit=True), "early_exit: must be False"),
    (dict(finished_hypotheses="set_aside", top_k=5), "top_k: must be 1"),
])
def test_bad_constructor_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BeamSampler(**kwargs)


def test_bad_call_arguments_are_refused():
    step_fn = markov_step_fn(np.zeros([4, 4]))
    with pytest.raises(ValueError, match="attention_size"):
        BeamSampler(coverage_penalty=0.2)(step_fn, tf.constant([1]), END)
    with pytest.raises(ValueError, match="return attention"):
        BeamSampler(coverage_penalty=0.2)(step_fn, tf.constant([1]), END, attention_size=3)
    with pytest.raises(ValueError, match="top_k"):
        BeamSampler(beam_size=2, top_k=9)(step_fn, tf.constant([1]), END)
    with pytest.raises(ValueError, match="start_ids"):
        BeamSampler()(step_fn, tf.constant([[1]]), END)
    with pytest.raises(ValueError, match="leading dimension"):
        BeamSampler()(step_fn, tf.constant([1, 1]), END, initial_state=tf.zeros([3, 2]))

    def growing_state(ids, step, state):
        return tf.zeros([tf.shape(ids)[0], 4]), None, tf.concat([state, state], axis=1)

    for decode in (BeamSampler(beam_size=2), tf.function(BeamSampler(beam_size=2))):
        with pytest.raises(ValueError, match="static shapes"):
            decode(growing_state, tf.constant([1]), END, initial_state=tf.zeros([1, 2]))

    def two_outputs(ids, step, state):
        return tf.zeros([tf.shape(ids)[0], 4]), state

    with pytest.raises(ValueError, match="tuple"):
        BeamSampler()(two_outputs, tf.constant([1]), END)


# ----------------------------------------------------------------------------- gather_tree


def test_gather_tree_follows_a_hand_made_parent_table():
    # Two examples, three beams, four steps. Example 0 (rows 0-2):
    #   step 0: beam 0 <- 10, beam 1 <- 11, beam 2 <- 12  (all continue <s>)
    #   step 1: beam 0 = beam 1 + 13, beam 1 = beam 1 + 2 (</s>), beam 2 = beam 0 + 14
    #   step 2: beam 0 = beam 1 + 2 (finished, forced </s>), beam 1 = beam 2 + 15,
    #           beam 2 = beam 0 + 16
    #   step 3: never decoded (num_steps = 3): its rows must be ignored.
    # Example 1 (rows 3-5) keeps every beam in place and finishes beam 2 at step 0.
    step_ids = [[10, 11, 12, 20, 21, 2],
                [13, 2, 14, 22, 23, 2],
                [2, 15, 16, 24, 25, 2],
                [99, 99, 99, 99, 99, 99]]
    parent_ids = [[0, 0, 0, 0, 0, 0],
                  [1, 1, 0, 0, 1, 2],
                  [1, 2, 0, 0, 1, 2],
                  [2, 2, 2, 2, 2, 2]]
    attention = np.arange(4 * 6 * 2, dtype=np.float32).reshape(4, 6, 2)
    final_beams = [[2, 0], [1, 2]]

    def run(step_ids, parent_ids, final_beams, attention):
        return gather_tree(step_ids, parent_ids, 3, 3, END, final_beams=final_beams,
                           step_values=attention)

    for function in (run, tf.function(run), tf.function(run, jit_compile=True)):
        ids, lengths, values = function(tf.constant(step_ids), tf.constant(parent_ids),
                                        tf.constant(final_beams), tf.constant(attention))
        assert ids.shape == (2, 2, 4)
        assert ids.numpy().tolist() == [
            [[11, 13, 16, 0], [11, 0, 0, 0]],  # 16 <- beam 0's 13 <- beam 1's 11; 11 </s>
            [[21, 23, 25, 0], [0, 0, 0, 0]],
        ]
        assert lengths.numpy().tolist() == [[3, 1], [3, 0]]
        # Values follow the same rows: (step, row) of each kept token, zeros elsewhere.
        expected_rows = [[[(0, 1), (1, 0), (2, 2)], [(0, 1)]], [[(0, 4), (1, 4), (2, 4)], []]]
        expected = np.zeros([2, 2, 4, 2], np.float32)
        for b, n in itertools.product(range(2), range(2)):
            for t, (step, row) in enumerate(expected_rows[b][n]):
                expected[b, n, t] = attention[step, row]
        np.testing.assert_array_equal(values.numpy(), expected)

    # Without final_beams every beam comes back in slot order.
    ids, lengths, values = gather_tree(step_ids, parent_ids, 3, 3, END)
    assert values is None
    assert lengths.numpy().tolist() == [[1, 3, 3], [3, 3, 0]]
    assert ids.numpy()[0, 1, :3].tolist() == [10, 14, 15]


# ----------------------------------------------------------------------------- known answers


@pytest.mark.parametrize("alpha, beta, freeze, normalization", [
    (0.0, 0.0, False, "gnmt"), (0.6, 0.0, False, "gnmt"), (1.3, 0.0, True, "gnmt"),
    (0.6, 0.4, False, "gnmt"), (0.6, 0.4, True, "gnmt"),
    (1.0, 0.0, True, "power"), (0.6, 0.4, False, "power"),
])
def test_exhaustive_beam_search_equals_brute_force(alpha, beta, freeze, normalization):
    vocab_size, max_length = 5, 3
    rng = np.random.default_rng(1)
    # Rows 5 and 6 are start tokens that are never emitted: a start token that can be
    # emitted makes equal-probability twins ([1, 0, 1] and [0, 1, 1] after 1).
    table = rng.normal(scale=1.5, size=[vocab_size + 2, vocab_size]).astype(np.float32)
    attention = rng.uniform(0.05, 0.6, size=[vocab_size + 2, 4]).astype(np.float32)
    attention[:, 3] = 0.0  # a source position never attended: counts as 1, not log(0)
    start_ids = [5, 6]
    expected = [brute_force(table, start, max_length, alpha, beta, attention, freeze,
                            normalization=normalization)
                for start in start_ids]
    count = len(expected[0])
    assert count == 1 + 4 + 16 + 64  # </s> after 0, 1, 2 tokens, or 3 tokens unfinished
    for hypotheses in expected:  # no near-ties, so the order is well defined
        assert np.min(-np.diff([score for score, _, _ in hypotheses])) > 1e-4

    sampler = BeamSampler(beam_size=vocab_size**max_length, n_best=count, max_length=max_length,
                          length_penalty=alpha, coverage_penalty=beta,
                          freeze_finished_scores=freeze, length_normalization=normalization)
    outputs = sampler(markov_step_fn(table, attention), tf.constant(start_ids), END,
                      attention_size=4)
    for example, hypotheses in enumerate(expected):
        assert as_lists(outputs, example) == [tokens for _, tokens, _ in hypotheses]
        np.testing.assert_allclose(outputs["scores"].numpy()[example],
                                   [score for score, _, _ in hypotheses], atol=1e-5)
        np.testing.assert_allclose(outputs["log_probs"].numpy()[example],
                                   [log_prob for _, _, log_prob in hypotheses], atol=1e-5)


def test_exhaustive_beam_search_with_min_length_equals_brute_force():
    vocab_size, max_length, min_length = 5, 3, 2
    table = np.random.default_rng(2).normal(size=[vocab_size + 1, vocab_size]).astype(np.float32)
    table[:, END] += 2.0  # </s> is likely, so min_length matters
    expected = brute_force(table, vocab_size, max_length, alpha=0.6, min_length=min_length)
    assert np.min(-np.diff([score for score, _, _ in expected])) > 1e-4
    assert len(expected) == 16 + 64
    sampler = BeamSampler(beam_size=vocab_size**max_length, n_best=len(expected),
                          max_length=max_length, min_length=min_length, length_penalty=0.6)
    outputs = sampler(markov_step_fn(table), tf.constant([vocab_size]), END)
    assert as_lists(outputs, 0) == [tokens for _, tokens, _ in expected]
    assert outputs["lengths"].numpy().min() >= min_length
    np.testing.assert_allclose(outputs["log_probs"].numpy()[0], [lp for _, _, lp in expected],
                               atol=1e-4)

    greedy = BeamSampler(beam_size=1, max_length=6, min_length=4)(
        markov_step_fn(table), tf.constant([1, 0]), END)
    assert greedy["lengths"].numpy().min() >= 4


def test_two_step_length_and_coverage_penalties_by_hand():
    # Tokens: 0 = a, 1 = b, 2 = </s>, 3 = <s>. Two steps, two beams.
    probs = np.array([
        [0.20, 0.30, 0.45, 0.05],  # after a
        [0.25, 0.25, 0.25, 0.25],  # after b
        [0.25, 0.25, 0.25, 0.25],  # after </s> (a finished beam is forced to </s> anyway)
        [0.50, 0.10, 0.35, 0.05],  # after <s>
    ])
    attention = np.array([
        [0.1, 0.5, 0.0],  # while emitting the token after a
        [0.3, 0.3, 0.0],
        [0.2, 0.2, 0.6],  # after </s>: finished beams must not accumulate it
        [0.7, 0.3, 0.0],  # while emitting the first token
    ])
    step_fn = markov_step_fn(np.log(probs), attention)
    alpha, beta = 0.6, 0.5
    lp = lambda length: ((5.0 + length) / 6.0) ** alpha  # noqa: E731
    # Step 0 keeps a (0.5) and </s> (0.35): lp(1) = 1 and nobody had finished.
    log_a, log_end = math.log(0.5), math.log(0.35)
    coverage_end = math.log(0.7) + math.log(0.3)  # [0.7, 0.3, 0 -> 1]
    coverage_a_end = math.log(0.8) + math.log(0.8)  # [0.7 + 0.1, 0.3 + 0.5, 0 -> 1]
    # Step 1 ranks the finished "</s>" against a's four continuations.
    for freeze in (False, True):
        candidates = {  # tokens (without </s>): (log_prob, score)
            (): (log_end, log_end / lp(1 if freeze else 2) + beta * coverage_end),
            (0,): (log_a + math.log(0.45),
                   (log_a + math.log(0.45)) / lp(2) + (beta * coverage_a_end if freeze else 0)),
            (0, 1): (log_a + math.log(0.30), (log_a + math.log(0.30)) / lp(2)),
            (0, 0): (log_a + math.log(0.20), (log_a + math.log(0.20)) / lp(2)),
        }
        best = sorted(candidates, key=lambda tokens: -candidates[tokens][1])[:2]
        outputs = BeamSampler(beam_size=2, n_best=2, max_length=2, length_penalty=alpha,
                              coverage_penalty=beta, freeze_finished_scores=freeze)(
            step_fn, tf.constant([3]), END, attention_size=3)
        assert as_lists(outputs, 0) == [list(tokens) for tokens in best]
        np.testing.assert_allclose(outputs["log_probs"].numpy()[0],
                                   [candidates[t][0] for t in best], atol=1e-6)
        np.testing.assert_allclose(outputs["scores"].numpy()[0],
                                   [candidates[t][1] for t in best], atol=1e-6)
    # With these numbers the coverage penalty decides the order: without it "</s>" wins.
    assert best == [(0,), (0, 1)]
    plain = BeamSampler(beam_size=2, n_best=2, max_length=2, length_penalty=alpha)(
        step_fn, tf.constant([3]), END)
    assert as_lists(plain, 0) == [[], [0]]
    # Alignment: the attention that produced each token, zeros on padding.
    outputs = BeamSampler(beam_size=2, n_best=2, max_length=2)(
        step_fn, tf.constant([3]), END, attention_size=3)
    assert as_lists(outputs, 0) == [[], [0]]
    np.testing.assert_allclose(outputs["alignment"].numpy()[0],
                               [np.zeros([2, 3]), [attention[3], np.zeros(3)]], atol=1e-7)


def test_finished_hypothesis_keeps_its_log_prob_when_it_changes_slot():
    # Step 0 keeps a (0.4) in slot 0 and </s> (0.35) in slot 1. At step 1 every
    # continuation of a is below 0.35, so the finished "</s>" moves to slot 0 (OpenNMT-tf
    # would give it a's log-probability there, issue #432).
    probs = np.array([
        [0.30, 0.30, 0.10, 0.30],  # after a
        [0.10, 0.10, 0.70, 0.10],  # after b
        [0.25, 0.25, 0.25, 0.25],
        [0.40, 0.25, 0.35, 0.00],  # after <s>
    ])
    step_fn = markov_step_fn(np.log(np.maximum(probs, 1e-9)))
    for freeze in (False, True):
        sampler = BeamSampler(beam_size=2, n_best=2, max_length=4, length_penalty=0.5,
                              freeze_finished_scores=freeze)
        for run in (sampler, tf.function(sampler, jit_compile=True)):
            outputs = run(step_fn, tf.constant([3]), END)
            hypotheses = as_lists(outputs, 0)
            assert hypotheses[0] == []
            np.testing.assert_allclose(outputs["log_probs"].numpy()[0, 0], math.log(0.35),
                                       atol=1e-6)
            # Its score is the one it had at the step it finished (frozen), or with the
            # length + 1 that OpenNMT-tf uses from the next step on.
            length = 1 if freeze else 2
            np.testing.assert_allclose(outputs["scores"].numpy()[0, 0],
                                       math.log(0.35) / ((5.0 + length) / 6.0) ** 0.5,
                                       atol=1e-6)


def test_log_probs_and_alignment_match_the_returned_ids():
    """Beams reorder at every step: each returned hypothesis must carry its own numbers."""
    rng = np.random.default_rng(3)
    vocab_size, sources = 7, 5
    table = rng.normal(scale=2.0, size=[vocab_size, vocab_size]).astype(np.float32)
    attention = rng.dirichlet(np.ones(sources), size=vocab_size).astype(np.float32)
    start_ids = [1, 3, 4, 0]
    outputs = BeamSampler(beam_size=4, n_best=4, max_length=6, length_penalty=0.6,
                          coverage_penalty=0.3)(
        markov_step_fn(table, attention), tf.constant(start_ids), END, attention_size=sources)
    finished_count = 0
    for example, start in enumerate(start_ids):
        for n, tokens in enumerate(as_lists(outputs, example)):
            finished = len(tokens) < 6
            finished_count += finished
            inputs = [start] + tokens
            emitted = tokens + ([END] if finished else [])
            log_prob = sum(log_softmax(table[last])[word] for last, word in zip(inputs, emitted))
            np.testing.assert_allclose(outputs["log_probs"].numpy()[example, n], log_prob,
                                       atol=1e-4)
            expected_alignment = np.zeros([6, sources])
            expected_alignment[:len(tokens)] = attention[inputs[:len(tokens)]]
            np.testing.assert_allclose(outputs["alignment"].numpy()[example, n],
                                       expected_alignment, atol=1e-6)
        scores = outputs["scores"].numpy()[example]
        assert np.all(np.diff(scores) <= 0), "hypotheses must come best first"
    assert finished_count > 4


def test_greedy_equals_a_python_argmax_loop():
    rng = np.random.default_rng(4)
    vocab_size, max_length = 8, 6
    table = rng.normal(scale=2.0, size=[vocab_size, vocab_size]).astype(np.float32)
    start_ids = [0, 1, 3, 5, 7]
    outputs = BeamSampler(beam_size=1, max_length=max_length, length_penalty=0.8)(
        markov_step_fn(table), tf.constant(start_ids), END)
    assert outputs["ids"].shape == (5, 1, max_length)
    lengths_seen = set()
    for example, start in enumerate(start_ids):
        tokens, last, log_prob = [], start, 0.0
        for _ in range(max_length):
            log_probs = log_softmax(table[last])
            last = int(np.argmax(log_probs))
            log_prob += log_probs[last]
            if last == END:
                break
            tokens.append(last)
        lengths_seen.add(len(tokens))
        assert as_lists(outputs, example) == [tokens]
        np.testing.assert_allclose(outputs["log_probs"].numpy()[example, 0], log_prob,
                                   atol=1e-5)
    assert len(lengths_seen) > 1


# ----------------------------------------------------------------------------- fast selection


def test_top_k_by_chunks_equals_tf_top_k_ties_included():
    rng = np.random.default_rng(9)
    values = rng.integers(-20, 20, size=[6, 1000]).astype(np.float32)  # many ties
    values[1] = -np.inf  # a row without any finite value
    values[2, :990] = -np.inf
    values[3] = np.finfo(np.float32).min
    values[3, 7] = np.finfo(np.float32).max  # a finished row: </s> forced
    values[4, 500:] = 30.0  # ties spread over many chunks
    values = tf.constant(values)
    for k in (1, 4, 10):
        expected = tf.math.top_k(values, k)
        for function in (top_k_by_chunks, tf.function(top_k_by_chunks, jit_compile=True)):
            actual = function(values, k)
            np.testing.assert_array_equal(actual[0], expected.values)
            np.testing.assert_array_equal(actual[1], expected.indices)


def reference_beam_search(table, start, beam_size, max_length, alpha, beta, attention, freeze):
    """OpenNMT-tf's BeamSearch for one example, transcribed step by step in float64: full
    log_softmax, all beam_size * V candidates ranked at once (stable, flat index order)."""
    vocab_size = table.shape[1]
    beams = [dict(tokens=(), last=start, log_prob=0.0 if k == 0 else -np.inf, finished=False,
                  length=0, attention=np.zeros(attention.shape[1]), score=0.0)
             for k in range(beam_size)]
    for _ in range(max_length):
        if all(beam["finished"] for beam in beams):
            break
        candidates = []
        for beam in beams:
            if beam["finished"]:
                log_probs = np.full(vocab_size, -np.inf)
                log_probs[END] = 0.0
                accumulated = beam["attention"]
            else:
                log_probs = log_softmax(table[beam["last"]])
                accumulated = beam["attention"] + attention[beam["last"]]
            length = beam["length"] + (0 if freeze and beam["finished"] else 1)
            for word in range(vocab_size):
                total = beam["log_prob"] + log_probs[word]
                score = total / length_penalty(length, alpha)
                if beam["finished"] or (freeze and word == END):
                    score += beta * coverage(accumulated)
                candidates.append((score, beam, word, total, accumulated))
        candidates.sort(key=lambda candidate: -candidate[0])
        beams = [dict(tokens=parent["tokens"] + ((word,) if not parent["finished"] else ()),
                      last=word, log_prob=total, finished=parent["finished"] or word == END,
                      length=parent["length"] + (0 if parent["finished"] else 1),
                      attention=accumulated, score=score)
                 for score, parent, word, total, accumulated in candidates[:beam_size]]
    return beams


@pytest.mark.parametrize("freeze", [False, True])
def test_large_vocabulary_matches_a_plain_transcription_of_opennmt(freeze):
    rng = np.random.default_rng(10)
    vocab_size, sources, beam_size, max_length = 300, 5, 4, 6
    table = rng.normal(scale=3.0, size=[vocab_size + 1, vocab_size])
    table[:, END] += 4.0  # hypotheses finish at different steps
    attention = rng.dirichlet(np.ones(sources), size=vocab_size + 1)
    start_ids = [vocab_size, 7, 150]
    outputs = BeamSampler(beam_size=beam_size, n_best=beam_size, max_length=max_length,
                          length_penalty=0.7, coverage_penalty=0.4,
                          freeze_finished_scores=freeze)(
        markov_step_fn(table, attention), tf.constant(start_ids), END, attention_size=sources)
    finished = 0
    for example, start in enumerate(start_ids):
        beams = reference_beam_search(table, start, beam_size, max_length, 0.7, 0.4, attention,
                                      freeze)
        hypotheses = [[t for t in beam["tokens"] if t != END] for beam in beams]
        finished += sum(beam["finished"] for beam in beams)
        assert as_lists(outputs, example) == hypotheses
        np.testing.assert_allclose(outputs["log_probs"].numpy()[example],
                                   [beam["log_prob"] for beam in beams], atol=1e-4)
        np.testing.assert_allclose(outputs["scores"].numpy()[example],
                                   [beam["score"] for beam in beams], atol=1e-4)
    assert 0 < finished < len(start_ids) * beam_size


def reference_set_aside_search(table, start, beam_size, max_length, alpha, beta, attention,
                               normalization, min_length):
    """CTranslate2's `BeamSearch::search` (`src/decoding.cc`, 4.8) for one example,
    transcribed in float64: the first step expands the first hypothesis alone; each step
    ranks all candidates by cumulative log-probability and takes the best `2 * beam_size`;
    each of the first `beam_size` that ends (`</s>`, or any word at the last step) is set
    aside and its slot refilled with the next candidate that is not `</s>`; the example
    ends at `beam_size` set-aside hypotheses, scored `log_prob / length_penalty(length)`
    (`</s>` counted) plus the coverage penalty (only with `</s>`, as kerasnmt's frozen
    scores), best first."""
    beams = [dict(tokens=(), last=start, log_prob=0.0, attention=np.zeros(attention.shape[1]))]
    set_aside = []
    for step in range(max_length):
        candidates = []
        for beam in beams:
            logits = np.asarray(table[beam["last"]], np.float64).copy()
            if step < min_length:
                logits[END] += -1e7
            accumulated = beam["attention"] + attention[beam["last"]]
            for word, log_prob in enumerate(log_softmax(logits)):
                candidates.append((beam["log_prob"] + log_prob, beam, word, accumulated))
        candidates.sort(key=lambda candidate: -candidate[0])
        candidates = candidates[:2 * beam_size]
        last_step = step == max_length - 1
        next_beams, refill = [], beam_size
        for k in range(beam_size):
            total, parent, word, accumulated = candidates[k]
            if word == END or last_step:
                length = len(parent["tokens"]) + 1
                score = total / length_penalty(length, alpha, normalization)
                if word == END:
                    score += beta * coverage(accumulated)
                tokens = parent["tokens"] + (() if word == END else (word,))
                set_aside.append((score, list(tokens), total))
                while refill < len(candidates) and candidates[refill][2] == END:
                    refill += 1
                if refill < len(candidates):  # (at the last step, none may be left)
                    total, parent, word, accumulated = candidates[refill]
                    refill += 1
            next_beams.append(dict(tokens=parent["tokens"] + (word,), last=word,
                                   log_prob=total, attention=accumulated))
        if len(set_aside) >= beam_size or last_step:
            break
        beams = next_beams
    return sorted(set_aside, key=lambda hypothesis: -hypothesis[0])[:beam_size]


@pytest.mark.parametrize("alpha, beta, normalization, min_length", [
    (0.0, 0.0, "gnmt", 0),
    (0.6, 0.0, "power", 0),
    (0.7, 0.4, "gnmt", 2),
])
@pytest.mark.parametrize("how", ["eager", "compact_batch-xla-unknown_batch", "num_slots"])
def test_set_aside_search_matches_a_plain_transcription_of_ctranslate2(
        alpha, beta, normalization, min_length, how):
    """`finished_hypotheses="set_aside"`: every example's `beam_size` best hypotheses,
    log-probabilities and scores are those of CTranslate2's search transcribed in Python,
    whichever loop runs it (a plain batch, where done examples stand still; the compacting
    loops of a SavedModel's unknown batch size under XLA; slots)."""
    rng = np.random.default_rng(12)
    vocab_size, sources, beam_size, max_length = 40, 5, 3, 7
    table = rng.normal(scale=2.5, size=[vocab_size, vocab_size])
    table[:, END] += 2.5  # hypotheses finish at different steps
    attention = rng.dirichlet(np.ones(sources), size=vocab_size)
    start_ids = [0, 7, 15, 22, 30]
    sampler = BeamSampler(beam_size=beam_size, n_best=beam_size, max_length=max_length,
                          length_penalty=alpha, coverage_penalty=beta, min_length=min_length,
                          length_normalization=normalization, compact_batch="compact" in how,
                          finished_hypotheses="set_aside")
    step_fn = markov_step_fn(table, attention)
    if how == "eager":
        outputs = sampler(step_fn, tf.constant(start_ids), END, attention_size=sources)
    elif how == "num_slots":
        outputs = sampler(lambda ids, steps, state, examples: step_fn(ids, steps, state),
                          tf.constant(start_ids), END, attention_size=sources, num_slots=2)
    else:
        outputs = tf.function(
            lambda start: sampler(step_fn, start, END, attention_size=sources),
            input_signature=[tf.TensorSpec([None], tf.int32)], jit_compile=True,
        )(tf.constant(start_ids))
    ended_at_limit = ended_early = 0
    for example, start in enumerate(start_ids):
        expected = reference_set_aside_search(table, start, beam_size, max_length, alpha,
                                              beta, attention, normalization, min_length)
        assert as_lists(outputs, example) == [tokens for _, tokens, _ in expected]
        np.testing.assert_allclose(outputs["log_probs"].numpy()[example],
                                   [log_prob for _, _, log_prob in expected], atol=1e-4)
        np.testing.assert_allclose(outputs["scores"].numpy()[example],
                                   [score for score, _, _ in expected], atol=1e-4)
        lengths = [len(tokens) for _, tokens, _ in expected]
        ended_at_limit += max(lengths) == max_length
        ended_early += max(lengths) < max_length - 1
    assert ended_early > 0 and ended_at_limit > 0  # examples end at different steps
    if "alignment" in outputs:  # the attention that produced each returned token
        for example, start in enumerate(start_ids):
            for n, tokens in enumerate(as_lists(outputs, example)):
                previous = ([start] + tokens)[:len(tokens)]
                np.testing.assert_allclose(
                    outputs["alignment"].numpy()[example, n, :len(tokens)],
                    attention[previous], atol=1e-5)


def test_set_aside_search_decodes_only_unfinished_hypotheses():
    """Each step's `step_fn` ids are those of unfinished hypotheses (a `</s>` never comes
    back as an input), while in-beam search feeds finished ones `</s>` again."""
    rng = np.random.default_rng(3)
    table = rng.normal(scale=2.0, size=[20, 20])
    table[:, END] += 3.0
    inputs = {}

    def recording_step_fn(name):
        def step_fn(ids, step, state):
            inputs.setdefault(name, []).append(ids.numpy().tolist())
            return tf.gather(tf.constant(table, tf.float32), ids), None, state
        return step_fn

    for finished in ("in_beam", "set_aside"):
        BeamSampler(beam_size=3, max_length=8, finished_hypotheses=finished)(
            recording_step_fn(finished), tf.constant([4, 9]), END)
    assert all(END not in ids for ids in inputs["set_aside"][1:])
    assert any(END in ids for ids in inputs["in_beam"][1:])


# ----------------------------------------------------------------------------- sampling


def history_step_fn(table, records):
    """A Markov model whose state is the token history, to see each step's hypotheses."""
    table = tf.constant(table, tf.float32)

    def step_fn(ids, step, state):
        history = state["history"]
        records.append((int(step), history.numpy()[:, 1:int(step)], ids.numpy()))
        column = tf.one_hot(step, history.shape[1], dtype=tf.int32)[tf.newaxis]
        history = history * (1 - column) + ids[:, tf.newaxis] * column
        return tf.gather(table, ids), None, {"history": history}

    return step_fn


def truncate(tokens):
    tokens = list(tokens)
    return tuple(tokens[:tokens.index(END) + 1]) if END in tokens else tuple(tokens)


def top_k_candidates(prefixes, start, table, k):
    """The k best (penalty-free) candidates of one example's beam, as token tuples."""
    candidates = []
    for prefix in prefixes:
        inputs = [start] + list(prefix)
        log_prob = sum(log_softmax(table[last])[word] for last, word in zip(inputs, prefix))
        if END in prefix:
            candidates.append((log_prob, prefix))
            continue
        for word, word_log_prob in enumerate(log_softmax(table[inputs[-1]])):
            candidates.append((log_prob + word_log_prob, truncate(prefix + (word,))))
    candidates.sort(key=lambda candidate: -candidate[0])
    return {tokens for _, tokens in candidates[:k]}


@pytest.mark.parametrize("beam_size, top_k", [(3, 2), (1, 3)])
def test_sampling_never_leaves_the_top_k(beam_size, top_k):
    vocab_size, max_length, start_ids = 6, 5, [1, 4]
    table = np.random.default_rng(5).normal(scale=0.7, size=[vocab_size, vocab_size])
    outcomes = set()
    for seed in range(4):
        records = []
        sampler = BeamSampler(beam_size=beam_size, n_best=beam_size, top_k=top_k,
                              max_length=max_length, seed=seed)
        history = tf.zeros([len(start_ids), max_length + 1], tf.int32)
        outputs = sampler(history_step_fn(table, records), tf.constant(start_ids), END,
                          initial_state={"history": history})
        # The hypotheses each step received, as emitted-token tuples (truncated at </s>).
        beams = []
        for step, earlier, last in records:
            rows = [() if step == 0 else truncate(list(earlier[r]) + [last[r]])
                    for r in range(len(last))]
            beams.append(rows)
        final = []
        for example in range(len(start_ids)):
            for tokens, length in zip(as_lists(outputs, example),
                                      outputs["lengths"].numpy()[example]):
                final.append(tuple(tokens) + ((END,) if length < max_length else ()))
        beams.append(final)
        for step in range(len(records)):
            for example, start in enumerate(start_ids):
                rows = slice(example * beam_size, (example + 1) * beam_size)
                live = beams[step][rows] if step else beams[step][rows][:1]
                allowed = top_k_candidates(live, start, table, top_k)
                chosen = beams[step + 1][rows]
                assert set(chosen) <= allowed, (step, example, chosen, allowed)
        outcomes.add(tuple(final))
    assert len(outcomes) > 1, "different seeds should sample differently here"


def test_seeded_sampling_is_reproducible_eager_graph_and_xla():
    table = np.random.default_rng(6).normal(scale=0.5, size=[6, 6])
    step_fn = markov_step_fn(table)
    sampler = BeamSampler(beam_size=3, n_best=3, top_k=0, max_length=6, seed=123)
    start_ids = tf.constant([1, 3, 4])
    eager = sampler(step_fn, start_ids, END)
    assert_outputs_equal(sampler(step_fn, start_ids, END), eager)
    graph = tf.function(lambda ids: sampler(step_fn, ids, END))
    assert_outputs_equal(graph(start_ids), eager)
    # XLA draws other random numbers than the CPU kernels, reproducibly.
    xla = tf.function(lambda ids: sampler(step_fn, ids, END), jit_compile=True)
    first = xla(start_ids)
    assert_outputs_equal(xla(start_ids), first)
    assert_outputs_equal(BeamSampler.from_config(sampler.get_config())(step_fn, start_ids, END),
                         eager)
    other = BeamSampler(beam_size=3, n_best=3, top_k=0, max_length=6, seed=124)(
        step_fn, start_ids, END)
    assert not np.array_equal(other["ids"].numpy(), eager["ids"].numpy())
    # Without a seed each call draws anew.
    unseeded = BeamSampler(beam_size=1, top_k=0, max_length=6)
    draws = {tuple(unseeded(step_fn, start_ids, END)["ids"].numpy().ravel()) for _ in range(5)}
    assert len(draws) > 1


def test_temperature_near_zero_matches_deterministic_search():
    table = np.random.default_rng(7).normal(scale=2.0, size=[8, 8])
    step_fn = markov_step_fn(table)
    start_ids = tf.constant([0, 1, 3, 6])
    greedy = BeamSampler(beam_size=1, max_length=7, length_penalty=0.6)(step_fn, start_ids, END)
    for top_k in (0, 3):
        cold = BeamSampler(beam_size=1, top_k=top_k, temperature=1e-6, max_length=7, seed=1,
                           length_penalty=0.6)(step_fn, start_ids, END)
        assert_outputs_equal(cold, greedy)
    # Sampling beam_size times with replacement at temperature -> 0 draws the best
    # candidate every time, so (as in OpenNMT-tf) every hypothesis is the greedy one.
    cold_beam = BeamSampler(beam_size=3, n_best=3, top_k=4, temperature=1e-6, max_length=7,
                            seed=2)(step_fn, start_ids, END)
    for n in range(3):
        np.testing.assert_array_equal(cold_beam["ids"].numpy()[:, n], greedy["ids"].numpy()[:, 0])
        np.testing.assert_allclose(cold_beam["log_probs"].numpy()[:, n],
                                   greedy["log_probs"].numpy()[:, 0], atol=1e-5)


# ----------------------------------------------------------------------------- execution modes


def decoder_with_state(table, attention_table):
    """A Markov model with a state (a decaying bias and a step counter per row)."""
    table = tf.constant(table, tf.float32)
    attention_table = tf.constant(attention_table, tf.float32)

    def step_fn(ids, step, state):
        logits = tf.gather(table, ids) + state["bias"]
        new_state = {"bias": state["bias"] * 0.5,
                     "counts": state["counts"] + tf.one_hot(ids, table.shape[0])}
        return logits, tf.gather(attention_table, ids), new_state

    return step_fn


def test_eager_graph_and_xla_agree_on_a_peaked_model():
    rng = np.random.default_rng(8)
    vocab_size, sources, batch = 9, 6, 3
    table = rng.normal(scale=5.0, size=[vocab_size, vocab_size])
    attention = rng.dirichlet(np.ones(sources), size=vocab_size)
    step_fn = decoder_with_state(table, attention)
    state = {"bias": tf.constant(rng.normal(size=[batch, vocab_size]), tf.float32),
             "counts": tf.zeros([batch, vocab_size])}
    sampler = BeamSampler(beam_size=4, n_best=3, length_penalty=0.6, coverage_penalty=0.3,
                          max_length=8, min_length=1)
    start_ids = tf.constant([1, 4, 7])

    def decode(start_ids, state, end_id):
        return sampler(step_fn, start_ids, end_id, initial_state=state,
                       attention_size=sources)

    eager = decode(start_ids, state, END)
    assert eager["ids"].shape == (3, 3, 8) and eager["alignment"].shape == (3, 3, 8, sources)
    assert eager["ids"].dtype == tf.int32 and eager["log_probs"].dtype == tf.float32
    graph = tf.function(decode)(start_ids, state, tf.constant(END))
    assert_outputs_equal(graph, eager)
    xla = tf.function(decode, jit_compile=True)(start_ids, state, tf.constant(END))
    assert_outputs_equal(xla, eager)
    # A serving signature with an unknown batch size.
    dynamic = tf.function(decode, input_signature=[
        tf.TensorSpec([None], tf.int32),
        {"bias": tf.TensorSpec([None, vocab_size]), "counts": tf.TensorSpec([None, vocab_size])},
        tf.TensorSpec([], tf.int32),
    ])
    assert_outputs_equal(dynamic(start_ids, state, tf.constant(END)), eager)


@keras.saving.register_keras_serializable(package="kerasnmt_tests")
class BigramDecoder(keras.Model):
    """A keras.Model holding a bigram table and a BeamSampler, as a Translator would."""

    def __init__(self, vocab_size, sampler, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.sampler = sampler

    def build(self, input_shape):
        self.table = self.add_weight(shape=[self.vocab_size, self.vocab_size],
                                     initializer=keras.initializers.RandomNormal(stddev=2.0,
                                                                                 seed=3))
        self.built = True

    def call(self, start_ids):
        def step_fn(ids, step, state):
            return tf.gather(self.table, ids), None, state

        return self.sampler(step_fn, start_ids, END)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size,
                      sampler=keras.saving.serialize_keras_object(self.sampler))
        return config

    @classmethod
    def from_config(cls, config):
        config["sampler"] = keras.saving.deserialize_keras_object(config["sampler"])
        return cls(**config)


def test_inside_a_keras_model_saved_and_reloaded():
    sampler = BeamSampler(beam_size=3, n_best=2, length_penalty=0.4, max_length=6)
    model = BigramDecoder(7, sampler)
    start_ids = tf.constant([1, 5], tf.int32)
    outputs = model(start_ids)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
    assert isinstance(reloaded.sampler, BeamSampler)
    assert reloaded.sampler.get_config() == sampler.get_config()
    assert_outputs_equal(reloaded(start_ids), outputs)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_unordered_state_is_carried_without_reordering(jit_compile):
    """A model whose logits depend on the whole prefix (the sum of its tokens). Keeping the
    prefix sum in the reordered state, or writing each row's token in place into an
    unordered table read through a reordered history of slots, gives the same search."""
    rng = np.random.default_rng(7)
    vocab_size, beam_size, max_length, batch_size = 6, 3, 5, 2
    table = tf.constant(rng.normal(scale=2.0, size=[13, vocab_size]), tf.float32)
    rows = batch_size * beam_size

    def prefix_sum_step_fn(ids, step, state):
        total = state + ids
        return tf.gather(table, total % 13), None, total

    def table_step_fn(ids, step, state):
        history, tokens = state  # [rows, T] slots (reordered), [rows, T] tokens (in place)
        at_step = tf.equal(tf.range(max_length), step)[tf.newaxis]
        tokens = tf.where(at_step, ids[:, tf.newaxis], tokens)
        history = tf.where(at_step, (tf.range(rows) % beam_size)[:, tf.newaxis], history)
        # Position t of row r's hypothesis is tokens[row of slot history[r, t], t].
        slot_rows = tf.range(rows)[:, tf.newaxis] // beam_size * beam_size + history
        prefix = tf.linalg.diag_part(tf.gather(tokens, slot_rows))  # [rows, T]
        total = tf.reduce_sum(tf.where(tf.range(max_length) <= step, prefix, 0), axis=1)
        return tf.gather(table, total % 13), None, (history, tokens)

    sampler = BeamSampler(beam_size=beam_size, n_best=beam_size, max_length=max_length)
    start_ids = tf.constant([1, 4])

    def search(step_fn, **kwargs):
        call = lambda: sampler(step_fn, start_ids, END, **kwargs)  # noqa: E731
        return tf.function(call, jit_compile=jit_compile)() if jit_compile else call()

    expected = search(prefix_sum_step_fn, initial_state=tf.zeros([batch_size], tf.int32))
    outputs = search(table_step_fn,
                     initial_state=tf.zeros([batch_size, max_length], tf.int32),
                     unordered_state=tf.zeros([rows, max_length], tf.int32))
    for key in ("ids", "lengths"):
        np.testing.assert_array_equal(outputs[key], expected[key])
    np.testing.assert_allclose(outputs["log_probs"], expected["log_probs"], atol=1e-6)


def test_early_exit_without_penalties_stops_sooner_with_the_same_results():
    """Markov models in which some hypotheses go on for long: without penalties the n_best
    results are the same; the loop stops when the best ones have finished (fewer steps)."""
    steps = {}

    def counting_step_fn(table, name):
        step_fn = markov_step_fn(table)

        def counted(ids, step, state):
            steps[name] = int(step) + 1  # eager: the Python body runs once per step
            return step_fn(ids, step, state)

        return counted

    sooner = 0
    for seed in range(11, 16):
        table = np.random.default_rng(seed).normal(scale=2.0, size=[7, 7]).astype(np.float32)
        table[:, END] += 1.0
        results = {}
        for early_exit in (False, True):
            sampler = BeamSampler(beam_size=4, n_best=2, max_length=12, early_exit=early_exit)
            results[early_exit] = sampler(counting_step_fn(table, early_exit),
                                          tf.constant([0, 1, 3, 4, 6]), END)
        for key in ("ids", "lengths", "log_probs", "scores"):
            np.testing.assert_array_equal(results[True][key], results[False][key])
        # Every example's two best hypotheses had finished when it stopped.
        assert (results[True]["lengths"].numpy() < steps[True]).all()
        assert steps[True] <= steps[False]
        sooner += steps[True] < steps[False]
    assert sooner >= 3  # most of these models have a long tail of unfinished hypotheses


# ----------------------------------------------------------------------------- compact_batch


def per_example_bias_step_fn(table, attention_table, bias_weight=0.3):
    """A Markov model whose logits also depend on a per-example bias: in the reordered
    state `[rows]`, or in the unordered state as `[B]` (examples) or `[B * K]` (rows)."""

    def step_fn(ids, step, state):
        if isinstance(state, tuple):  # (reordered state {}, unordered per-example bias)
            bias = state[1]
            rows_per_bias = tf.shape(ids)[0] // tf.shape(bias)[0]
            bias = tf.repeat(bias, rows_per_bias)
        else:
            bias = state
        logits = tf.gather(table, ids) + bias[:, tf.newaxis] * bias_weight
        return logits, tf.gather(attention_table, ids), state

    return step_fn


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("kwargs, bias_in", [
    (dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2), "examples"),
    (dict(beam_size=3, length_penalty=0.6, n_best=2, early_exit=True), "rows"),
    (dict(beam_size=1), "state"),
])
def test_compact_batch_gives_each_example_its_result_decoded_alone(jit_compile, bias_in,
                                                                    kwargs):
    """32 examples (batches of 32, 16 then 4) of a Markov model with some long and some
    short outputs: each example's hypotheses, scores and alignments are those of the same
    search on that example alone."""
    rng = np.random.default_rng(3)
    vocab_size, batch_size, source_length = 7, 32, 5
    table = tf.constant(rng.normal(scale=2.0, size=[vocab_size, vocab_size]), tf.float32)
    attention_table = tf.nn.softmax(rng.normal(size=[vocab_size, source_length]), axis=1)
    attention_table = tf.cast(attention_table, tf.float32)
    step_fn = per_example_bias_step_fn(table, attention_table)
    start_ids = tf.constant(rng.integers(0, vocab_size, size=batch_size), tf.int32)
    bias = tf.constant(rng.normal(size=batch_size), tf.float32)
    kwargs = dict(max_length=12, **kwargs)
    beam_size = kwargs["beam_size"]

    def search(sampler, start_ids, bias):
        state = {"initial_state": bias} if bias_in == "state" else {
            "unordered_state": bias if bias_in == "examples" else tf.repeat(bias, beam_size)}
        return sampler(step_fn, start_ids, END, attention_size=source_length, **state)

    compacting = BeamSampler(compact_batch=True, **kwargs)
    assert compacting._compacted_batch_sizes(batch_size, batch_size) == [32, 16, 4]
    if jit_compile:
        outputs = tf.function(lambda *args: search(compacting, *args), jit_compile=True)(
            start_ids, bias)
    else:
        outputs = search(compacting, start_ids, bias)
    lengths = outputs["lengths"].numpy()
    assert lengths.max() == 12 and lengths.min() <= 2  # long and short outputs
    search_alone = tf.function(functools.partial(search, BeamSampler(**kwargs)))
    for example in range(batch_size):
        alone = search_alone(start_ids[example:example + 1], bias[example:example + 1])
        for key in ("ids", "lengths"):
            np.testing.assert_array_equal(outputs[key][example], alone[key][0])
        for key in ("log_probs", "scores", "alignment"):
            np.testing.assert_allclose(outputs[key][example], alone[key][0], atol=1e-5)


@pytest.mark.parametrize("beam_size", [1, 2])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_compact_batch_with_a_batch_size_unknown_when_tracing(jit_compile, beam_size):
    """Traced for `[None]` start ids (as in a SavedModel signature), the loops run at
    `B`, `ceil(B / 2)` and `ceil(B / 8)` examples: the same results as the static batch
    sizes `[9, 5, 2]`, and each example's result alone, also for a batch of one example
    (whose first loop, at one example, would take no step) or none."""
    rng = np.random.default_rng(5)
    table = rng.normal(scale=2.0, size=[7, 7]).astype(np.float32)
    sampler = BeamSampler(beam_size=beam_size, length_penalty=0.6, max_length=9,
                          compact_batch=True)
    assert sampler._compacted_batch_sizes(9, 9) == [9, 5, 2]
    assert sampler._compacted_batch_sizes(1, 1) == [1]

    def search(start_ids):
        return sampler(markov_step_fn(table), start_ids, END)

    dynamic = tf.function(search, input_signature=[tf.TensorSpec([None], tf.int32)],
                          jit_compile=jit_compile)
    start_ids = tf.constant(rng.integers(0, 7, size=9), tf.int32)
    outputs = dynamic(start_ids)
    assert_outputs_equal(outputs, search(start_ids))
    alone = BeamSampler(beam_size=beam_size, length_penalty=0.6, max_length=9)
    for example in range(9):
        expected = alone(markov_step_fn(table), start_ids[example:example + 1], END)
        np.testing.assert_array_equal(outputs["ids"][example], expected["ids"][0])
    assert_outputs_equal(dynamic(start_ids[:1]), search(start_ids[:1]))
    assert dynamic(tf.zeros([0], tf.int32))["ids"].shape[0] == 0


def test_a_batch_size_unknown_when_tracing_traces_one_step_for_all_the_loops():
    """With `[None]` start ids (a SavedModel's decode) the three loops' tensors have the
    same shapes: `step_fn` is traced once for all of them, where a static batch size
    traces it once per loop."""
    table = np.random.default_rng(5).normal(scale=2.0, size=[7, 7]).astype(np.float32)
    sampler = BeamSampler(beam_size=2, length_penalty=0.6, max_length=9, compact_batch=True)
    seen = []

    def counting_step_fn(ids, step, state):
        seen.append(tf.get_static_value(step))
        return markov_step_fn(table)(ids, step, state)

    def traced_for(spec):
        seen.clear()
        tf.function(lambda start_ids: sampler(counting_step_fn, start_ids, END)
                    ).get_concrete_function(spec)
        return seen

    assert traced_for(tf.TensorSpec([None], tf.int32)) == [None]
    assert traced_for(tf.TensorSpec([9], tf.int32)) == [None, None, None]  # 9, 5, 2


@pytest.mark.parametrize("beam_size", [1, 2])
@pytest.mark.parametrize("compact_batch", [False, True])
def test_every_step_is_taken_in_the_loop(compact_batch, beam_size):
    """`step_fn` is traced once for each loop, the first step included (never before the
    loop, at a constant step), and the search is still the plain one: greedy follows the
    most likely token of the Markov table from each start, beam search is OpenNMT-tf's,
    transcribed in float64."""
    rng = np.random.default_rng(7)
    table = rng.normal(scale=2.0, size=[7, 7]).astype(np.float32)
    start_ids = tf.constant(rng.integers(0, 7, size=9), tf.int32)
    plain, seen = markov_step_fn(table), []

    def recording(ids, step, state):
        seen.append(tf.get_static_value(step))
        return plain(ids, step, state)

    sampler = BeamSampler(beam_size=beam_size, length_penalty=0.6, max_length=6,
                          compact_batch=compact_batch)
    outputs = tf.function(lambda ids: sampler(recording, ids, END), jit_compile=True)(start_ids)
    loops = 3 if compact_batch else 1  # compacted: 9, 5, then 2 examples
    assert seen == [None] * loops
    no_example = tf.function(lambda ids: sampler(plain, ids, END),
                             input_signature=[tf.TensorSpec([None], tf.int32)])
    assert no_example(tf.zeros([0], tf.int32))["ids"].shape[0] == 0
    no_attention = np.zeros([7, 1])
    for example, start in enumerate(start_ids.numpy().tolist()):
        if beam_size == 1:
            expected, last = [], start
            while len(expected) < 6:
                last = int(np.argmax(table[last]))
                if last == END:
                    break
                expected.append(last)
        else:
            best = reference_beam_search(table, start, beam_size, 6, 0.6, 0.0, no_attention,
                                         freeze=False)[0]
            expected = [token for token in best["tokens"] if token != END]
        assert as_lists(outputs, example) == [expected]


def test_compact_batch_refuses_an_unordered_state_of_another_batch_size():
    table = tf.zeros([6, 6])

    def step_fn(ids, step, state):
        return tf.gather(table, ids), None, state

    sampler = BeamSampler(beam_size=2, max_length=4, compact_batch=True)
    with pytest.raises(ValueError, match="leading dimension of B"):
        sampler(step_fn, tf.zeros([8], tf.int32), END, unordered_state=tf.zeros([3]))


# ----------------------------------------------------------------------------- num_slots


def slot_step_fn(table, attention_table, bias, beam_size):
    """A Markov model with a per-example bias, a step-dependent `</s>` logit and a
    reordered per-hypothesis counter in the state: called as `step_fn(ids, step, state)`
    (a batch, `step` a scalar) or `step_fn(ids, steps, state, examples)` (slots)."""

    def step_fn(ids, step, state, examples=None):
        counter, example_ids = state
        if examples is not None:  # per-slot steps and examples -> per row
            step = tf.repeat(step, beam_size)
            example_ids = tf.repeat(examples, beam_size)
        logits = (tf.gather(table, ids) + 0.3 * tf.gather(bias, example_ids)[:, tf.newaxis]
                  + tf.one_hot(END, table.shape[1])
                  * 0.05 * tf.cast(step + counter, tf.float32)[:, tf.newaxis])
        return logits, tf.gather(attention_table, ids), (counter + 1, state[1])

    return step_fn


@pytest.mark.parametrize("kwargs, jit_compile", [
    (dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2, min_length=2), False),
    (dict(beam_size=3, length_penalty=0.6, coverage_penalty=0.2, min_length=2), True),
    (dict(beam_size=3, length_penalty=0.6, n_best=2, early_exit=True), False),
    (dict(beam_size=1), True),
])
def test_examples_streamed_through_slots_get_their_results_decoded_alone(kwargs, jit_compile):
    """12 examples with long and short outputs through 1, 5 or 16 slots (more slots than
    examples: some idle from the start), the last 3 left out by `num_examples`: each
    decoded example's hypotheses, scores and alignments are those of the same search on
    that example alone; the left-out ones are empty."""
    rng = np.random.default_rng(11)
    vocab_size, num_examples, source_length = 7, 12, 5
    table = tf.constant(rng.normal(scale=2.0, size=[vocab_size, vocab_size]), tf.float32)
    attention_table = tf.cast(
        tf.nn.softmax(rng.normal(size=[vocab_size, source_length]), axis=1), tf.float32)
    start_ids = tf.constant(rng.integers(0, vocab_size, size=num_examples), tf.int32)
    bias = tf.constant(rng.normal(size=num_examples), tf.float32)
    kwargs = dict(max_length=12, **kwargs)
    beam_size = kwargs["beam_size"]
    step_fn = slot_step_fn(table, attention_table, bias, beam_size)
    initial_state = (tf.zeros([num_examples], tf.int32), tf.range(num_examples))
    sampler = BeamSampler(**kwargs)
    search_alone = tf.function(lambda start, state: sampler(
        step_fn, start, END, initial_state=state, attention_size=source_length))
    expected = [
        search_alone(start_ids[i:i + 1], tf.nest.map_structure(lambda t: t[i:i + 1],  # noqa: B023
                                                               initial_state))
        for i in range(num_examples)
    ]
    lengths = np.concatenate([e["lengths"][:, 0] for e in expected])
    assert lengths.max() == 12 and lengths.min() <= 2  # long and short outputs
    for num_slots in (1, 5, 16):
        def search(num_slots=num_slots):
            return sampler(step_fn, start_ids, END, initial_state=initial_state,
                           attention_size=source_length, num_slots=num_slots, num_examples=9)

        outputs = tf.function(search, jit_compile=jit_compile)()
        for example in range(9):
            for key in ("ids", "lengths"):
                np.testing.assert_array_equal(outputs[key][example], expected[example][key][0])
            for key in ("log_probs", "scores", "alignment"):
                np.testing.assert_allclose(outputs[key][example], expected[example][key][0],
                                           atol=1e-5)
        np.testing.assert_array_equal(outputs["lengths"][9:], 0)
        np.testing.assert_array_equal(outputs["ids"][9:], 0)


def test_slots_without_attention_size_record_no_alignment():
    """With `num_slots`, alignments are recorded only when `attention_size` is given."""
    table = tf.math.log(tf.constant([[0.1, 0.1, 0.6, 0.2]] * 4))
    attention = tf.ones([4, 3]) / 3

    def step_fn(ids, steps, state, examples):
        return tf.gather(table, ids), tf.gather(attention, ids), state

    sampler = BeamSampler(beam_size=2, max_length=3)
    outputs = sampler(step_fn, tf.ones([3], tf.int32), END, num_slots=2)
    assert "alignment" not in outputs
    np.testing.assert_array_equal(outputs["lengths"][:, 0], [0, 0, 0])  # </s> first
    with_alignment = sampler(step_fn, tf.ones([3], tf.int32), END, num_slots=2,
                             attention_size=3)
    assert with_alignment["alignment"].shape == (3, 1, 3, 3)
    with pytest.raises(ValueError, match="num_slots must be an int >= 1, got 0"):
        sampler(step_fn, tf.ones([3], tf.int32), END, num_slots=0)
    nothing = tf.function(lambda: sampler(step_fn, tf.zeros([0], tf.int32), END, num_slots=2,
                                          attention_size=3))()
    assert nothing["ids"].shape == (0, 1, 3) and nothing["alignment"].shape == (0, 1, 3, 3)


def test_the_last_examples_of_a_stream_finish_in_a_quarter_of_the_slots():
    """Once no example waits for a slot and at most a quarter of the slots are busy, the
    busy ones go on in `ceil(num_slots / 4)` slots (8 -> 2 here, rows of beam 2): the
    step function then gets 4 rows, and the results stay those of each example alone."""
    rng = np.random.default_rng(19)  # two outputs of 10 tokens, the others of 0 or 1
    vocab_size, num_examples, beam_size = 6, 12, 2
    table = tf.constant(rng.normal(scale=2.0, size=[vocab_size, vocab_size]), tf.float32)
    attention_table = tf.ones([vocab_size, 3]) / 3
    bias = tf.constant(rng.normal(size=num_examples), tf.float32)
    markov = slot_step_fn(table, attention_table, bias, beam_size)
    rows_per_call = []

    def step_fn(ids, steps, state, examples):
        rows_per_call.append(int(ids.shape[0]))
        return markov(ids, steps, state, examples)

    start_ids = tf.constant(rng.integers(0, vocab_size, size=num_examples), tf.int32)
    initial_state = (tf.zeros([num_examples], tf.int32), tf.range(num_examples))
    # early_exit: an example whose best output is short frees its slot at once.
    sampler = BeamSampler(beam_size=beam_size, length_penalty=0.6, max_length=10,
                          early_exit=True)
    outputs = sampler(step_fn, start_ids, END, initial_state=initial_state, num_slots=8)
    first_small = rows_per_call.index(4)
    assert first_small > 0 and set(rows_per_call[:first_small]) == {16}
    assert set(rows_per_call[first_small:]) == {4}
    for example in range(num_examples):
        alone = sampler(markov, start_ids[example:example + 1], END, initial_state=(
            initial_state[0][example:example + 1], initial_state[1][example:example + 1]))
        np.testing.assert_array_equal(outputs["ids"][example], alone["ids"][0])
        np.testing.assert_allclose(outputs["scores"][example], alone["scores"][0], atol=1e-5)
