# Pattern from keras-team/keras-io examples/vision/image_classification_from_scratch.py
# (commit b8bb4c0d5068d64290003740c2ef9e703eefa751): image_dataset_from_directory with
# validation_split/subset/seed and a per-epoch ModelCheckpoint("save_at_{epoch}.keras").
# Synthetic PNG folder here.
"""Image classification from a folder of images, checkpointed every epoch."""
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(2)
for label in ("cat", "dog"):
    os.makedirs(os.path.join("pets", label), exist_ok=True)
    for i in range(20):
        pixels = rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
        tf.io.write_file(os.path.join("pets", label, f"{i}.png"), tf.io.encode_png(pixels))

image_size = (12, 12)
train_ds = tf.keras.utils.image_dataset_from_directory(
    "pets", validation_split=0.2, subset="training", seed=1337, image_size=image_size, batch_size=4)
val_ds = tf.keras.utils.image_dataset_from_directory(
    "pets", validation_split=0.2, subset="validation", seed=1337, image_size=image_size, batch_size=4)

model = tf.keras.Sequential([
    tf.keras.layers.Rescaling(1.0 / 255),
    tf.keras.layers.Conv2D(4, 3, activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
callbacks = [tf.keras.callbacks.ModelCheckpoint("save_at_{epoch}.keras")]
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
              metrics=["accuracy"])
model.fit(train_ds, epochs=2, callbacks=callbacks, validation_data=val_ds)
