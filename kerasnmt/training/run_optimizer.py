"""The optimizer of a run configuration: what `kerasnmt train` steps with, and what the
checkpoints of a run hold the state of (`kerasnmt.converters` writes that state too)."""

import tensorflow as tf

from kerasnmt.training.accumulation import accumulation_steps as training_accumulation_steps
from kerasnmt.training.inv_sqrt_decay import InvSqrtDecay
from kerasnmt.training.noam_decay import NoamDecay
from kerasnmt.training.optimizers import optimizer_class
from kerasnmt.training.schedule_wrapper import ScheduleWrapper


def accumulation_steps(config):
    """Batches accumulated per optimizer step to reach `train.effective_batch_size` with
    the replicas of the current `tf.distribute` strategy (the formula `Translator.fit`
    uses, `kerasnmt.training.accumulation`).

    Examples:
        >>> accumulation_steps({"train": {"effective_batch_size": 25000, "batch_size": 4096}})
        7
    """
    train = config["train"]
    return training_accumulation_steps(
        train["effective_batch_size"], train["batch_size"],
        tf.distribute.get_strategy().num_replicas_in_sync,
    )


def build_optimizer(config):
    """The optimizer of `config["params"]`, with the `NoamDecay` or `InvSqrtDecay` schedule
    that `decay_type` names (wrapped as OpenNMT-tf wraps its schedules: `start_decay_steps`,
    `decay_step_duration`, `minimum_learning_rate`) and gradient accumulation for
    `train.effective_batch_size`.

    Examples:
        >>> from kerasnmt.config import default_config
        >>> config = default_config()
        >>> config["params"].update(decay_type=None, learning_rate=0.003)
        >>> config["train"]["effective_batch_size"] = None
        >>> optimizer = build_optimizer(config)
        >>> type(optimizer).__name__, round(float(optimizer.learning_rate), 4)
        ('FusedAdam', 0.003)
    """
    params = config["params"]
    steps = accumulation_steps(config)
    learning_rate = params["learning_rate"]
    decay_params = params["decay_params"]
    if params["decay_type"] == "NoamDecay":
        schedule = NoamDecay(learning_rate, decay_params["model_dim"], decay_params["warmup_steps"])
    elif params["decay_type"] == "InvSqrtDecay":
        schedule = InvSqrtDecay(
            learning_rate,
            decay_params["warmup_steps"],
            initial_learning_rate=decay_params["initial_learning_rate"],
        )
    if params["decay_type"] is not None:
        learning_rate = ScheduleWrapper(
            schedule,
            start_step=params["start_decay_steps"],
            step_duration=params["decay_step_duration"],
            minimum_learning_rate=params["minimum_learning_rate"],
            accumulation_steps=steps,
        )
    return optimizer_class(params["optimizer"])(
        learning_rate=learning_rate,
        gradient_accumulation_steps=steps if steps > 1 else None,
        **params["optimizer_params"],
    )
