"""A Keras 3 training script with a GradientTape loop (keras.ops, optimizer.apply): it needs
TF >= 2.16. Prints a digest of its final weights so runs on several workers can be compared."""
import hashlib

import numpy as np
import tensorflow as tf
import keras

x = np.random.RandomState(0).rand(256, 8).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 4).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
keras.utils.set_random_seed(1)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.1)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        pred = model(xb, training=True)
        loss = keras.ops.mean(keras.ops.square(yb - pred))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss


for epoch in range(2):
    for xb, yb in ds:
        loss = train_step(xb, yb)
    print(f"epoch {epoch} loss {float(loss):.4f}")
digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights()))
print("WEIGHTS", digest.hexdigest()[:16], flush=True)
