"""Convert an OpenNMT-tf 2.x Transformer (configuration and checkpoint) into a kerasnmt run
directory: `convert_opennmt_tf`, what `kerasnmt convert opennmt-tf` runs.

The run directory holds `run.yml`, the vocabularies, the SentencePiece models and
`model/ckpt-STEP` (the weights, and the Adam or LazyAdam moments as Adam's, at the
OpenNMT-tf step), as `kerasnmt train` writes them: `kerasnmt translate --config`,
`evaluate`, `export` and `train` (continuing at that step) use it as it is. See
docs/migrating_from_opennmt_tf.md.
"""

import dataclasses
import filecmp
import os
import shutil

import keras
import tensorflow as tf
import yaml

from kerasnmt.config import ConfigError, load_config
from kerasnmt.converters.conversion_error import ConversionError
from kerasnmt.converters.opennmt_tf_catalog import (
    LAYER_NORM_EPSILON,
    UNSTATED_DEFAULTS,
    catalog_architecture,
)
from kerasnmt.converters.opennmt_tf_checkpoint import (
    OpenNMTCheckpoint,
    check_variables,
    checkpoint_architecture,
    copy_adam_slots,
    copy_weights,
    find_checkpoint,
    variable_map,
)
from kerasnmt.converters.opennmt_tf_config import (
    carried_keys,
    data_path,
    read_opennmt_tf_config,
    source_eos,
    tokenizer_models,
)
from kerasnmt.data.result_directory import write_atomically
from kerasnmt.data.vocabulary import load_vocabulary
from kerasnmt.layers import SentencePieceTokenizer, TranslationPreprocessor, WhitespaceTokenizer
from kerasnmt.models import Translator
from kerasnmt.models.transformer_backbone import ARCHITECTURE_ARGUMENTS
from kerasnmt.training.run_optimizer import build_optimizer
from kerasnmt.training.run_recipe import check_run_recipe

RUN_CONFIG = "run.yml"
MODEL_DIRECTORY = "model"
# The architecture keys a catalogue model states and the checkpoint shows: they must agree.
_CHECKED_KEYS = ("num_layers", "num_units", "ffn_inner_dim", "maximum_relative_position",
                 "pre_norm", "share_embeddings", "use_output_bias")
_SIDES = ("source", "target")


@dataclasses.dataclass
class Conversion:
    """What `convert_opennmt_tf` wrote.

    Attributes:
        run_config: the path of the run directory's `run.yml`.
        step: the training step of the checkpoint (OpenNMT-tf's `optimizer/iter`).
        optimizer_state: whether the Adam moments were carried over.
        left_out: one line for each configuration key left out, with why.
    """

    run_config: str
    step: int
    optimizer_state: bool
    left_out: list

    def summary(self):
        """What was written and left out, one line each (what the command prints).

        Examples:
            >>> print(Conversion("run/run.yml", 400, True, ["params.x (why)"]).summary())
            Wrote run/run.yml: a kerasnmt run at step 400, with the optimizer's moments
            Left out: params.x (why)
        """
        moments = ("with the optimizer's moments" if self.optimizer_state
                   else "without the optimizer's moments (a continued run starts them at 0)")
        lines = [f"Wrote {self.run_config}: a kerasnmt run at step {self.step}, {moments}"]
        lines += [f"Left out: {line}" for line in self.left_out]
        return "\n".join(lines)


