"""`Translator.fit` and `Translator.evaluate` on raw sentences: the data a user gives ->
the model's `(x, y)` batches, gradient accumulation, then Keras' own loop."""

import math
import warnings

import keras
import tensorflow as tf

from kerasnmt.data.prefetching import prefetch_without_autotuning
from kerasnmt.data.string_arrays import string_array
from kerasnmt.data.training_pipeline import make_training_batches
from kerasnmt.training.accumulation import accumulation_steps
from kerasnmt.training.inv_sqrt_decay import InvSqrtDecay
from kerasnmt.training.noam_decay import NoamDecay
from kerasnmt.training.non_finite_loss import StopOnNonFiniteLoss
from kerasnmt.training.schedule_wrapper import ScheduleWrapper

# Examples a batch when `fit` or `evaluate` is given no `batch_size` (Keras' own default),
# and `eval.batch_size`'s default.
DEFAULT_BATCH_SIZE = 32


def model_data(features, labels):
    """Batched `(features, labels)` of the preprocessor -> the model's `(x, y)`.

    `x = {"source_ids", "source_length", "target_ids"}` and
    `y = {"ids_out", "length"[, "alignment"]}`, int32 (float32 alignment); string
    components (`"tokens"`) are left out, so none reaches the train step. Map it over a
    dataset of batches to use `train_on_batch` or a custom loop.

    Examples:
        >>> x, y = model_data({"ids": [[5, 6]], "length": [2], "tokens": [["a", "b"]]},
        ...                   {"ids": [[1, 7]], "ids_out": [[7, 2]], "length": [1]})
        >>> sorted(x), sorted(y), x["target_ids"].numpy().tolist()
        (['source_ids', 'source_length', 'target_ids'], ['ids_out', 'length'], [[1, 7]])
    """
    x = {
        "source_ids": tf.cast(features["ids"], tf.int32),
        "source_length": tf.cast(features["length"], tf.int32),
        "target_ids": tf.cast(labels["ids"], tf.int32),
    }
    y = {
        "ids_out": tf.cast(labels["ids_out"], tf.int32),
        "length": tf.cast(labels["length"], tf.int32),
    }
    if "alignment" in labels:
        y["alignment"] = tf.cast(labels["alignment"], tf.float32)
    return x, y


def _is_string_spec(spec):
    return isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string


def training_batches(translator, x, y, batch_size, shuffle, batching, what, training):
    """Any data `fit` and `evaluate` accept -> a dataset of the model's `(x, y)` batches;
    raw strings are preprocessed with `training` (True: sampled segmentations, see
    `SentencePieceTokenizer`)."""
    if isinstance(x, tf.data.Dataset):
        if y is not None:
            raise ValueError(f"Translator.{what}: with a tf.data.Dataset, y must be None")
        dataset = x
    else:
        if x is None or y is None:
            raise ValueError(
                f"Translator.{what}: give x and y (source and target sentences) or a "
                "tf.data.Dataset"
            )
        sources, targets = string_array(x, "x"), string_array(y, "y")
        if len(sources) != len(targets):
            raise ValueError(
                f"Translator.{what}: x has {len(sources)} sentences but y has {len(targets)}"
            )
        dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
        if shuffle:
            dataset = dataset.shuffle(len(sources), reshuffle_each_iteration=True)
    spec = dataset.element_spec
    if isinstance(spec, tuple) and isinstance(spec[0], dict) and "source_ids" in spec[0]:
        return dataset  # Already the model's (x, y), e.g. Keras' own validation call.
    if isinstance(spec, tuple) and len(spec) in (2, 3) and all(map(_is_string_spec, spec)):
        if spec[0].shape.rank == 0:
            dataset = make_training_batches(
                dataset,
                translator.preprocessor,
                batch_size or DEFAULT_BATCH_SIZE,
                num_replicas=translator.distribute_strategy.num_replicas_in_sync,
                training=training,
                **batching,
            )
        else:
            dataset = dataset.map(
                lambda *strings: translator.preprocessor(*strings, training=training),
                num_parallel_calls=tf.data.AUTOTUNE,
            )
    elif not (
        isinstance(spec, tuple)
        and len(spec) == 2
        and isinstance(spec[0], dict)
        and "ids" in spec[0]
        and "ids_out" in spec[1]
    ):
        raise ValueError(
            f"Translator.{what}: expected a dataset of (source, target[, alignment]) "
            "strings, or of batched (features, labels) from the kerasnmt data pipeline; "
            f"got elements {spec}"
        )
    return prefetch_without_autotuning(dataset.map(model_data), tf.data.AUTOTUNE)


