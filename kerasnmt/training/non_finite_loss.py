"""Stops training with a clear error as soon as the loss is NaN or infinite."""

import math

import keras

from kerasnmt.training.optimizer_step import optimizer_step


class NonFiniteLossError(RuntimeError):
    """Raised when the training loss becomes NaN or infinite."""


def check_finite_loss(logs, step):
    """Raises `NonFiniteLossError` when `logs["loss"]` is NaN or infinite."""
    loss = (logs or {}).get("loss")
    if loss is not None and not math.isfinite(float(loss)):
        raise NonFiniteLossError(
            f"training diverged at step {step}: the loss is {float(loss)}. Training stopped; "
            "the weights of this step are not checkpointed, the last checkpoint saved before "
            "it is intact (lower the learning rate or check the data, then resume from it)"
        )


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Raises `NonFiniteLossError` at the first batch whose loss is NaN or infinite.

    Keras' `TerminateOnNaN` only sets `stop_training`, so `fit` returns as if it had
    finished; this callback makes the divergence an error. `Translator.fit` puts it before
    every other callback, so a `CheckpointCallback` never saves the diverged weights.

    Examples:
        >>> callback = StopOnNonFiniteLoss()
        >>> callback.on_train_batch_end(0, {"loss": 1.5})
        >>> try:
        ...     callback.on_train_batch_end(1, {"loss": float("nan")})
        ... except NonFiniteLossError as error:
        ...     print(str(error).split(":")[0])
        training diverged at step 1
    """

    def on_train_batch_end(self, batch, logs=None):
        step = batch
        if self.model is not None and getattr(self.model, "optimizer", None) is not None:
            step = optimizer_step(self.model)
        check_finite_loss(logs, step)
