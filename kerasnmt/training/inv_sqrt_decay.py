"""Linear warmup to a peak learning rate, then inverse square root decay, as OpenNMT-tf's
`InvSqrtDecay` defines it (fairseq's `inverse_sqrt`)."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kerasnmt")
class InvSqrtDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `learning_rate`, then inverse square root decay (OpenNMT-tf's
    `InvSqrtDecay`, fairseq's `inverse_sqrt`).

    At optimizer step `s` (0-based), with `n = s // step_duration + 1`:

        n <= warmup_steps: initial_learning_rate
                           + (learning_rate - initial_learning_rate) * n / warmup_steps
        n >  warmup_steps: learning_rate * sqrt(warmup_steps / n)

    The peak, `learning_rate`, is reached at `n = warmup_steps`. With
    `initial_learning_rate=0` this is `NoamDecay` with
    `scale = learning_rate * sqrt(model_dim * warmup_steps)` (for any `model_dim`), but the
    peak is given directly.

    Args:
        learning_rate: the peak learning rate.
        warmup_steps: the number of warmup steps.
        initial_learning_rate: where the warmup starts from (at `n = 0`, so step 0 is
            already one warmup step above it).
        step_duration: optimizer steps per schedule step, as `NoamDecay`'s (set by
            gradient accumulation).

    Examples:
        >>> schedule = InvSqrtDecay(learning_rate=0.005, warmup_steps=2000)
        >>> round(float(schedule(1999)), 8)  # the peak, at n = 2000
        0.005
        >>> round(float(schedule(7999)), 8)  # 0.005 * sqrt(2000 / 8000)
        0.0025

    Reference:
        [OpenNMT-tf
        `InvSqrtDecay`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/schedules/lr_schedules.py)
        (fairseq's `inverse_sqrt`, Marian's `--lr-decay-inv-sqrt`)
    """

    def __init__(self, learning_rate, warmup_steps, initial_learning_rate=0.0, step_duration=1):
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.initial_learning_rate = initial_learning_rate
        self.step_duration = step_duration

    def __call__(self, step):
        step = tf.cast(tf.cast(step, tf.int64) // self.step_duration + 1, tf.float32)
        peak = float(self.learning_rate)
        initial = float(self.initial_learning_rate)
        warmup_steps = float(self.warmup_steps)
        warmup = initial + (peak - initial) * (step / warmup_steps)
        decay = peak * tf.math.sqrt(warmup_steps / step)
        return tf.where(step <= warmup_steps, warmup, decay)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "warmup_steps": self.warmup_steps,
            "initial_learning_rate": self.initial_learning_rate,
            "step_duration": self.step_duration,
        }
