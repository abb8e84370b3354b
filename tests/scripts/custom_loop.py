"""A custom training loop with tf.GradientTape and a compiled train step."""
import numpy as np
import tensorflow as tf

EPOCHS = 2
BATCH = 16

rng = np.random.default_rng(7)
x = rng.random((256, 12), dtype=np.float32)
y = rng.integers(0, 4, size=(256,))
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(24, activation="relu"),
    tf.keras.layers.Dense(4),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(1e-3)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(EPOCHS):
    total = 0.0
    for images, labels in dataset:
        loss = train_step(images, labels)
        total += float(loss)
    print(f"epoch {epoch}: loss {total:.4f}")
checkpoint.save("ckpt/model")
