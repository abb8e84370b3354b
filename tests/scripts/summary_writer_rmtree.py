"""A custom loop that clears its log folder with shutil.rmtree, writes TensorBoard summaries
with tf.summary.create_file_writer and dumps a PNG of its predictions each epoch.

Pattern from tensorflow/tensorboard docs/get_started.ipynb (commit
01555c4b1b92a14c5bd189d02de7555deffd261c: clears ./logs/, then tf.summary.create_file_writer in a
GradientTape loop with a default-reduction loss object) and tensorflow/docs
site/en/tutorials/generative/dcgan.ipynb (commit 023b91c89dc06b3c6462d8426cc655acd452282e:
generate_and_save_images every epoch); rewritten with synthetic data.
"""
import os
import shutil

import numpy as np
import tensorflow as tf

shutil.rmtree("logs", ignore_errors=True)
train_log_dir = os.path.join("logs", "gradient_tape", "train")
train_summary_writer = tf.summary.create_file_writer(train_log_dir)

rng = np.random.default_rng(6)
x_train = rng.random((128, 8), dtype=np.float32)
y_train = x_train @ rng.random((8, 4), dtype=np.float32)
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(32)

model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(4)])
loss_object = tf.keras.losses.MeanSquaredError()
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
train_loss = tf.keras.metrics.Mean("train_loss", dtype=tf.float32)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_object(y, predictions)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_loss(loss)


def save_prediction_image(epoch):
    picture = tf.cast(tf.clip_by_value(model(x_train[:16]), 0, 1) * 255, tf.uint8)
    png = tf.io.encode_png(tf.reshape(picture, (16, 4, 1)))
    tf.io.write_file("image_at_epoch_{:04d}.png".format(epoch), png)


for epoch in range(2):
    for x, y in train_dataset:
        train_step(x, y)
    with train_summary_writer.as_default():
        tf.summary.scalar("loss", train_loss.result(), step=epoch)
    save_prediction_image(epoch)
    print("epoch", epoch, "loss", float(train_loss.result()))
    train_loss.reset_states()