def convert_opennmt_tf(config_path, output_dir, checkpoint=None, model_type=None,
                       num_heads=None, force=False):
    """Converts an OpenNMT-tf 2.x Transformer into a kerasnmt run directory.

    Every input is checked before anything is written, and the directory is written
    whole or not at all (`write_atomically`): a refused conversion leaves `output_dir`
    as it was.

    Args:
        config_path: the OpenNMT-tf YAML run configuration; its paths are resolved from the
            working directory, as `onmt-main` resolves them.
        output_dir: the run directory to write.
        checkpoint: a checkpoint prefix (`model_dir/ckpt-5000`) or a directory of them;
            default: the latest of the configuration's `model_dir`.
        model_type: the OpenNMT-tf catalogue model it was trained as (`Transformer`,
            `TransformerRelative`, `TransformerBig`, ...; see
            `opennmt_tf_catalog.MODEL_TYPES`), for what the checkpoint cannot tell: the
            heads of an absolute-position model, the dropout rates. A custom model
            (`model.py`) is converted from its checkpoint and `num_heads`.
        num_heads: the attention heads, which the variables of an absolute-position
            model do not tell (a relative-position model's tables do).
        force: replace an `output_dir` that is not empty.

    Returns:
        A `Conversion`.

    Raises:
        ConversionError: naming the file, the variable or the key: a model outside the
            Transformer family or a variant kerasnmt does not have, a vocabulary whose size
            is not the embeddings', a tokenizer kerasnmt cannot reproduce, a missing or
            truncated checkpoint, an `output_dir` that holds files (without `force`).

    Examples:
        >>> import contextlib, tempfile
        >>> with contextlib.chdir("tests/fixtures/opennmt_tf/absolute"):
        ...     conversion = convert_opennmt_tf(
        ...         "config.yml", os.path.join(tempfile.mkdtemp(), "run"), num_heads=2)
        >>> conversion.step, conversion.optimizer_state
        (400, True)
        >>> sorted(os.listdir(os.path.dirname(conversion.run_config)))
        ['model', 'run.yml', 'source_vocabulary.txt', 'target_vocabulary.txt']
    """
    config_path, output_dir = os.fspath(config_path), os.fspath(output_dir)
    _check_output(output_dir, force)
    config = read_opennmt_tf_config(config_path)
    model_dir = config.get("model_dir")
    path = find_checkpoint(None if checkpoint is None else os.fspath(checkpoint),
                           None if model_dir is None else os.path.abspath(str(model_dir)),
                           config_path)
    opennmt = OpenNMTCheckpoint(path)
    architecture = model_architecture(opennmt, model_type, num_heads)
    architecture["source_eos"] = source_eos(config, config_path)
    names = variable_map(architecture)
    check_variables(opennmt, names)
    vocabularies = {side: data_path(config, f"{side}_vocabulary", config_path)
                    for side in _SIDES}
    _check_vocabularies(vocabularies, architecture, opennmt)
    sentencepiece_models, sampling_alpha = tokenizer_models(config, config_path)
    sections, left_out = carried_keys(config, config_path)
    files = {**_copied_files(vocabularies, "vocabulary", ".txt"),
             **_copied_files(sentencepiece_models, "sentencepiece", ".model")}
    run = {"model_dir": MODEL_DIRECTORY, **sections}
    run["data"].update({f"{side}_vocabulary": files[vocabularies[side]] for side in _SIDES})
    for side, model in sentencepiece_models.items():
        if model is not None:
            run["data"][f"{side}_sentencepiece"] = files[model]
    if sampling_alpha is not None:
        run["data"]["sentencepiece_sampling_alpha"] = sampling_alpha
    run["model"] = {key: architecture[key] for key in ARCHITECTURE_ARGUMENTS
                    if key in architecture}
    optimizer_state = []

    def write(directory):
        for source, name in files.items():
            shutil.copyfile(source, os.path.join(directory, name))
        run_path = os.path.join(directory, RUN_CONFIG)
        with open(run_path, "w", encoding="utf-8") as file:
            file.write(f"# Converted by kerasnmt from the OpenNMT-tf configuration "
                       f"{os.path.abspath(config_path)}\n# and its checkpoint {path}.\n")
            yaml.safe_dump(run, file, sort_keys=False, allow_unicode=True)
        try:
            converted = load_config(run_path)
        except ConfigError as error:
            raise ConversionError(
                f"{config_path}: its keys do not make a valid kerasnmt configuration: "
                + "; ".join(error.errors)) from None
        optimizer_state.append(_write_checkpoint(converted, opennmt, names))

    write_atomically(write, output_dir)
    return Conversion(os.path.join(output_dir, RUN_CONFIG), opennmt.step, optimizer_state[0],
                      left_out)


