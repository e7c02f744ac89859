"""The learning rate schedule of "Attention Is All You Need", as OpenNMT-tf defines it."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kerasnmt")
class NoamDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup then inverse square root decay (OpenNMT-tf's `NoamDecay`).

    At optimizer step `s` (0-based), with `n = s // step_duration + 1`:

        learning_rate = scale * model_dim ** -0.5 * min(n ** -0.5, n * warmup_steps ** -1.5)

    The peak, `scale * (model_dim * warmup_steps) ** -0.5`, is reached at `n = warmup_steps`.

    Args:
        scale: the scale constant (OpenNMT-tf's Transformer uses 2.0).
        model_dim: the model dimension.
        warmup_steps: the number of warmup steps.
        step_duration: optimizer steps per schedule step. Keras counts every micro-batch
            of gradient accumulation as a step; `Translator.fit(effective_batch_size=...)`
            sets this to the number of accumulated batches so the schedule advances once per
            weight update. (OpenNMT-tf's `decay_step_duration`, `start_decay_steps` and
            `minimum_learning_rate` are those of `ScheduleWrapper`.)

    Examples:
        >>> schedule = NoamDecay(scale=2.0, model_dim=512, warmup_steps=4000)
        >>> round(float(schedule(3999)), 8)  # the peak: 2 / sqrt(512 * 4000)
        0.00139754

    Reference:
        [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762); [OpenNMT-tf
        `NoamDecay`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/schedules/lr_schedules.py)
    """

    def __init__(self, scale, model_dim, warmup_steps, step_duration=1):
        self.scale = scale
        self.model_dim = model_dim
        self.warmup_steps = warmup_steps
        self.step_duration = step_duration

    def __call__(self, step):
        step = tf.cast(tf.cast(step, tf.int64) // self.step_duration + 1, tf.float32)
        return (
            self.scale
            * float(self.model_dim) ** -0.5
            * tf.minimum(tf.math.rsqrt(step), step * float(self.warmup_steps) ** -1.5)
        )

    def get_config(self):
        return {
            "scale": self.scale,
            "model_dim": self.model_dim,
            "warmup_steps": self.warmup_steps,
            "step_duration": self.step_duration,
        }