def set_gradient_accumulation(optimizer, steps):
    """Makes an unbuilt optimizer (or its `inner_optimizer`) accumulate `steps` batches
    an update, its NoamDecay/InvSqrtDecay/ScheduleWrapper schedule replaced by a copy
    that advances once per update (the caller's schedule object is left as it was); an
    error if it was built with another count."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    current = optimizer.gradient_accumulation_steps or 1
    if steps == current:
        return
    if optimizer.built:
        raise ValueError(
            f"Translator.fit: effective_batch_size needs {steps} accumulated batches but the "
            f"optimizer was already built with {current}; compile again to change it"
        )
    optimizer.gradient_accumulation_steps = steps if steps > 1 else None
    learning_rate = optimizer.get_config()["learning_rate"]
    if not isinstance(learning_rate, dict):
        return  # A constant learning rate: nothing counts steps.
    schedule = keras.optimizers.schedules.deserialize(learning_rate)
    if isinstance(schedule, (NoamDecay, InvSqrtDecay)):
        optimizer.learning_rate = type(schedule).from_config(
            dict(schedule.get_config(), step_duration=steps))
    elif isinstance(schedule, ScheduleWrapper):
        optimizer.learning_rate = ScheduleWrapper.from_config(
            dict(schedule.get_config(), accumulation_steps=steps))


def fit(translator, x=None, y=None, batch_size=None, batch_type="examples",
        effective_batch_size=None, length_bucket_width=1, pad_to_bucket_boundary=False,
        maximum_features_length=None, maximum_labels_length=None, shuffle=True,
        validation_data=None, callbacks=None, **kwargs):
    """`Translator.fit` (see its documentation): `keras.Model.fit` on the batches of
    `training_batches`, with gradient accumulation and `StopOnNonFiniteLoss` first."""
    batching = dict(
        batch_type=batch_type,
        length_bucket_width=length_bucket_width,
        pad_to_bucket_boundary=pad_to_bucket_boundary,
        maximum_features_length=maximum_features_length,
        maximum_labels_length=maximum_labels_length,
    )
    if getattr(translator, "optimizer", None) is None:
        raise ValueError("Translator.fit: compile the translator first (translator.compile(), "
                         "OpenNMT-tf's optimizer by default)")
    dataset = training_batches(translator, x, y, batch_size, shuffle, batching, "fit",
                               training=True)
    if validation_data is not None:
        if isinstance(validation_data, tf.data.Dataset):
            validation_data = (validation_data, None)
        validation_data = training_batches(
            translator, *validation_data, batch_size, False, batching, "fit", training=False)
    if dataset.cardinality() != tf.data.INFINITE_CARDINALITY:
        if kwargs.get("steps_per_epoch") is None:
            # Bucketing makes the number of batches vary from one pass to the next, and
            # Keras would cut later epochs to the first one's count: count one pass, and
            # let each epoch draw that many batches from an endless stream instead.
            kwargs["steps_per_epoch"] = int(dataset.reduce(0, lambda count, _: count + 1))
        dataset = dataset.repeat()
    set_gradient_accumulation(translator.optimizer, accumulation_steps(
        effective_batch_size, batch_size or DEFAULT_BATCH_SIZE,
        translator.distribute_strategy.num_replicas_in_sync))
    if not translator.optimizer.built:
        # Keras builds the optimizer before the first step only for a translator compiled
        # in a distribution strategy's scope; otherwise its variables are created while
        # the train step is traced, and TensorFlow then traces the whole step again.
        with translator.distribute_strategy.scope():
            translator.optimizer.build(translator.trainable_variables)
    callbacks = [StopOnNonFiniteLoss()] + list(callbacks or [])
    return keras.Model.fit(
        translator,
        dataset,
        validation_data=validation_data,
        callbacks=callbacks,
        shuffle=False,  # Sentences are shuffled in tf.data, before bucketing.
        **kwargs,
    )


def evaluate(translator, x=None, y=None, batch_size=None, batch_type="examples",
             return_dict=False, **kwargs):
    """`Translator.evaluate`: `keras.Model.evaluate` on the batches of `training_batches`,
    with `loss` the token cross-entropy of the whole set (as OpenNMT-tf and fairseq report
    it): Keras averages each batch's loss weighted by its sentences, which weighs the
    tokens of batches of short sentences more. It is the log of `perplexity`, the
    token-weighted mean the model's metric keeps."""
    dataset = training_batches(translator, x, y, batch_size, False, dict(batch_type=batch_type),
                               "evaluate", training=False)
    with warnings.catch_warnings():
        # Keras warns when a dataset of unknown length ends, which here is normal.
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        results = keras.Model.evaluate(translator, dataset, return_dict=True, **kwargs)
    results["loss"] = math.log(results["perplexity"])
    if return_dict:
        return results
    return translator._flatten_metrics_in_order(results)