def model_architecture(checkpoint, model_type=None, num_heads=None):
    """The `TransformerBackbone` arguments of an OpenNMT-tf checkpoint: what its variables
    show, with the heads and dropout rates of `model_type` (a catalogue name) or
    `num_heads`.

    Raises:
        ConversionError: a `model_type` the checkpoint contradicts (naming the key), or an
            absolute-position model with no number of heads.

    Examples:
        >>> model_architecture(OpenNMTCheckpoint(
        ...     "tests/fixtures/opennmt_tf/absolute/checkpoint/ckpt-400"))
        Traceback (most recent call last):
        ...
        kerasnmt.converters.conversion_error.ConversionError: checkpoint ...: an absolute-position model, whose variables do not tell its number of heads: pass --num-heads N or its --model-type
    """
    found = checkpoint_architecture(checkpoint)
    stated = catalog_architecture(model_type) if model_type else dict(UNSTATED_DEFAULTS)
    where = f"checkpoint {checkpoint.path}"
    if model_type:
        for key in _CHECKED_KEYS:
            if stated[key] is not None and stated[key] != found[key]:
                raise ConversionError(
                    f"{where}: its {key} is {found[key]!r}, --model-type {model_type}'s is "
                    f"{stated[key]!r}: not a {model_type} (a custom model converts without "
                    "--model-type, with --num-heads)")
    given = {"its relative position tables": found.get("num_heads"), "--num-heads": num_heads,
             f"--model-type {model_type}": stated.get("num_heads")}
    heads = [value for value in given.values() if value is not None]
    if not heads:
        raise ConversionError(f"{where}: an absolute-position model, whose variables do not "
                              "tell its number of heads: pass --num-heads N or its --model-type")
    if len(set(heads)) > 1:
        raise ConversionError(f"{where}: the numbers of heads disagree: " + ", ".join(
            f"{value} from {name}" for name, value in given.items() if value is not None))
    if found["num_units"] % heads[0]:
        raise ConversionError(f"{where}: {found['num_units']} units do not split into "
                              f"{heads[0]} heads (--num-heads)")
    architecture = {key: value for key, value in found.items()
                    if not key.endswith("_vocabulary_size")}
    architecture.update(num_heads=heads[0], dropout=stated["dropout"],
                        attention_dropout=stated["attention_dropout"],
                        ffn_dropout=stated["ffn_dropout"], layer_norm_epsilon=LAYER_NORM_EPSILON)
    architecture["vocabulary_sizes"] = (found["source_vocabulary_size"],
                                        found["target_vocabulary_size"])
    return architecture


def _check_output(output_dir, force):
    if not force and os.path.lexists(output_dir) and not (
            os.path.isdir(output_dir) and not os.listdir(output_dir)):
        holds = ("a run" if os.path.exists(os.path.join(output_dir, RUN_CONFIG))
                 else "files" if os.path.isdir(output_dir) else "a file")
        raise ConversionError(f"{output_dir} already holds {holds}: pass --force "
                              "(force=True) to replace it")


def _check_vocabularies(vocabularies, architecture, checkpoint):
    """Each vocabulary has its embedding's rows less the out-of-vocabulary id."""
    for side, rows in zip(_SIDES, architecture["vocabulary_sizes"]):
        tokens = load_vocabulary(vocabularies[side])
        if len(tokens) + 1 != rows:
            raise ConversionError(
                f"{vocabularies[side]}: {len(tokens)} tokens, where the {side} embeddings "
                f"of checkpoint {checkpoint.path} have {rows} rows ({rows - 1} tokens and "
                "the out-of-vocabulary id): not the vocabulary this model was trained with")
    if architecture["share_embeddings"] in ("source_target_input", "all") and not (
            filecmp.cmp(vocabularies["source"], vocabularies["target"], shallow=False)):
        raise ConversionError(
            f"{vocabularies['source']} and {vocabularies['target']} differ, where the "
            f"checkpoint {checkpoint.path} shares one embedding matrix between them")


def _copied_files(paths, kind, extension):
    """`{path: name in the run directory}`: one copy when both sides' files are the same."""
    given = {side: path for side, path in paths.items() if path is not None}
    if len(given) == 2 and filecmp.cmp(given["source"], given["target"], shallow=False):
        return {path: f"{kind}{extension}" for path in given.values()}
    return {path: f"{side}_{kind}{extension}" for side, path in given.items()}


def _write_checkpoint(config, checkpoint, names):
    """Writes the kerasnmt checkpoint of `config`'s run at the OpenNMT-tf step, with the
    recipe `kerasnmt train` checks when it resumes.

    Returns:
        Whether the Adam moments were carried over.
    """
    data, model = config["data"], config["model"]
    tokenizers = [SentencePieceTokenizer(data[f"{side}_sentencepiece"])
                  if data[f"{side}_sentencepiece"] else WhitespaceTokenizer() for side in _SIDES]
    translator = Translator(
        TranslationPreprocessor(*tokenizers, data["source_vocabulary"], data["target_vocabulary"]),
        **{key: model[key] for key in ARCHITECTURE_ARGUMENTS if key in model})
    copy_weights(translator.backbone, checkpoint, names)
    optimizer = build_optimizer(config)
    optimizer.build(translator.trainable_variables)
    carried = False
    if isinstance(optimizer, keras.optimizers.Adam):
        carried = copy_adam_slots(optimizer, translator.backbone, checkpoint, names)
    else:
        optimizer.iterations.assign(checkpoint.step)
    os.makedirs(config["model_dir"], exist_ok=True)
    tf.train.CheckpointManager(
        tf.train.Checkpoint(model=translator, optimizer=optimizer), config["model_dir"],
        max_to_keep=config["train"]["keep_checkpoint_max"],
    ).save(checkpoint_number=checkpoint.step)
    check_run_recipe(config, resuming=False)
    return carried
