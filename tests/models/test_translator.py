import math
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerasnmt
from kerasnmt.data import make_training_batches
from kerasnmt.decoding import BeamSampler
from kerasnmt.decoding.decode import beam_history_step_function
from kerasnmt.models import Translator
from kerasnmt.training import CheckpointCallback, NoamDecay, NonFiniteLossError, ScheduleWrapper
from tests.models.translator_fixtures import corpus, tiny_translator

# Long tests (training, exports, decoding): run first (tests/conftest.py).
pytestmark = pytest.mark.heavy(38)


def _model_batch(translator, sources, targets, alignments=None):
    """The model's (x, y) for a few sentences, through the model's own preprocessor."""
    args = (sources, targets) if alignments is None else (sources, targets, alignments)
    features, labels = translator.preprocessor(*[tf.constant(list(a)) for a in args])
    x = {
        "source_ids": features["ids"],
        "source_length": features["length"],
        "target_ids": labels["ids"],
    }
    y = {"ids_out": labels["ids_out"], "length": labels["length"]}
    if alignments is not None:
        y["alignment"] = labels["alignment"]
    return x, y


def test_exported_from_the_package():
    assert kerasnmt.Translator is Translator


def test_overfits_twenty_pairs_from_raw_strings():
    """fit on raw strings until the teacher-forced argmax reproduces every target exactly;
    then the cached step-by-step decoding API gives the same logits and greedy outputs."""
    sources, targets = corpus(20)
    translator = tiny_translator(num_units=32, num_heads=4, ffn_inner_dim=64)
    # XLA: only integer tensors reach the train step. One bucket padded to 8: one shape.
    translator.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=True)
    assert translator.jit_compile

    x, y = _model_batch(translator, sources, targets)
    lengths, ids_out = y["length"].numpy(), y["ids_out"].numpy()

    @tf.function  # checked after every epoch: one trace instead of an eager pass each time
    def teacher_forced_argmax():
        return tf.argmax(translator(x)["logits"], -1, output_type=tf.int32)

    def teacher_forced_predictions():
        return teacher_forced_argmax().numpy()

    def reproduces_every_target():
        predictions = teacher_forced_predictions()
        return all(
            predictions[i, :n].tolist() == ids_out[i, :n].tolist() for i, n in enumerate(lengths)
        )

    class StopWhenEveryTargetIsReproduced(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = reproduces_every_target()

    translator.fit(sources, targets, batch_size=20, length_bucket_width=8,
                   pad_to_bucket_boundary=True, epochs=300, verbose=0,
                   callbacks=[StopWhenEveryTargetIsReproduced()])
    assert reproduces_every_target()
    decoded = translator.preprocessor.detokenize_target(teacher_forced_predictions()).numpy()
    assert [d.decode() for d in decoded] == list(targets)

    outputs = translator(x)
    encoder_outputs, mask = translator.backbone.encode(x["source_ids"], x["source_length"])
    max_length = int(tf.shape(x["target_ids"])[1])
    step_fn, history, unordered = beam_history_step_function(
        translator.backbone, encoder_outputs, mask, tf.fill([20], max_length), beam_size=1,
        max_length=max_length, vocabulary_multiple=1)
    state = (history, unordered)
    ids = x["target_ids"][:, 0]
    greedy = []
    for step in range(max_length):
        logits, attention, state = step_fn(ids, tf.constant(step), state)
        # Greedy inputs equal the teacher-forced ones up to each target's </s>.
        inside = y["length"].numpy() > step
        np.testing.assert_allclose(logits[inside], outputs["logits"][:, step][inside], atol=1e-4)
        np.testing.assert_allclose(
            attention[inside], outputs["attention"][:, step][inside], atol=1e-5
        )
        ids = tf.argmax(logits, -1, output_type=tf.int32)
        greedy.append(ids)
    greedy = tf.stack(greedy, axis=1)
    decoded = translator.preprocessor.detokenize_target(greedy).numpy()
    assert [d.decode() for d in decoded] == list(targets)

    # The same step function drives a beam search (encoder once, beam caches in place, the
    # hypotheses' histories reordered): each hypothesis' log-probability equals the full
    # model's on that sequence (no length limit before the sampler's 10 steps).
    hypotheses = translator.decode(x["source_ids"], x["source_length"],
                                   BeamSampler(beam_size=2, n_best=2, max_length=10),
                                   length_offset=10)
    for k in range(2):
        lengths = hypotheses["lengths"][:, k].numpy()
        ids = hypotheses["ids"][:, k].numpy()
        width = lengths.max() + 1
        target_ids = np.zeros([20, width], np.int32)
        ids_out = np.zeros([20, width], np.int32)
        for i, n in enumerate(lengths):
            target_ids[i, : n + 1] = [1] + ids[i, :n].tolist()  # <s> + tokens
            ids_out[i, : n + 1] = ids[i, :n].tolist() + [2]  # tokens + </s>
        logits = translator(dict(x, target_ids=target_ids))["logits"].numpy().astype(np.float64)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        # A hypothesis cut at max_length has no </s> and no </s> probability.
        scored = [n + 1 if n < 10 else n for n in lengths]
        expected = [
            sum(log_probs[i, t, ids_out[i, t]] for t in range(n)) for i, n in enumerate(scored)
        ]
        np.testing.assert_allclose(hypotheses["log_probs"][:, k], expected, atol=1e-4)


def test_fit_accepts_every_kind_of_input():
    sources, targets = corpus(8, seed=1)
    translator = tiny_translator(guided_alignment_type="mse")
    translator.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
    before = translator.source_embedding.embeddings.numpy().copy()
    string_pairs = tf.data.Dataset.from_tensor_slices((list(sources), list(targets)))
    with_alignments = tf.data.Dataset.from_tensor_slices(
        (["a b", "c d e"], ["B A", "E D C"], ["0-1 1-0", "0-2 1-1 2-0"])
    )
    inputs = [
        dict(x=sources, y=targets),  # NumPy object arrays
        dict(x=list(sources), y=list(targets)),  # lists
        dict(x=tf.constant(list(sources)), y=tf.constant(list(targets))),  # string tensors
        dict(x=string_pairs),  # unbatched string pairs: bucketed and batched here
        dict(x=string_pairs.batch(4)),  # batched string pairs: preprocessed as they are
        dict(x=make_training_batches(string_pairs, translator.preprocessor, 4)),  # pipeline
        dict(x=with_alignments),  # guided alignment from Pharaoh strings
    ]
    for kwargs in inputs:
        history = translator.fit(**kwargs, batch_size=4, steps_per_epoch=1, verbose=0)
        assert math.isfinite(history.history["loss"][0])
    assert not np.allclose(before, translator.source_embedding.embeddings.numpy())

    # An epoch is one pass: 8 sentences in one bucket, 2 batches of 4.
    steps = int(translator.optimizer.iterations)
    translator.fit(sources, targets, batch_size=4, length_bucket_width=None, epochs=2, verbose=0)
    assert int(translator.optimizer.iterations) == steps + 4

    with pytest.raises(ValueError, match="x has 8 sentences but y has 7"):
        translator.fit(sources, targets[:7])
    with pytest.raises(ValueError, match="expected a dataset of"):
        translator.fit(tf.data.Dataset.from_tensor_slices(([1, 2], [3, 4])))


def test_fit_traces_its_train_step_once(monkeypatch):
    """The optimizer is built before the first step, so its variables are not created in
    the step's trace, which made TensorFlow trace the whole step a second time; a
    translator never compiled gets an error that says so."""
    sources, targets = corpus(8, seed=1)
    translator = tiny_translator()
    with pytest.raises(ValueError, match="compile the translator first"):
        translator.fit(sources, targets, batch_size=4, verbose=0)
    traced = []
    train_step = Translator.train_step

    def counted(self, data):
        traced.append(self.optimizer.built)
        return train_step(self, data)

    monkeypatch.setattr(Translator, "train_step", counted)
    translator.compile(optimizer=keras.optimizers.Adam(0.01))
    translator.fit(sources, targets, batch_size=4, length_bucket_width=None, epochs=2,
                   verbose=0)
    assert traced == [True]
    assert int(translator.optimizer.iterations) == 4


def test_keras_round_trip_gives_identical_outputs():
    translator = tiny_translator(share_embeddings="target", maximum_relative_position=None)
    translator.compile(optimizer=keras.optimizers.Adam(0.01), run_eagerly=True)
    sources, targets = corpus(3, seed=3)
    translator.fit(sources, targets, batch_size=3, length_bucket_width=None, epochs=2, verbose=0)
    x, _ = _model_batch(translator, sources, targets)
    expected = translator(x)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "translator.keras")
        translator.save(path)
        reloaded = keras.models.load_model(path)
    assert reloaded.get_config() == translator.get_config()
    for key in ("logits", "attention"):
        np.testing.assert_array_equal(reloaded(x)[key], expected[key])
    # Compiled again on load, optimizer state included: training goes on from step 2.
    assert int(reloaded.optimizer.iterations) == 2
    for a, b in zip(reloaded.optimizer.variables, translator.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    reloaded.fit(sources, targets, batch_size=3, length_bucket_width=None, epochs=1, verbose=0,
                 validation_data=(sources, targets))
    assert int(reloaded.optimizer.iterations) == 3


def test_share_embeddings_levels():
    shared = tiny_translator(shared_vocabulary=True, share_embeddings="all")
    assert shared.source_embedding is shared.target_embedding and shared.output_layer is None
    x, _ = _model_batch(shared, ["a b"], ["c"])
    decoder_outputs, _ = shared.decoder(
        shared.target_embedding(x["target_ids"]), *shared.backbone.encode(x["source_ids"], x["source_length"])
    )
    expected = decoder_outputs.numpy() @ shared.target_embedding.embeddings.numpy().T
    np.testing.assert_allclose(shared(x)["logits"], expected + shared.output_bias.numpy(), atol=1e-5)
    counts = {
        level: len(tiny_translator(shared_vocabulary=True, share_embeddings=level).trainable_weights)
        for level in ("none", "source_target_input", "target", "all")
    }
    # Sharing the input embeddings drops one table; sharing the output swaps a kernel+bias for a bias.
    assert counts["none"] - counts["source_target_input"] == 1
    assert counts["none"] - counts["target"] == 1
    assert counts["none"] - counts["all"] == 2
    with pytest.raises(ValueError, match="identical source and target vocabularies"):
        tiny_translator(share_embeddings="all")
    with pytest.raises(ValueError, match="share_embeddings must be one of"):
        tiny_translator(share_embeddings="decoder")


def test_embeddings_initializers():
    """Glorot uniform (OpenNMT-tf): entries within +-sqrt(6 / (V + D)); scaled normal
    (fairseq, Tensor2Tensor): N(0, D ** -0.5), so sqrt(D) * entries have unit variance.
    With D = 64 and a few hundred ids the standard deviations are within a few percent."""
    glorot = tiny_translator(num_units=64, num_heads=2)
    table = glorot.source_embedding.embeddings.numpy()
    limit = math.sqrt(6 / sum(table.shape))
    assert np.abs(table).max() <= limit
    assert table.std() == pytest.approx(limit / math.sqrt(3), rel=0.05)

    normal = tiny_translator(num_units=64, num_heads=2, embeddings_initializer="scaled_normal")
    tables = [layer.embeddings.numpy() for layer in (normal.source_embedding,
                                                      normal.target_embedding)]
    for table in tables:
        assert table.std() == pytest.approx(64**-0.5, rel=0.05)
        assert abs(table.mean()) < 0.01
    assert not np.array_equal(*tables)  # each table its own draw
    restored = Translator.from_config(normal.get_config())
    assert restored.backbone.embeddings_initializer == "scaled_normal"
    with pytest.raises(ValueError, match="embeddings_initializer must be one of"):
        tiny_translator(embeddings_initializer="normal")


def test_query_key_value_init_gain_scales_only_those_kernels():
    """Glorot uniform with gain g: entries within +-g * sqrt(6 / (fan_in + fan_out)), standard
    deviation g * sqrt(2 / (fan_in + fan_out)); the output projection keeps gain 1."""
    gain = 0.5**0.5
    translator = tiny_translator(num_units=64, num_heads=2, query_key_value_init_gain=gain)
    attention = translator.encoder.transformer_layers[0].self_attention
    for dense in (attention.query_dense, attention.key_dense, attention.value_dense):
        kernel = dense.kernel.numpy()
        assert np.abs(kernel).max() <= gain * math.sqrt(6 / 128)
        assert kernel.std() == pytest.approx(gain * math.sqrt(2 / 128), rel=0.05)
    assert attention.output_dense.kernel.numpy().std() == pytest.approx(math.sqrt(2 / 128),
                                                                      rel=0.05)
    restored = Translator.from_config(translator.get_config())
    assert restored.backbone.query_key_value_init_gain == pytest.approx(gain)


def test_without_output_bias_the_logits_are_the_projection_alone():
    for level in ("all", "target", "none"):
        translator = tiny_translator(shared_vocabulary=True, share_embeddings=level,
                                     use_output_bias=False)
        with_bias = tiny_translator(shared_vocabulary=True, share_embeddings=level)
        assert len(with_bias.trainable_weights) - len(translator.trainable_weights) == 1
        x, _ = _model_batch(translator, ["a b"], ["c"])
        decoder_outputs, _ = translator.decoder(
            translator.target_embedding(x["target_ids"]),
            *translator.backbone.encode(x["source_ids"], x["source_length"]))
        kernel = (translator.target_embedding.embeddings.numpy().T if level != "none"
                  else translator.output_layer.kernel.numpy())
        np.testing.assert_allclose(translator(x)["logits"], decoder_outputs.numpy() @ kernel,
                                   atol=1e-5)
        assert Translator.from_config(translator.get_config()).backbone.use_output_bias is False


@pytest.mark.parametrize("use_output_bias", [True, False])
def test_decoding_logits_padded_to_a_multiple_exclude_the_added_ids(use_output_bias):
    """Logits padded to a multiple of 64 ids (for the sampler's chunked top-k): the model's
    logits, then -1e9 for every added id, with or without an output bias (without one,
    the added columns are updated alone)."""
    translator = tiny_translator(use_output_bias=use_output_bias)
    x, _ = _model_batch(translator, ["a b", "b"], ["c", "c d"])
    step_fn, history, unordered = beam_history_step_function(
        translator.backbone, *translator.backbone.encode(x["source_ids"], x["source_length"]),
        length_limits=tf.fill([2], 3), beam_size=1, max_length=3, vocabulary_multiple=64)
    logits, _, _ = step_fn(x["target_ids"][:, 0], tf.constant(0), (history, unordered))
    size = translator.backbone.target_vocabulary_size
    assert logits.shape == (2, 64) and size < 64
    np.testing.assert_allclose(logits[:, :size], translator(x)["logits"][:, 0], atol=1e-5)
    np.testing.assert_array_equal(logits[:, size:], -1e9)


def test_loss_is_summed_cross_entropy_plus_guided_alignment_over_target_tokens():
    """The training loss, against a NumPy computation of OpenNMT-tf's definition."""
    translator = tiny_translator(label_smoothing=0.1, guided_alignment_type="ce",
                                 guided_alignment_weight=0.5)
    x, y = _model_batch(translator, ["a b c", "d"], ["C B A", "D E"], ["0-2 1-1 2-0", "0-0"])
    y_pred = translator(x)
    loss = float(translator.compute_loss(x, y, y_pred, training=True))

    logits = y_pred["logits"].numpy().astype(np.float64)
    attention = y_pred["attention"].numpy().astype(np.float64)
    vocabulary_size = logits.shape[-1]
    ce_sum, tokens, guided, aligned_steps = 0.0, 0, 0.0, 0
    for b, length in enumerate(y["length"].numpy()):
        for t in range(length):
            log_probs = logits[b, t] - np.log(np.exp(logits[b, t]).sum())
            target = np.full(vocabulary_size, 0.1 / (vocabulary_size - 1))
            target[y["ids_out"].numpy()[b, t]] = 0.9
            ce_sum -= (target * log_probs).sum()
            tokens += 1
        for t in range(length - 1):  # not the step that predicts </s>
            guided -= (y["alignment"].numpy()[b, t] * np.log(np.maximum(attention[b, t], 1e-7))).sum()
            aligned_steps += 1
    expected = (ce_sum + 0.5 * guided / aligned_steps) / tokens
    assert math.isclose(loss, expected, rel_tol=1e-5)

    del y["alignment"]  # no alignment, no guided term; evaluation: no label smoothing
    ids_out = y["ids_out"].numpy()
    nll = [
        -(logits[b, t, ids_out[b, t]] - np.log(np.exp(logits[b, t]).sum()))
        for b, length in enumerate(y["length"].numpy())
        for t in range(length)
    ]
    evaluation_loss = float(translator.compute_loss(x, y, y_pred, training=False))
    assert math.isclose(evaluation_loss, np.mean(nll), rel_tol=1e-5)


def test_evaluate_reports_the_token_cross_entropy_accuracy_and_perplexity():
    """Over all target tokens of the set, though evaluate sees them in batches of 2
    sentences of unequal lengths (Keras would average the batches' losses by sentences)."""
    translator = tiny_translator()
    translator.compile(optimizer="adam", run_eagerly=True)
    sources, targets = corpus(6, seed=4)
    results = translator.evaluate(sources, targets, batch_size=2, return_dict=True, verbose=0)
    loss, accuracy_value, perplexity = translator.evaluate(sources, targets, batch_size=2,
                                                           verbose=0)
    assert (loss, accuracy_value, perplexity) == (
        results["loss"], results["accuracy"], results["perplexity"])
    x, y = _model_batch(translator, sources, targets)
    logits = translator(x)["logits"].numpy().astype(np.float64)
    mask = np.arange(logits.shape[1])[None, :] < y["length"].numpy()[:, None]
    accuracy = (logits.argmax(-1) == y["ids_out"].numpy())[mask].mean()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    label_log_probs = np.take_along_axis(log_probs, y["ids_out"].numpy()[..., None], -1)[..., 0]
    assert math.isclose(results["accuracy"], accuracy, rel_tol=1e-6)
    token_nll = -label_log_probs[mask].mean()
    assert math.isclose(results["perplexity"], math.exp(token_nll), rel_tol=1e-5)
    assert math.isclose(results["loss"], token_nll, rel_tol=1e-5)
    # The batches' lengths differ, so weighing sentences instead of tokens would not do.
    lengths = y["length"].numpy()
    sentence_means = [-label_log_probs[b, :n].mean() for b, n in enumerate(lengths)]
    assert len(set(lengths)) > 2
    assert not math.isclose(np.mean(sentence_means), token_nll, rel_tol=1e-3)


@pytest.mark.parametrize("wrapped", [False, True])
def test_effective_batch_size_accumulates_gradients(wrapped):
    translator = tiny_translator()
    if wrapped:
        schedule = ScheduleWrapper(NoamDecay(2.0, 16, 8000), start_step=3)
        translator.compile(optimizer=keras.optimizers.Adam(schedule), run_eagerly=True)
    else:
        translator.compile(run_eagerly=True)  # Adam with NoamDecay
    sources, targets = corpus(8, seed=5)
    before = translator.source_embedding.embeddings.numpy().copy()
    translator.fit(sources, targets, batch_size=4, effective_batch_size=8,
                   length_bucket_width=None, epochs=1, steps_per_epoch=1, verbose=0)
    optimizer = translator.optimizer
    assert optimizer.gradient_accumulation_steps == 2
    # The schedule counts weight updates.
    schedule = optimizer._learning_rate
    assert (schedule.accumulation_steps if wrapped else schedule.step_duration) == 2
    # One batch: gradients accumulated, no weight update yet.
    np.testing.assert_array_equal(before, translator.source_embedding.embeddings.numpy())
    translator.fit(sources, targets, batch_size=4, effective_batch_size=8,
                   length_bucket_width=None, epochs=1, steps_per_epoch=1, verbose=0)
    assert int(optimizer.iterations) == 1
    assert not np.allclose(before, translator.source_embedding.embeddings.numpy())


def test_mixed_bfloat16_training_step():
    translator = tiny_translator(dtype="mixed_bfloat16")
    translator.compile(optimizer=keras.optimizers.Adam(0.01), run_eagerly=True)
    sources, targets = corpus(4, seed=6)
    history = translator.fit(sources, targets, batch_size=4, epochs=1, verbose=0)
    assert math.isfinite(history.history["loss"][0])
    x, _ = _model_batch(translator, sources, targets)
    assert translator(x)["logits"].dtype == tf.bfloat16
    assert all(w.dtype == "float32" for w in translator.trainable_weights)


def test_non_finite_loss_stops_training_and_keeps_the_last_good_checkpoint():
    translator = tiny_translator()
    translator.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
    sources, targets = corpus(8, seed=7)

    class Poison(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 2:
                embeddings = translator.source_embedding.embeddings
                embeddings.assign(np.full(embeddings.shape, np.nan, "float32"))

    with tempfile.TemporaryDirectory() as directory:
        checkpoints = CheckpointCallback(directory, save_every_steps=1, keep_checkpoints=5)
        with pytest.raises(NonFiniteLossError, match="training diverged at step 3: the loss is nan"):
            translator.fit(sources, targets, batch_size=2, length_bucket_width=None, epochs=1,
                           verbose=0, callbacks=[Poison(), checkpoints])
        latest = tf.train.latest_checkpoint(directory)
        assert latest.endswith("ckpt-2")
        fresh = tiny_translator(seed=1)
        tf.train.Checkpoint(model=fresh).restore(latest).expect_partial()
        assert all(np.isfinite(w.numpy()).all() for w in fresh.weights)


def test_raw_strings_get_sampled_segmentations_in_fit_only():
    from kerasnmt.layers import SentencePieceTokenizer, TranslationPreprocessor
    from kerasnmt.training.fitting import training_batches
    from tests.layers import tiny_sentencepiece
    from tests.layers.test_sentencepiece_tokenizer import SUBWORD_TEXT

    keras.utils.set_random_seed(0)  # before the tokenizer (tensorflow/text#570)
    model = tiny_sentencepiece.train("bpe", 60, tuple(SUBWORD_TEXT * 10))
    tokenizer = SentencePieceTokenizer(model, sampling_alpha=0.3)
    vocabulary = ["<blank>", "<s>", "</s>"] + tokenizer.get_vocabulary()[3:]
    translator = Translator(
        TranslationPreprocessor(tokenizer, tokenizer, vocabulary, vocabulary),
        num_layers=1, num_units=16, num_heads=2, ffn_inner_dim=32, dropout=0.0,
        maximum_relative_position=None,
    )
    sentences = np.array(["the children are playing outside"] * 30, dtype=object)

    def segmentations(what, training):
        batches = training_batches(translator, sentences, sentences, 1, False, {}, what, training)
        return {tuple(y["ids_out"].numpy()[0]) for _, y in batches}

    assert len(segmentations("fit", True)) > 5
    assert len(segmentations("evaluate", False)) == 1
    translator.compile(optimizer="adam")
    first, second = (translator.evaluate(sentences, sentences, batch_size=30, verbose=0)
                     for _ in range(2))
    assert first == second
