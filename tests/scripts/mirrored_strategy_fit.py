# Pattern from tensorflow/docs site/en/tutorials/distribute/keras.ipynb (commit
# f140399159270636d4924fb3796624c5ec306d6e): a single-machine MirroredStrategy, the model
# built and compiled in strategy.scope(), the batch scaled by num_replicas_in_sync.
"""Keras fit() on every GPU of one machine with MirroredStrategy."""
import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
BATCH_SIZE = 16 * strategy.num_replicas_in_sync
rng = np.random.default_rng(8)
x = rng.random((128, 6)).astype("float32")
y = rng.integers(0, 2, 128)
train_dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH_SIZE)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(2)])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.Adam(), metrics=["accuracy"])
model.fit(train_dataset, epochs=2)
