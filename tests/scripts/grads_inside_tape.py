# Pattern reported in issue 16 from a public vendor sample (no public origin recorded here):
# the gradients are taken and applied INSIDE the `with tf.GradientTape()` block, in a
# tf.function step; wrapping the tape after the block would leave them unaveraged.
"""A custom loop that takes and applies its gradients inside the tape's block."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(21)
x = rng.random((160, 5)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 2.5).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step(features, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for features, labels in dataset:
        loss = train_step(features, labels)
    print("epoch", epoch, "loss", float(loss))
