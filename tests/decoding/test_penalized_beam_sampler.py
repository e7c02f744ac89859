"""PenalizedBeamSampler in a tiny randomly initialized keras-hub BART: against keras-hub's
own samplers on the same model, and against a brute-force search over every output."""

import itertools

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kerasnmt.decoding.search import TopKSampling
from kerasnmt.decoding import PenalizedBeamSampler

pytestmark = pytest.mark.heavy(11)

VOCAB_SIZE = 5
PAD, START, END = 0, 1, 2
ENCODER_TOKENS = [[3, 4, 2, 0], [4, 4, 3, 2], [3, 3, 3, 2]]


@pytest.fixture(scope="module")
def bart():
    """A one-layer BART whose next-token distributions depend on the prefix (weights drawn
    with a fixed seed; small feed-forward and cross-attention weights, unit layer norms)."""
    backbone = keras_hub.models.BartBackbone(
        vocabulary_size=VOCAB_SIZE, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=8,
    )
    rng = np.random.default_rng(0)
    for weight in backbone.weights:
        if "gamma" not in weight.path and "beta" not in weight.path:
            small = "feedforward" in weight.path
            weight.assign(rng.normal(0, 0.1 if small else 1.5, weight.shape))
    return keras_hub.models.BartSeq2SeqLM(backbone=backbone, preprocessor=None)


def generate_inputs(new_tokens, decoder_prompts=None):
    """`generate_step`'s inputs: the encoder tokens, and the decoder prompts (`[START]`
    each) padded with room for `new_tokens`."""
    decoder_prompts = decoder_prompts or [[START]] * len(ENCODER_TOKENS)
    length = max(map(len, decoder_prompts)) + new_tokens
    decoder_ids = [prompt + [PAD] * (length - len(prompt)) for prompt in decoder_prompts]
    return {
        "encoder_token_ids": tf.constant(ENCODER_TOKENS),
        "encoder_padding_mask": tf.not_equal(ENCODER_TOKENS, PAD),
        "decoder_token_ids": tf.constant(decoder_ids),
        "decoder_padding_mask": tf.constant(
            [[i < len(prompt) for i in range(length)] for prompt in decoder_prompts]),
    }


def sampler_outputs(bart, sampler, inputs, stop_token_ids):
    """What `sampler` returns inside `bart.generate_step` (its n-best tuples included,
    which `generate_step` itself does not take)."""
    outputs = []

    def recording_sampler(**kwargs):
        outputs.append(sampler(**kwargs))
        return outputs[-1][0][:, 0] if isinstance(outputs[-1], tuple) else outputs[-1]

    bart.sampler = recording_sampler
    bart.generate_step(inputs, stop_token_ids=stop_token_ids)
    return outputs[0]


def next_token_log_probs(bart, example, prefixes):
    """log p(next token | prefix) `[len(prefixes), V]` for one example, from the model's
    plain forward pass (no cache, no sampler)."""
    length = 1 + max(map(len, prefixes))
    decoder_ids = [[START, *prefix] + [PAD] * (length - 1 - len(prefix)) for prefix in prefixes]
    inputs = generate_inputs(0)
    logits = bart({
        "encoder_token_ids": tf.repeat(inputs["encoder_token_ids"][example:example + 1],
                                       len(prefixes), axis=0),
        "encoder_padding_mask": tf.repeat(inputs["encoder_padding_mask"][example:example + 1],
                                          len(prefixes), axis=0),
        "decoder_token_ids": tf.constant(decoder_ids),
        "decoder_padding_mask": tf.ones([len(prefixes), length], tf.bool),
    })
    last = tf.constant([len(prefix) for prefix in prefixes])
    return tf.nn.log_softmax(tf.gather(logits, last, batch_dims=1)).numpy()


