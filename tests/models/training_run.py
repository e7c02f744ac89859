"""Training runs that need their own process: `python -m tests.models.training_run MODE DIR`.

`killed`: trains a tiny Translator with checkpoints every 2 steps, saves its full state
(weights and optimizer variables) at step 4 to DIR/state_at_step_4.npz, and SIGKILLs
itself at step 5.

`mirrored`: one MirroredStrategy step on two logical CPU devices must give the weights of
one single-device step on the mean of the two half-batch losses (printed as "max weight
difference").
"""

import os
import signal
import sys

import keras
import numpy as np
import tensorflow as tf

from kerasnmt.training import CheckpointCallback, NoamDecay
from tests.models.translator_fixtures import corpus, tiny_translator


def full_state(translator):
    """Every model weight and optimizer variable, in a fixed order."""
    values = [w.numpy() for w in translator.weights]
    values += [np.asarray(v.numpy()) for v in translator.optimizer.variables]
    return values


def compile_for_checkpoint_test(translator):
    translator.compile(optimizer=keras.optimizers.Adam(NoamDecay(2.0, 16, 4)), run_eagerly=True)


def killed(directory):
    translator = tiny_translator()
    compile_for_checkpoint_test(translator)
    sources, targets = corpus(8, seed=8)

    class SnapshotThenKill(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(translator.optimizer.iterations)
            if step == 4:
                path = os.path.join(directory, "state_at_step_4.npz")
                np.savez(path, *full_state(translator))
            elif step == 5:
                os.kill(os.getpid(), signal.SIGKILL)

    translator.fit(
        sources, targets, batch_size=2, length_bucket_width=None, epochs=3, verbose=0,
        callbacks=[CheckpointCallback(directory, save_every_steps=2, keep_checkpoints=2),
                   SnapshotThenKill()],
    )


def mirrored():
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        translator = tiny_translator()
        translator.compile(optimizer=keras.optimizers.SGD(1.0))
    reference = tiny_translator(seed=1)
    reference.set_weights(translator.get_weights())

    sources, targets = corpus(4, seed=9)
    features, labels = translator.preprocessor(tf.constant(list(sources)), tf.constant(list(targets)))
    translator.fit(tf.data.Dataset.from_tensors((features, labels)), epochs=1, verbose=0)

    x = {"source_ids": features["ids"], "source_length": features["length"],
         "target_ids": labels["ids"]}
    y = {"ids_out": labels["ids_out"], "length": labels["length"]}
    with tf.GradientTape() as tape:
        loss = 0.0
        for half in (slice(0, 2), slice(2, 4)):
            x_half = {k: v[half] for k, v in x.items()}
            y_half = {k: v[half] for k, v in y.items()}
            loss += 0.5 * reference.compute_loss(x_half, y_half, reference(x_half), training=True)
    gradients = tape.gradient(loss, reference.trainable_weights)
    for weight, gradient in zip(reference.trainable_weights, gradients):
        weight.assign(weight - tf.convert_to_tensor(gradient))
    difference = max(
        float(np.abs(a - b).max()) for a, b in zip(translator.get_weights(), reference.get_weights())
    )
    changed = max(
        float(np.abs(a - b).max())
        for a, b in zip(translator.get_weights(), tiny_translator().get_weights())
    )
    print(f"replicas {strategy.num_replicas_in_sync}")
    print(f"max weight change {changed}")
    print(f"max weight difference {difference}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "killed":
        killed(sys.argv[2])
    else:
        mirrored()
