"""kerasnmt's search rule as a keras-hub sampler: beam search with a length penalty, n-best
lists, a minimum length and top-k sampling, for keras-hub's generative models
(`Seq2SeqLM` and `CausalLM`: `compile(sampler=...)`).

Examples:
    >>> import numpy as np
    >>> import tensorflow as tf
    >>> next_token_probs = np.array([  # rows: last token (1: <s>, 3: "a"); columns: next token
    ...     [0.25] * 4, [0.05, 0.05, 0.5, 0.4], [0.25] * 4, [0.05, 0.05, 0.8, 0.1]], "float32")
    >>> def next(prompt, cache, index):  # keras-hub's `next`: (logits, hidden_states, cache)
    ...     return tf.gather(np.log(next_token_probs), prompt[:, index - 1]), None, cache
    >>> prompt = tf.constant([[1, 0, 0, 0]])
    >>> sampler = PenalizedBeamSampler(num_beams=2)  # "</s>" (0.5) beats "a </s>" (0.4 * 0.8)
    >>> sampler(next, prompt, index=1, stop_token_ids=(2,)).numpy().tolist()
    [[1, 2, 2, 0]]
    >>> sampler = PenalizedBeamSampler(num_beams=2, n_best=2, length_penalty=1.0,
    ...                                length_normalization="power", freeze_finished_scores=True)
    >>> prompts, scores = sampler(next, prompt, index=1, stop_token_ids=(2,))
    >>> prompts.numpy().tolist()  # divided by its length, "a </s>" wins; then only </s>
    [[[1, 3, 2, 0], [1, 2, 2, 0]]]
    >>> np.allclose(scores, [[np.log(0.4 * 0.8) / 2, np.log(0.5) / 1]])
    True
"""

import keras
import keras_hub
import tensorflow as tf

from kerasnmt.decoding.option_rules import decoding_option_problems
from kerasnmt.decoding.search.rule_choice import choose_rule
from kerasnmt.decoding.search.scoring import (
    DEFAULT_LENGTH_NORMALIZATION,
    check_length_normalization,
)
from kerasnmt.decoding.search.top_k import SEED_RANGE


