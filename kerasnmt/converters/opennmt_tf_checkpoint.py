"""An OpenNMT-tf 2.x Transformer checkpoint: its architecture, read from its variables, and
the kerasnmt weight each of its variables becomes.

OpenNMT-tf names a variable by its object path (`model/encoder/layers/0/ffn/layer/inner/
kernel`), with its Adam or LazyAdam slots beside it (`.OPTIMIZER_SLOT/optimizer/m`, `v`)
and the step in `optimizer/iter`. The layout of both networks is the same (Dense kernels
`[in, out]`, heads split from contiguous columns, relative tables `[2k + 1, depth]`), so
each variable is copied as it is: `variable_map` pairs every weight of a
`TransformerBackbone` with its OpenNMT-tf name.
"""

import os

import tensorflow as tf

from kerasnmt.converters.conversion_error import ConversionError
from kerasnmt.training.readable_checkpoint import checkpoint_damage

_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
_SLOT = "/.OPTIMIZER_SLOT/optimizer/{}/.ATTRIBUTES/VARIABLE_VALUE"
# The Adam (and LazyAdam) slots: first and second moments.
ADAM_SLOTS = ("m", "v")
_ENCODER, _DECODER = "model/encoder", "model/decoder"
_SOURCE_EMBEDDING = "model/examples_inputter/features_inputter/embedding"
_TARGET_EMBEDDING = "model/examples_inputter/labels_inputter/embedding"
_OUTPUT = f"{_DECODER}/output_layer"
_PROJECTIONS = {"queries": "query_dense", "keys": "key_dense", "values": "value_dense",
                "output": "output_dense"}


def find_checkpoint(checkpoint, model_dir, config_path):
    """The checkpoint prefix to convert: `checkpoint` (a prefix, or a directory whose
    latest checkpoint is taken), else the latest of the configuration's `model_dir`.

    Raises:
        ConversionError: no checkpoint there, or one that is missing a file or truncated.
    """
    if checkpoint is None:
        if model_dir is None:
            raise ConversionError(f"{config_path}: model_dir is not set: pass --checkpoint")
        checkpoint = _latest(model_dir, f"{config_path}: model_dir {model_dir}")
    elif os.path.isdir(checkpoint):
        checkpoint = _latest(checkpoint, f"--checkpoint {checkpoint}")
    if not os.path.exists(checkpoint + ".index"):
        raise ConversionError(f"{checkpoint}: no such checkpoint (no {checkpoint}.index)")
    damage = checkpoint_damage(checkpoint)
    if damage is not None:
        raise ConversionError(f"checkpoint {checkpoint} cannot be read (a file is missing or "
                              f"truncated): {damage}")
    return checkpoint


def _latest(directory, described):
    path = tf.train.latest_checkpoint(directory)
    if path is None:
        raise ConversionError(f"{described}: no checkpoint in it (no `checkpoint` file naming "
                              "one)")
    return path


class OpenNMTCheckpoint:
    """The variables of an OpenNMT-tf checkpoint, by their object paths.

    Args:
        path: a checkpoint prefix (`model_dir/ckpt-5000`), readable (`find_checkpoint`).

    Examples:
        >>> checkpoint = OpenNMTCheckpoint(
        ...     "tests/fixtures/opennmt_tf/absolute/checkpoint/ckpt-400")
        >>> checkpoint.step, checkpoint.shape(_SOURCE_EMBEDDING)
        (400, [201, 16])
    """

    def __init__(self, path):
        self.path = path
        self._reader = tf.train.load_checkpoint(path)
        shapes = self._reader.get_variable_to_shape_map()
        self.shapes = {name[: -len(_VALUE)]: shape for name, shape in shapes.items()
                       if name.startswith("model/") and name.endswith(_VALUE)
                       and ".OPTIMIZER_SLOT" not in name}
        self._slots = set(shapes)
        iterations = "optimizer/iter" + _VALUE
        self.step = int(self._reader.get_tensor(iterations)) if iterations in shapes else 0

    def shape(self, name):
        """The shape of the model variable `name`, or None when there is none."""
        return self.shapes.get(name)

    def value(self, name):
        """The NumPy value of the model variable `name`."""
        return self._reader.get_tensor(name + _VALUE)

    def slot(self, name, slot):
        """The NumPy value of the optimizer slot `slot` (`"m"`, `"v"`) of `name`, or None."""
        key = name + _SLOT.format(slot)
        return self._reader.get_tensor(key) if key in self._slots else None


