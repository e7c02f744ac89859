"""Helpers of the converter tests: the committed OpenNMT-tf fixture
(`tests/fixtures/opennmt_tf/`), its conversion, and checkpoints made from its variables."""

import contextlib
from pathlib import Path

import tensorflow as tf

from kerasnmt.config import load_config
from kerasnmt.converters import convert_opennmt_tf
from kerasnmt.training.fitting import model_data
from kerasnmt.runner.run_checkpoints import restore_translator

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "opennmt_tf"
# What the checkpoint cannot tell, as the fixture's model.py states it.
CONVERSION_OPTIONS = {"relative": {}, "absolute": {"num_heads": 2}}
VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"


def convert(model, output_dir, **options):
    """Converts the fixture's `model` from its directory, as `onmt-main` ran there."""
    with contextlib.chdir(FIXTURE / model):
        return convert_opennmt_tf("config.yml", output_dir,
                                  **{**CONVERSION_OPTIONS[model], **options})


def restored(run_config):
    """`(translator, configuration)` of a converted run directory, as `translate --config`
    builds them."""
    config = load_config(run_config)
    return restore_translator(config)[0], config


def reference(model, name):
    """The lines of one of OpenNMT-tf's output files, split at ` ||| `."""
    with open(FIXTURE / model / name, encoding="utf-8") as file:
        return [line.rstrip("\n").split(" ||| ") for line in file]


def heldout(model, side):
    with open(FIXTURE / model / f"heldout.{side}", encoding="utf-8") as file:
        return file.read().splitlines()


def token_log_probabilities(translator, source, target_text):
    """The teacher-forced log-probability of each of `target_text`'s tokens and of `</s>`,
    read from the logits of one forward pass."""
    x, y = model_data(*translator.preprocessor(tf.constant([source]),
                                               tf.constant([target_text])))
    log_probs = tf.nn.log_softmax(translator(x)["logits"])[0].numpy()
    return [float(log_probs[position, token])
            for position, token in enumerate(y["ids_out"][0].numpy())]


def target_log_probability(translator, source, target_text):
    """`(log-probability of target_text's tokens and </s>, their number)`."""
    values = token_log_probabilities(translator, source, target_text)
    return sum(values), len(values)


def write_checkpoint(values, prefix):
    """Writes `values` (`{object path: array}`) as a TensorFlow object-based checkpoint
    whose variables have those paths, as OpenNMT-tf's do; returns the prefix."""
    root = tf.train.Checkpoint()
    for path, value in values.items():
        node = root
        *parents, leaf = path.split("/")
        for part in parents:
            if not hasattr(node, part):
                setattr(node, part, tf.train.Checkpoint())
            node = getattr(node, part)
        setattr(node, leaf, tf.Variable(value))
    return root.write(prefix)


def fixture_values(model):
    """The model variables of the fixture checkpoint of `model`, `{object path: array}`."""
    reader = tf.train.load_checkpoint(str(FIXTURE / model / "checkpoint"))
    return {name[: -len(VALUE)]: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()
            if name.startswith("model/") and name.endswith(VALUE) and "OPTIMIZER_SLOT" not in name}


def written_files(directory):
    """Every path under `directory` and its temporary siblings (`.NAME.tmp-*`)."""
    directory = Path(directory)
    siblings = sorted(path.name for path in directory.parent.glob(f".{directory.name}.*"))
    inside = sorted(str(path.relative_to(directory)) for path in directory.rglob("*")) if (
        directory.exists()) else None
    return siblings, inside
