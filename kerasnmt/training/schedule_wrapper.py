"""A learning rate schedule started late, stretched and floored, as OpenNMT-tf wraps its
schedules (`start_decay_steps`, `decay_step_duration`, `minimum_learning_rate`)."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kerasnmt")
class ScheduleWrapper(keras.optimizers.schedules.LearningRateSchedule):
    """Maps the training step to the step of a schedule (OpenNMT-tf's `ScheduleWrapper`).

    At weight update `u` (0-based): the learning rate of `schedule` at step
    `max(u - start_step, 0) // step_duration`, and never below `minimum_learning_rate`.
    Keras counts every batch of gradient accumulation as an optimizer step: with
    `accumulation_steps` batches an update, `u` is that step `// accumulation_steps`
    (`Translator.fit(effective_batch_size=...)` sets it).

    Args:
        schedule: a `keras.optimizers.schedules.LearningRateSchedule`.
        start_step: the schedule stays at its step 0 for this many updates.
        step_duration: updates that make one step of the schedule.
        minimum_learning_rate: the floor of the learning rate.
        accumulation_steps: optimizer steps (batches) a weight update.

    Examples:
        >>> from kerasnmt.training import NoamDecay
        >>> noam = NoamDecay(scale=2.0, model_dim=512, warmup_steps=4000)
        >>> wrapped = ScheduleWrapper(noam, start_step=100, step_duration=2,
        ...                           minimum_learning_rate=1e-5)
        >>> round(float(wrapped(99)), 8)  # schedule step 0: NoamDecay's 3.5e-07, floored
        1e-05
        >>> float(wrapped(100 + 2 * 3999)) == float(noam(3999))  # the peak
        True
    """

    def __init__(self, schedule, start_step=0, step_duration=1, minimum_learning_rate=0.0,
                 accumulation_steps=1):
        self.schedule = schedule
        self.start_step = start_step
        self.step_duration = step_duration
        self.minimum_learning_rate = minimum_learning_rate
        self.accumulation_steps = accumulation_steps

    def __call__(self, step):
        update = tf.cast(step, tf.int64) // self.accumulation_steps
        schedule_step = tf.maximum(update - self.start_step, 0) // self.step_duration
        learning_rate = tf.convert_to_tensor(self.schedule(schedule_step))
        return tf.maximum(learning_rate, tf.cast(self.minimum_learning_rate, learning_rate.dtype))

    def get_config(self):
        return {
            "schedule": keras.optimizers.schedules.serialize(self.schedule),
            "start_step": self.start_step,
            "step_duration": self.step_duration,
            "minimum_learning_rate": self.minimum_learning_rate,
            "accumulation_steps": self.accumulation_steps,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["schedule"] = keras.optimizers.schedules.deserialize(config["schedule"])
        return cls(**config)