def checkpoint_architecture(checkpoint):
    """What the variables of an OpenNMT-tf Transformer checkpoint tell of its architecture.

    Returns:
        A dict of `TransformerBackbone` arguments: `num_layers` (an int, or
        `[encoder, decoder]`), `num_units`, `ffn_inner_dim`, `maximum_relative_position`,
        `pre_norm`, `share_embeddings`, `use_output_bias`; plus `num_heads` when the relative
        position tables give it, and the vocabulary sizes `source_vocabulary_size` and
        `target_vocabulary_size` (embedding rows).

    Raises:
        ConversionError: a model outside the Transformer family, or a variant with an option
            kerasnmt does not have (each named with the variable that shows it).

    Examples:
        >>> architecture = checkpoint_architecture(OpenNMTCheckpoint(
        ...     "tests/fixtures/opennmt_tf/relative/checkpoint/ckpt-1200"))
        >>> [architecture[key] for key in ("num_heads", "maximum_relative_position",
        ...                                "share_embeddings", "pre_norm")]
        [4, 8, 'all', True]
    """
    where = f"checkpoint {checkpoint.path}"
    query = f"{_ENCODER}/layers/0/self_attention/layer/linear_queries/kernel"
    if checkpoint.shape(query) is None or checkpoint.shape(_SOURCE_EMBEDDING) is None:
        names = sorted(checkpoint.shapes)
        raise ConversionError(
            f"{where}: not an OpenNMT-tf Transformer (no {query if names else 'model'} "
            f"variable; it has {', '.join(names[:3]) or 'no model variable'}"
            f"{', ...' if len(names) > 3 else ''}): kerasnmt converts the Transformer family "
            "only, not RNN or other models")
    encoder_layers = _layer_count(checkpoint, _ENCODER)
    decoder_layers = _layer_count(checkpoint, _DECODER)
    num_units = checkpoint.shape(query)[1]
    relative = checkpoint.shape(f"{_ENCODER}/layers/0/self_attention/layer/relative_position_keys")
    has_target_embedding = checkpoint.shape(_TARGET_EMBEDDING) is not None
    has_output_kernel = checkpoint.shape(f"{_OUTPUT}/kernel") is not None
    share_embeddings = {(True, True): "none", (False, True): "source_target_input",
                        (True, False): "target", (False, False): "all"}[
        (has_target_embedding, has_output_kernel)]
    source_size = checkpoint.shape(_SOURCE_EMBEDDING)[0]
    target_size = checkpoint.shape(_TARGET_EMBEDDING if has_target_embedding
                                   else _SOURCE_EMBEDDING)[0]
    architecture = dict(
        num_layers=(encoder_layers if encoder_layers == decoder_layers
                    else [encoder_layers, decoder_layers]),
        num_units=num_units,
        ffn_inner_dim=checkpoint.shape(f"{_ENCODER}/layers/0/ffn/layer/inner/kernel")[1],
        maximum_relative_position=None if relative is None else (relative[0] - 1) // 2,
        pre_norm=checkpoint.shape(f"{_ENCODER}/layer_norm/gamma") is not None,
        share_embeddings=share_embeddings,
        use_output_bias=checkpoint.shape(f"{_OUTPUT}/bias") is not None,
        source_vocabulary_size=source_size,
        target_vocabulary_size=target_size,
    )
    if relative is not None:
        architecture["num_heads"] = num_units // relative[1]
    return architecture


def _layer_count(checkpoint, stack):
    prefix = f"{stack}/layers/"
    return len({name[len(prefix):].split("/")[0] for name in checkpoint.shapes
                if name.startswith(prefix)})


