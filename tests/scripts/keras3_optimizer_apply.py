# Pattern from keras-team/keras-io guides/writing_a_custom_training_loop_in_tensorflow.py
# (commit 1806537c4333fbff1f9fd038b78179beeda480fb, the Keras 3 version): `import keras`, a
# GradientTape loop whose step is optimizer.apply(grads, model.trainable_weights) (Keras 3
# only), generated images saved with keras.utils.array_to_img(...).save(...).
"""A Keras 3 custom training loop (optimizer.apply)."""
import os

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(4)])
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
rng = np.random.default_rng(0)
train_dataset = tf.data.Dataset.from_tensor_slices(
    (rng.random((64, 8)).astype("float32"), rng.integers(0, 4, 64))).batch(16)

for epoch in range(2):
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            logits = model(x_batch_train, training=True)
            loss_value = loss_fn(y_batch_train, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
    img = keras.utils.array_to_img(np.ones((2, 2, 1)) * 255.0, scale=False)
    img.save(os.path.join(".", f"epoch_{epoch}.png"))
