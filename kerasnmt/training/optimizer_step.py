"""The training step of a compiled model: its optimizer's count of weight updates."""

import keras


def optimizer_step(model):
    """The number of weight updates `model.optimizer` has applied, as a Python int (Keras
    counts an update once all the batches of gradient accumulation are in).

    Examples:
        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        >>> model.compile(keras.optimizers.SGD(gradient_accumulation_steps=2), loss="mse")
        >>> optimizer_step(model)
        0
        >>> _ = model.fit(np.ones((8, 1)), np.ones((8, 1)), batch_size=2, verbose=0)
        >>> optimizer_step(model)  # 4 batches, 2 accumulated into each update
        2
    """
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))
