"""Images read from class folders with image_dataset_from_directory (its own batch_size), a
small convnet trained with fit() and validated on a second split of the same folders.

Pattern from keras-team/keras-io examples/vision/image_classification_from_scratch.py
(image_dataset_from_directory("PetImages", validation_split=0.2, subset=..., seed=1337,
image_size=image_size, batch_size=batch_size) then model.fit(train_ds, validation_data=val_ds));
the Kaggle download swapped for synthetic PNG files written by the script.
"""
import os

import numpy as np
import tensorflow as tf
from tensorflow import keras

root = "synthetic_images"
rng = np.random.default_rng(8)
for label in ("cat", "dog"):
    os.makedirs(os.path.join(root, label), exist_ok=True)
    for i in range(48):
        pixels = (rng.random((16, 16, 3)) * 255).astype("uint8")
        tf.io.write_file(os.path.join(root, label, f"{i}.png"), tf.io.encode_png(pixels))

image_size = (16, 16)
batch_size = 16
train_ds = keras.utils.image_dataset_from_directory(
    root, validation_split=0.25, subset="training", seed=1337, image_size=image_size,
    batch_size=batch_size, shuffle=False)
val_ds = keras.utils.image_dataset_from_directory(
    root, validation_split=0.25, subset="validation", seed=1337, image_size=image_size,
    batch_size=batch_size, shuffle=False)

inputs = keras.Input(shape=image_size + (3,))
x = keras.layers.Rescaling(1.0 / 255)(inputs)
x = keras.layers.Conv2D(8, 3, strides=2, activation="relu")(x)
x = keras.layers.GlobalAveragePooling2D()(x)
outputs = keras.layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy",
              metrics=["accuracy"])
model.fit(train_ds, epochs=2, validation_data=val_ds, verbose=2)