@keras.saving.register_keras_serializable(package="kerasnmt")
class PenalizedBeamSampler(keras_hub.samplers.Sampler):
    """A `keras_hub.samplers.Sampler` that searches by the rule of
    `kerasnmt.decoding.BeamSampler` (`kerasnmt.decoding.search`: `BeamRanking`, `Greedy` or
    `TopKSampling`), step by step in keras-hub's loop (`Sampler.run_loop`).

    Each example keeps `num_beams` hypotheses, ranked by

        score = cum_log_prob / ((5 + length) / 6) ** length_penalty

    (Wu et al., 2016; `length` counts the tokens generated, the stop token included), or
    `cum_log_prob / length ** length_penalty` with `length_normalization="power"`
    (fairseq's `--lenpen`). A
    hypothesis that emits the stop token is complete: it then emits only the stop token,
    keeps its log-probability, and stays in the beam; the loop ends when every hypothesis
    is complete or the prompt is full. keras-hub's `BeamSampler` instead goes on extending
    and scoring a beam after its stop token, so the two agree when there is no stop token
    (`stop_token_ids=None`) and without a length penalty. Prompt tokens (`mask`) are
    kept as they are and not scored; `min_length` counts from the end of each prompt.

    The coverage penalty of `kerasnmt.decoding.BeamSampler` needs the attention of each
    step, which keras-hub's `next` does not return: it is refused. Sampling and the loop
    need TensorFlow (the Keras backend kerasnmt runs on).

    Args:
        num_beams: hypotheses kept per example; 1 is greedy search (or plain sampling).
        length_penalty: the exponent `alpha` of the length penalty; 0 disables it.
        n_best: hypotheses returned per example. 1: the best prompt `[B, max_length]`, as
            keras-hub's samplers return it (what `generate` takes); more: `(prompts
            [B, n_best, max_length], scores [B, n_best])`, best first, as keras-hub's
            `BeamSampler(return_all_beams=True)` returns its beams.
        min_length: the stop token is forbidden during the first `min_length` steps.
        top_k: 1 for deterministic search; `k > 1` samples among the `k` best candidates;
            0 samples among all candidates.
        temperature: the scores are divided by it before sampling (only with `top_k != 1`).
        seed: an int for reproducible sampling, or `None` for a new seed at each call.
        freeze_finished_scores: score a complete hypothesis with its own length, instead
            of OpenNMT-tf's `length + 1` (see `kerasnmt.decoding.BeamSampler`).
        early_exit: stop when the `n_best` best hypotheses of every example are complete.
        coverage_penalty: must be 0 (see above).
        length_normalization: `"gnmt"` or `"power"`: the divisor of the length penalty
            (see above).
    """

    def __init__(self, num_beams=4, length_penalty=0.0, n_best=1, min_length=0, top_k=1,
                 temperature=1.0, seed=None, freeze_finished_scores=False, early_exit=False,
                 coverage_penalty=0.0, length_normalization=DEFAULT_LENGTH_NORMALIZATION):
        if coverage_penalty != 0:
            raise ValueError(
                "PenalizedBeamSampler: coverage_penalty needs the attention weights of each "
                "step, which keras-hub's `next` does not return; use "
                "kerasnmt.decoding.BeamSampler for a coverage penalty"
            )
        for name, value, minimum in (("num_beams", num_beams, 1), ("n_best", n_best, 1),
                                     ("min_length", min_length, 0), ("top_k", top_k, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(
                    f"PenalizedBeamSampler: {name} must be an int >= {minimum}, got {value!r}"
                )
        problems = decoding_option_problems({"n_best": n_best, "beam_size": num_beams},
                                            {"beam_size": "num_beams"})
        if problems:
            raise ValueError("PenalizedBeamSampler: " + "; ".join(problems.values()))
        if not temperature > 0:
            raise ValueError(f"PenalizedBeamSampler: temperature must be > 0, got "
                             f"{temperature!r}")
        if top_k == 1 and temperature != 1:
            raise ValueError(
                "PenalizedBeamSampler: temperature applies to sampling only (top_k != 1); "
                f"got temperature={temperature!r} with top_k=1"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or not SEED_RANGE[0] <= seed < SEED_RANGE[1]):
            raise ValueError(f"PenalizedBeamSampler: seed must be None or an int32, got {seed!r}")
        check_length_normalization(length_normalization, "PenalizedBeamSampler")
        super().__init__(temperature=float(temperature))
        self.num_beams = num_beams
        self.length_penalty = float(length_penalty)
        self.n_best = n_best
        self.min_length = min_length
        self.top_k = top_k
        self.seed = seed
        self.freeze_finished_scores = bool(freeze_finished_scores)
        self.early_exit = bool(early_exit)
        self.length_normalization = length_normalization
        self.rule = choose_rule(
            num_beams, top_k, self.temperature, seed, n_best=n_best, min_length=min_length,
            length_penalty=self.length_penalty, length_normalization=length_normalization,
            freeze_finished_scores=self.freeze_finished_scores, early_exit=self.early_exit)

    def __call__(self, next, prompt, cache=None, index=0, mask=None, stop_token_ids=None,
                 hidden_states=None, model=None):
        """Fills `prompt` `[B, max_length]` from `index` on (see `keras_hub.samplers.Sampler`);
        returns the best prompt, or the `n_best` best and their scores."""
        rule, num_beams = self.rule, self.num_beams
        end_id = self._end_id(stop_token_ids)
        prompt = tf.convert_to_tensor(prompt)
        batch_size, max_length = tf.shape(prompt)[0], tf.shape(prompt)[1]
        index = tf.cast(index, tf.int32)
        mask = tf.zeros_like(prompt, tf.bool) if mask is None else tf.cast(mask, tf.bool)
        mask = tf.repeat(mask, num_beams, axis=0)
        prompt_lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        # (The hypotheses' "ids" go unused: the prompt holds every token.)
        hypotheses = rule.first_hypotheses(tf.repeat(tf.cast(prompt[:, 0], tf.int32),
                                                     num_beams), batch_size)
        hypotheses["state"] = {
            "prompt": tf.repeat(prompt, num_beams, axis=0),
            "cache": tf.nest.map_structure(lambda x: tf.repeat(x, num_beams, axis=0),
                                           () if cache is None else cache),
        }
        seed = rule.base_seed()

        def cond(hypotheses, index):
            return tf.reduce_any(tf.logical_not(rule.examples_done(hypotheses)))

        def body(hypotheses, index):
            state = hypotheses["state"]
            logits, _, cache = next(state["prompt"], state["cache"], index)
            in_prompt = mask[:, index]
            next_hypotheses, word_ids, _, _ = rule.advance(
                hypotheses, tf.cast(logits, tf.float32), None, end_id,
                step=index - prompt_lengths, new_state=dict(state, cache=cache), seed=seed,
                seed_step=index, stand_still=in_prompt,
            )
            # A prompt token is not an end: the row only stood still.
            next_hypotheses["finished"] = tf.where(in_prompt, hypotheses["finished"],
                                                   next_hypotheses["finished"])
            prompt = next_hypotheses["state"]["prompt"]
            tokens = tf.where(in_prompt, prompt[:, index], tf.cast(word_ids, prompt.dtype))
            next_hypotheses["state"]["prompt"] = tf.ensure_shape(
                tf.tensor_scatter_nd_update(
                    prompt, tf.stack([tf.range(tf.shape(prompt)[0]),
                                      tf.fill(tf.shape(tokens), index)], axis=1), tokens),
                prompt.shape)
            return next_hypotheses, index + 1

        hypotheses, _ = self.run_loop(cond, body, loop_vars=(hypotheses, index),
                                      maximum_iterations=max_length - index, model=model)
        scores = tf.reshape(hypotheses["scores"], [-1, num_beams])
        best = rule.final_beams(scores, batch_size)
        prompts = tf.gather(tf.reshape(hypotheses["state"]["prompt"],
                                       [-1, num_beams, max_length]), best, batch_dims=1)
        if self.n_best == 1:
            return prompts[:, 0]
        return prompts, tf.gather(scores, best, batch_dims=1)

    def _end_id(self, stop_token_ids):
        """The stop token's id as an int32 scalar; -1 (no token) without one."""
        if stop_token_ids is None:
            return tf.constant(-1)
        stop_token_ids = tuple(stop_token_ids)
        if len(stop_token_ids) != 1:
            raise ValueError(f"PenalizedBeamSampler: needs one stop token id, got "
                             f"{stop_token_ids!r}")
        return tf.constant(stop_token_ids[0], tf.int32)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_beams=self.num_beams,
            length_penalty=self.length_penalty,
            n_best=self.n_best,
            min_length=self.min_length,
            top_k=self.top_k,
            seed=self.seed,
            freeze_finished_scores=self.freeze_finished_scores,
            early_exit=self.early_exit,
            length_normalization=self.length_normalization,
        )
        return config
