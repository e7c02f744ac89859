"""One test routine for every public layer, in the spirit of keras-hub's `run_layer_test`.

`run_layer_test` checks, for one layer and one set of inputs:
the `from_config(get_config())` round trip, an eager call, a call inside `tf.function`
(and inside `tf.function(jit_compile=True)` when `layer.supports_jit`), a `tf.data.Dataset.map`
(for preprocessing layers), use inside a `keras.Model` with one `fit` step when the layer
has trainable weights, and a `.keras` save/load that gives identical outputs.
"""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf


def to_numpy(structure):
    """Turns a nest of tensors (ragged included) into a nest of numpy arrays or lists."""

    def convert(value):
        if isinstance(value, tf.RaggedTensor):
            return value.to_list()
        if isinstance(value, (tf.Tensor, tf.Variable)):
            return value.numpy()
        return value

    return tf.nest.map_structure(convert, structure, expand_composites=False)


def assert_all_close(actual, expected, atol=1e-6, context=""):
    """Compares two nests of arrays, lists of bytes or numbers."""
    actual, expected = to_numpy(actual), to_numpy(expected)
    tf.nest.assert_same_structure(actual, expected)
    for a, e in zip(tf.nest.flatten(actual), tf.nest.flatten(expected)):
        a_array, e_array = np.asarray(a, dtype=object), np.asarray(e, dtype=object)
        if a_array.dtype == object and any(isinstance(v, (bytes, str)) for v in a_array.ravel()):
            assert a == e if isinstance(a, list) else np.array_equal(a_array, e_array), (
                f"{context}: {a!r} != {e!r}"
            )
        elif isinstance(a, list) or isinstance(e, list):
            assert a == e, f"{context}: {a!r} != {e!r}"
        else:
            np.testing.assert_allclose(
                np.asarray(a, dtype=np.float64), np.asarray(e, dtype=np.float64),
                atol=atol, err_msg=context,
            )


@keras.saving.register_keras_serializable(package="kerasnmt_tests")
class LayerWrapperModel(keras.Model):
    """A model around one layer, called with a list of positional arguments."""

    def __init__(self, layer, call_kwargs=None, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.call_kwargs = dict(call_kwargs or {})

    def build(self, input_shape):
        if not self.layer.built:
            single = not isinstance(input_shape, list) or len(input_shape) == 1
            shapes = input_shape[0] if isinstance(input_shape, list) and single else input_shape
            self.layer.build(shapes)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        return self.layer(*inputs, **self.call_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            layer=keras.saving.serialize_keras_object(self.layer),
            call_kwargs=self.call_kwargs,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["layer"] = keras.saving.deserialize_keras_object(config["layer"])
        return cls(**config)


def _as_args(input_data):
    return tuple(input_data) if isinstance(input_data, (tuple, list)) else (input_data,)


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output=None,
    call_kwargs=None,
    is_preprocessing=False,
    atol=1e-6,
):
    """Runs the standard checks on `layer_cls(**init_kwargs)` called with `input_data`.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: one tensor, or a tuple of positional call arguments.
        expected_output: when given, the eager output must equal it.
        call_kwargs: keyword arguments of every call (e.g. `training=False`).
        is_preprocessing: also run the layer inside `tf.data.Dataset.map`.
        atol: tolerance for float outputs.

    Returns:
        The eager output.
    """
    call_kwargs = dict(call_kwargs or {})
    args = _as_args(input_data)

    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for key in init_kwargs:
        assert key in config, f"get_config() misses constructor argument {key!r}"
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config, "from_config(get_config()) does not round trip"

    eager_output = layer(*args, **call_kwargs)
    if expected_output is not None:
        assert_all_close(eager_output, expected_output, atol, "eager output")

    graph_output = tf.function(lambda *a: layer(*a, **call_kwargs))(*args)
    assert_all_close(graph_output, eager_output, atol, "tf.function output")

    if layer.supports_jit:
        jit_output = tf.function(lambda *a: layer(*a, **call_kwargs), jit_compile=True)(*args)
        assert_all_close(jit_output, eager_output, max(atol, 1e-5), "XLA output")

    if is_preprocessing:
        dataset = tf.data.Dataset.from_tensors(args).map(lambda *a: layer(*a, **call_kwargs))
        dataset_output = next(iter(dataset))
        assert_all_close(dataset_output, eager_output, atol, "tf.data.Dataset.map output")

    model = LayerWrapperModel(layer, call_kwargs)
    model_output = model(list(args))
    assert_all_close(model_output, eager_output, atol, "keras.Model output")

    if layer.trainable_weights:
        _run_one_fit_step(layer_cls, init_kwargs, args, call_kwargs)

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
    assert_all_close(reloaded(list(args)), eager_output, atol, ".keras reload output")
    return eager_output


def _run_one_fit_step(layer_cls, init_kwargs, args, call_kwargs):
    """One `fit` step on a fresh copy of the layer must change its weights."""
    model = LayerWrapperModel(layer_cls(**init_kwargs), call_kwargs)
    first_output = model(list(args))
    outputs = tf.nest.flatten(first_output)
    if not all(o.dtype.is_floating for o in outputs):
        return

    def squared_output(y_true, y_pred):
        del y_true
        return tf.add_n([tf.reduce_mean(tf.square(t)) for t in tf.nest.flatten(y_pred)])

    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=squared_output)
    before = [w.numpy().copy() for w in model.trainable_weights]
    # Targets shaped like the outputs, so that a layer with several outputs gets the loss on
    # each; inputs as a tuple, not a list: tf.data would stack a list into one tensor.
    targets = tf.nest.map_structure(tf.zeros_like, first_output)
    dataset = tf.data.Dataset.from_tensors((tuple(args), targets))
    model.fit(dataset, epochs=1, verbose=0)
    after = [w.numpy() for w in model.trainable_weights]
    assert any(not np.allclose(b, a) for b, a in zip(before, after)), "fit did not update weights"
