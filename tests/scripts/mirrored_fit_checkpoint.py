"""A Keras fit() script written for MirroredStrategy: model built in strategy.scope(), the batch
sized from num_replicas_in_sync, ModelCheckpoint writing weights every epoch, then the latest
checkpoint loaded back and evaluated.

Pattern from tensorflow/docs site/en/tutorials/distribute/keras.ipynb
(commit 02b796f30713c373d7a3df6736d7b9340445a506; its tfds.load('mnist') swapped for synthetic
arrays).
"""
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
print("Number of devices: {}".format(strategy.num_replicas_in_sync))

BATCH_SIZE_PER_REPLICA = 32
BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync

rng = np.random.default_rng(7)
images = rng.random((256, 28, 28, 1), dtype=np.float32)
labels = rng.integers(0, 10, size=(256,))
train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH_SIZE)
eval_dataset = tf.data.Dataset.from_tensor_slices((images[:64], labels[:64])).batch(BATCH_SIZE)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
                  metrics=["accuracy"])

checkpoint_dir = "./training_checkpoints"
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt_{epoch}")
callbacks = [tf.keras.callbacks.ModelCheckpoint(filepath=checkpoint_prefix, save_weights_only=True)]
model.fit(train_dataset, epochs=2, callbacks=callbacks, verbose=2)

model.load_weights(tf.train.latest_checkpoint(checkpoint_dir))
eval_loss, eval_acc = model.evaluate(eval_dataset, verbose=0)
print("Eval loss: {}, Eval accuracy: {}".format(eval_loss, eval_acc))
