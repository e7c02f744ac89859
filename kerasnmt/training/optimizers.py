"""The optimizers and learning rate schedules a run can name, and the default of each:
OpenNMT-tf's Transformer optimizer, which `Translator.compile` builds and the
configuration's `params` section describes.

Examples:
    >>> "AdamW" in optimizer_names()
    True
    >>> optimizer_class("Adam").__name__, optimizer_class("SGD").__name__
    ('FusedAdam', 'SGD')
    >>> optimizer = default_optimizer(model_dim=512)
    >>> type(optimizer).__name__, optimizer.beta_1, optimizer.beta_2
    ('FusedAdam', 0.9, 0.998)
"""

import inspect

import keras

from kerasnmt.training.fused_adam import FusedAdam
from kerasnmt.training.noam_decay import NoamDecay

# The default optimizer: Adam with OpenNMT-tf's betas, on the Noam schedule below.
DEFAULT_OPTIMIZER = "Adam"
DEFAULT_OPTIMIZER_ARGUMENTS = {"beta_1": 0.9, "beta_2": 0.998}

# The learning rate schedules a run can name (`params.decay_type`); the default is Noam's
# with scale 2.0 and 8000 warmup steps.
DECAY_TYPES = ("NoamDecay", "InvSqrtDecay")
DEFAULT_DECAY_TYPE = "NoamDecay"
DEFAULT_LEARNING_RATE = 2.0
DEFAULT_WARMUP_STEPS = 8000

# Classes of `keras.optimizers` that wrap or underlie an optimizer rather than being one.
_NOT_OPTIMIZERS = ("LossScaleOptimizer", "MultiOptimizer", "Optimizer")


def optimizer_names():
    """The optimizer classes that `keras.optimizers` offers, by name, sorted."""
    return sorted(
        name
        for name, value in vars(keras.optimizers).items()
        if inspect.isclass(value)
        and issubclass(value, keras.optimizers.Optimizer)
        and name not in _NOT_OPTIMIZERS
    )


def optimizer_class(name):
    """The class that trains for optimizer `name` of `keras.optimizers`: `FusedAdam` for
    `Adam` (the same update, one TensorFlow operation a variable), else Keras' own."""
    return FusedAdam if name == "Adam" else getattr(keras.optimizers, name)


def default_optimizer(model_dim):
    """The default optimizer of a model of width `model_dim`: `DEFAULT_OPTIMIZER` with
    `DEFAULT_OPTIMIZER_ARGUMENTS` on `NoamDecay(DEFAULT_LEARNING_RATE, model_dim,
    DEFAULT_WARMUP_STEPS)`."""
    schedule = NoamDecay(DEFAULT_LEARNING_RATE, model_dim, DEFAULT_WARMUP_STEPS)
    return optimizer_class(DEFAULT_OPTIMIZER)(schedule, **DEFAULT_OPTIMIZER_ARGUMENTS)
