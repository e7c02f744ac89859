"""The training step of a compiled model: its optimizer's count of weight updates."""

import keras


def optimizer_step(model):
    """The number of weight updates `model.optimizer` has applied, as a Python int (Keras
    counts an update once all the batches of gradient accumulation are in)."""
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))
