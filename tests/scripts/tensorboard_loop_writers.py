# Pattern from tensorflow/tensorboard docs/get_started.ipynb (commit
# d82107844e2e724f2316f6b6229b94e3f5bf92a0): old logs removed, one tf.summary file writer per
# phase, a tf.function train step with Keras metrics, scalars written under
# writer.as_default() every epoch.
"""A custom training loop that logs to TensorBoard."""
import shutil

import numpy as np
import tensorflow as tf

shutil.rmtree("logs", ignore_errors=True)
rng = np.random.default_rng(9)
x = rng.random((128, 10)).astype("float32")
y = rng.integers(0, 3, 128)
train_dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(3)])
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(0.01)
train_loss = tf.keras.metrics.Mean("train_loss", dtype=tf.float32)
train_summary_writer = tf.summary.create_file_writer("logs/gradient_tape/train")


@tf.function
def train_step(model, optimizer, x_train, y_train):
    with tf.GradientTape() as tape:
        predictions = model(x_train, training=True)
        loss = loss_object(y_train, predictions)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_loss(loss)


for epoch in range(2):
    for (x_train, y_train) in train_dataset:
        train_step(model, optimizer, x_train, y_train)
    with train_summary_writer.as_default():
        tf.summary.scalar("loss", train_loss.result(), step=epoch)
    train_loss.reset_states()