def brute_force(bart, example, new_tokens, length_penalty, min_length, normalization):
    """Every output of at most `new_tokens` tokens (ended by END, or cut at `new_tokens`)
    with its score `log p / ((5 + length) / 6) ** length_penalty` (`normalization="gnmt"`)
    or `log p / length ** length_penalty` (`"power"`), best first; END is forbidden (the
    others renormalized) during the first `min_length` steps."""
    prefixes = [prefix for length in range(new_tokens)
                for prefix in itertools.product(range(VOCAB_SIZE), repeat=length)
                if END not in prefix]
    log_probs = dict(zip(prefixes, next_token_log_probs(bart, example, prefixes)))

    def step_log_probs(prefix):
        values = log_probs[prefix].copy()
        if len(prefix) < min_length:
            values[END] = -np.inf
            values -= np.log(np.exp(values).sum())
        return values

    outputs = []
    for prefix in prefixes:
        total = sum(step_log_probs(prefix[:i])[token] for i, token in enumerate(prefix))
        for token, log_prob in enumerate(step_log_probs(prefix)):
            if np.isfinite(log_prob) and (token == END or len(prefix) + 1 == new_tokens):
                output = (*prefix, token)
                base = len(output) if normalization == "power" else (5 + len(output)) / 6
                score = (total + log_prob) / base ** length_penalty
                outputs.append(([START, *output] + [END] * (new_tokens - len(output)), score))
    return sorted(outputs, key=lambda output: -output[1])


@pytest.mark.parametrize("length_penalty, min_length, normalization",
                         [(1.0, 0, "gnmt"), (0.6, 2, "gnmt"), (1.0, 0, "power")])
def test_an_exhaustive_beam_finds_the_brute_force_best_outputs(bart, length_penalty,
                                                               min_length, normalization):
    """With `VOCAB_SIZE ** new_tokens` beams nothing is pruned: the n-best lists are the
    best outputs of all, by the length penalty (complete ones at their own length)."""
    new_tokens, n_best = 3, 6
    sampler = PenalizedBeamSampler(num_beams=VOCAB_SIZE ** new_tokens, n_best=n_best,
                                   length_penalty=length_penalty, min_length=min_length,
                                   freeze_finished_scores=True,
                                   length_normalization=normalization)
    prompts, scores = sampler_outputs(bart, sampler, generate_inputs(new_tokens), (END,))
    for example in range(len(ENCODER_TOKENS)):
        expected = brute_force(bart, example, new_tokens, length_penalty, min_length,
                               normalization)[:n_best]
        assert prompts[example].numpy().tolist() == [ids for ids, _ in expected]
        np.testing.assert_allclose(scores[example], [score for _, score in expected],
                                   rtol=1e-4)


def test_without_stop_token_and_penalty_the_beams_are_keras_hubs(bart):
    """keras-hub's `BeamSampler` extends beams past a stop token; without one, both are
    plain beam search: the same beams, the same log-probabilities, the same best one."""
    inputs = generate_inputs(new_tokens=4)
    prompts, scores = sampler_outputs(
        bart, PenalizedBeamSampler(num_beams=3, n_best=3), inputs, None)
    expected_prompts, expected_log_probs = sampler_outputs(
        bart, keras_hub.samplers.BeamSampler(num_beams=3, return_all_beams=True), inputs,
        None)
    np.testing.assert_array_equal(prompts, expected_prompts)
    np.testing.assert_allclose(scores, expected_log_probs, rtol=1e-5)

    bart.compile(sampler=PenalizedBeamSampler(num_beams=3))
    best = bart.generate_step(inputs, stop_token_ids=None)["decoder_token_ids"]
    np.testing.assert_array_equal(best, expected_prompts[:, 0])


def test_one_beam_is_keras_hubs_greedy_sampler_in_generate(bart):
    """Through `compile(sampler=...)` and the compiled `generate`, with token 3 as the stop
    token, which one example emits first (its output ends there) and the others never."""
    inputs = generate_inputs(new_tokens=6)
    outputs = {}
    for name, sampler in [("greedy", keras_hub.samplers.GreedySampler()),
                          ("penalized", PenalizedBeamSampler(num_beams=1))]:
        bart.compile(sampler=sampler)
        outputs[name] = bart.generate(inputs, stop_token_ids=(3,))
    mask = outputs["greedy"]["decoder_padding_mask"]
    np.testing.assert_array_equal(outputs["penalized"]["decoder_padding_mask"], mask)
    np.testing.assert_array_equal(outputs["penalized"]["decoder_token_ids"] * mask,
                                  outputs["greedy"]["decoder_token_ids"] * mask)
    assert mask.sum(axis=1).tolist() == [7, 2, 7]


def test_top_k_draws_among_the_k_most_probable_words(bart):
    new_tokens = 3
    sampler = PenalizedBeamSampler(num_beams=1, top_k=2, temperature=2.0, seed=7)
    prompts = sampler_outputs(bart, sampler, generate_inputs(new_tokens), None).numpy()
    for example, prompt in enumerate(prompts):
        prefixes = [tuple(prompt[1:1 + i]) for i in range(new_tokens)]
        log_probs = next_token_log_probs(bart, example, prefixes)
        top_2 = np.argsort(-log_probs, axis=1)[:, :2]
        assert all(token in top_2[i] for i, token in enumerate(prompt[1:]))


