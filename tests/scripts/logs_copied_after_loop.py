# Pattern from tensorflow/docs site/en/guide/checkpoint.ipynb (commit
# ba06a912707af5cf55a125644692ceaf2a5a7fbc: a tf.train.CheckpointManager saved in a loop, then
# tf.train.latest_checkpoint(directory) restored) and the TensorBoard get-started page
# (tensorflow/tensorboard docs/get_started.ipynb @d82107844e2e: scalars written with
# tf.summary.create_file_writer in a custom loop); issue 29's held-out script then copied the
# log folder elsewhere with shutil.copytree. tfdesk's own code, synthetic data.
"""A custom loop that checkpoints and logs, then copies the logs and restores the newest
checkpoint into a fresh model for evaluation."""
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

ckpt_dir = os.path.join("training", "ckpts")
log_dir = os.path.join("training", "logs")
export_dir = os.path.join(tempfile.mkdtemp(), "logs_copy")

rng = np.random.default_rng(11)
features = rng.random((96, 5), dtype=np.float32)
targets = features @ rng.random((5, 1), dtype=np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, targets)).batch(12)


def build():
    return tf.keras.Sequential([tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(1)])


model = build()
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(ckpt, ckpt_dir, max_to_keep=2)
writer = tf.summary.create_file_writer(log_dir)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for x, y in dataset:
        loss = train_step(x, y)
    with writer.as_default():
        tf.summary.scalar("loss", loss, step=epoch)
    manager.save()

writer.flush()
shutil.copytree(log_dir, export_dir)
latest = tf.train.latest_checkpoint(ckpt_dir)
print("newest checkpoint:", latest, "of", sorted(os.listdir(ckpt_dir)))
restored = build()
tf.train.Checkpoint(model=restored).restore(latest).expect_partial()
print("restored loss", float(tf.reduce_mean(tf.square(restored(features) - targets))))