def variable_map(architecture):
    """The OpenNMT-tf name of every weight of a `TransformerBackbone` of `architecture`.

    Returns:
        A dict `{backbone attribute path: OpenNMT-tf variable name}`, the attribute path
        read from the backbone (`"encoder.layer_0.ffn.inner.kernel"`); a weight shared by
        two roles appears once.

    Examples:
        >>> names = variable_map(dict(num_layers=1, maximum_relative_position=None,
        ...     pre_norm=False, share_embeddings="target", use_output_bias=True))
        >>> names["decoder.layer_0.cross_attention.query_dense.kernel"]
        'model/decoder/layers/0/attention/0/layer/linear_queries/kernel'
        >>> names["output_bias"]
        'model/decoder/output_layer/bias'
    """
    layers = architecture["num_layers"]
    encoder_layers, decoder_layers = (layers, layers) if isinstance(layers, int) else layers
    relative = architecture["maximum_relative_position"] is not None
    norm = "input_layer_norm" if architecture["pre_norm"] else "output_layer_norm"
    names = {}

    def attention(kerasnmt, opennmt, with_relative):
        for projection, attribute in _PROJECTIONS.items():
            for weight in ("kernel", "bias"):
                names[f"{kerasnmt}.{attribute}.{weight}"] = (
                    f"{opennmt}/layer/linear_{projection}/{weight}")
        if with_relative:
            for table in ("keys", "values"):
                names[f"{kerasnmt}.relative_position_{table}"] = (
                    f"{opennmt}/layer/relative_position_{table}")
        layer_norm(f"{kerasnmt}_norm", f"{opennmt}/{norm}")

    def layer_norm(kerasnmt, opennmt):
        for weight in ("gamma", "beta"):
            names[f"{kerasnmt}.{weight}"] = f"{opennmt}/{weight}"

    def feed_forward(kerasnmt, opennmt):
        for dense in ("inner", "outer"):
            for weight in ("kernel", "bias"):
                names[f"{kerasnmt}.ffn.{dense}.{weight}"] = f"{opennmt}/ffn/layer/{dense}/{weight}"
        layer_norm(f"{kerasnmt}.ffn_norm", f"{opennmt}/ffn/{norm}")

    names["source_embedding.embeddings"] = _SOURCE_EMBEDDING
    if architecture["share_embeddings"] in ("none", "target"):
        names["target_embedding.embeddings"] = _TARGET_EMBEDDING
    for stack, count in (("encoder", encoder_layers), ("decoder", decoder_layers)):
        for index in range(count):
            kerasnmt, opennmt = f"{stack}.layer_{index}", f"model/{stack}/layers/{index}"
            attention(f"{kerasnmt}.self_attention", f"{opennmt}/self_attention", relative)
            if stack == "decoder":
                attention(f"{kerasnmt}.cross_attention", f"{opennmt}/attention/0", False)
            feed_forward(kerasnmt, opennmt)
        if architecture["pre_norm"]:
            layer_norm(f"{stack}.output_norm", f"model/{stack}/layer_norm")
    shared_output = architecture["share_embeddings"] in ("target", "all")
    if not shared_output:
        names["output_layer.kernel"] = f"{_OUTPUT}/kernel"
    if architecture["use_output_bias"]:
        names["output_bias" if shared_output else "output_layer.bias"] = f"{_OUTPUT}/bias"
    return names


def check_variables(checkpoint, names):
    """Refuses a checkpoint whose model variables are not exactly `names`' values: a
    variable kerasnmt has no place for (an option it does not have: learned position
    embeddings, several sources, attention without biases, ...) or one it lacks.

    Raises:
        ConversionError: naming the variables.
    """
    expected = set(names.values())
    unknown = sorted(set(checkpoint.shapes) - expected)
    missing = sorted(expected - set(checkpoint.shapes))
    problems = []
    if unknown:
        problems.append(f"variables kerasnmt's Transformer has no place for: "
                        f"{_listed(unknown)} (a Transformer variant with an option kerasnmt "
                        "does not have)")
    if missing:
        problems.append(f"variables it lacks: {_listed(missing)} (a Transformer variant "
                        "kerasnmt does not have, such as one without attention biases)")
    if problems:
        raise ConversionError(f"checkpoint {checkpoint.path}: {'; '.join(problems)}")


def _listed(names, shown=4):
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def backbone_weight(backbone, attribute_path):
    """The variable at `attribute_path` (`"encoder.layer_0.ffn.inner.kernel"`) of `backbone`."""
    value = backbone
    for attribute in attribute_path.split("."):
        value = getattr(value, attribute)
    return value


def copy_weights(backbone, checkpoint, names):
    """Assigns every weight of `backbone` its OpenNMT-tf variable's value (`names` from
    `variable_map`).

    Raises:
        ConversionError: a variable whose shape is not the weight's.
    """
    for attribute_path, name in names.items():
        weight = backbone_weight(backbone, attribute_path)
        value = checkpoint.value(name)
        if tuple(value.shape) != tuple(weight.shape):
            raise ConversionError(
                f"checkpoint {checkpoint.path}: {name} has shape {list(value.shape)}, where "
                f"the model read from its other variables needs {list(weight.shape)}")
        weight.assign(value)


def copy_adam_slots(optimizer, backbone, checkpoint, names):
    """Copies the Adam (or LazyAdam) moments of every variable into `optimizer` (a built
    `keras.optimizers.Adam`) and its step into `optimizer.iterations`.

    Returns:
        Whether the checkpoint had both moments of every variable (else nothing but the
        step is copied and the moments stay zero).
    """
    optimizer.iterations.assign(checkpoint.step)
    slots = {}
    for attribute_path, name in names.items():
        moments = [checkpoint.slot(name, slot) for slot in ADAM_SLOTS]
        if any(moment is None for moment in moments):
            return False
        slots[attribute_path] = moments
    for attribute_path, (first, second) in slots.items():
        index = optimizer._get_variable_index(backbone_weight(backbone, attribute_path))
        optimizer._momentums[index].assign(first)
        optimizer._velocities[index].assign(second)
    return True