def test_prompts_of_different_lengths_are_kept_and_each_decodes_as_alone(bart):
    """Prompt tokens are neither sampled nor scored: in a batch of prompts of different
    lengths each example gets the output it gets alone (with frozen scores, a done
    example's ranking no longer moves while the others decode)."""
    prompts = [[START], [START, 4, 3], [START, 3]]
    inputs = generate_inputs(3, prompts)
    bart.compile(sampler=PenalizedBeamSampler(num_beams=2, length_penalty=1.0, min_length=1,
                                              freeze_finished_scores=True))
    together = bart.generate_step(inputs, (END,))
    for example, prompt in enumerate(prompts):
        alone = bart.generate_step(
            {key: value[example:example + 1] for key, value in inputs.items()}, (END,))
        mask = alone["decoder_padding_mask"][0]
        np.testing.assert_array_equal(together["decoder_padding_mask"][example], mask)
        np.testing.assert_array_equal(together["decoder_token_ids"][example] * mask,
                                      alone["decoder_token_ids"][0] * mask)
        assert together["decoder_token_ids"][example, :len(prompt)].numpy().tolist() == prompt


@pytest.mark.parametrize("options, message", [
    (dict(coverage_penalty=0.2), "coverage_penalty needs the attention weights"),
    (dict(temperature=0.5), "temperature applies to sampling only"),
    (dict(num_beams=2, n_best=3), r"n_best: 3 is more than num_beams \(2\)"),
    (dict(top_k=-1), "top_k must be an int >= 0"),
    (dict(top_k=0, seed=2**31), "seed must be None or an int32, got 2147483648"),
    (dict(length_normalization="average"), r"length_normalization must be one of \('gnmt', "
                                           r"'power'\), got 'average'"),
])
def test_options_keras_hubs_loop_cannot_honour_are_refused(options, message):
    with pytest.raises(ValueError, match="PenalizedBeamSampler: " + message):
        PenalizedBeamSampler(**options)


def test_more_than_one_stop_token_is_refused(bart):
    bart.compile(sampler=PenalizedBeamSampler(num_beams=2))
    with pytest.raises(ValueError, match=r"one stop token id, got \(2, 3\)"):
        bart.generate_step(generate_inputs(2), stop_token_ids=(END, 3))


def test_one_beam_is_keras_hubs_greedy_sampler_in_a_causal_lm():
    """GPT-2's `generate`, prompts of different lengths (kept as they are)."""
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=7, num_layers=1, num_heads=2,
                                             hidden_dim=8, intermediate_dim=16,
                                             max_sequence_length=10)
    rng = np.random.default_rng(1)
    for weight in backbone.weights:
        if "gamma" not in weight.path and "beta" not in weight.path:
            small = "feedforward" in weight.path or "intermediate" in weight.path
            weight.assign(rng.normal(0, 0.1 if small else 1.5, weight.shape))
    causal_lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    prompts = [[1, 3, 4], [1], [1, 6]]
    inputs = {"token_ids": tf.constant([prompt + [0] * (8 - len(prompt)) for prompt in prompts]),
              "padding_mask": tf.constant([[i < len(prompt) for i in range(8)]
                                           for prompt in prompts])}
    outputs = []
    for sampler in [keras_hub.samplers.GreedySampler(), PenalizedBeamSampler(num_beams=1)]:
        causal_lm.compile(sampler=sampler)
        outputs.append(causal_lm.generate(inputs, stop_token_ids=None)["token_ids"])
    np.testing.assert_array_equal(outputs[1], outputs[0])
    assert [row[:len(prompt)] for row, prompt in zip(outputs[1].tolist(), prompts)] == prompts


def test_the_config_rebuilds_the_sampler():
    sampler = PenalizedBeamSampler(num_beams=3, length_penalty=0.6, n_best=2, min_length=1,
                                   top_k=5, temperature=0.7, seed=4, early_exit=True,
                                   length_normalization="power")
    rebuilt = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sampler))
    assert isinstance(rebuilt, PenalizedBeamSampler)
    assert rebuilt.get_config() == sampler.get_config()
    assert isinstance(rebuilt.rule, TopKSampling) and rebuilt.rule.top_k == 5
