# Pattern from keras-team/keras-io examples/timeseries/timeseries_classification_from_scratch.py
# (commit 02cfaa2fc681: the training arrays shuffled with an unseeded
# idx = np.random.permutation(len(x_train)) before fit(batch_size=, validation_split=)).
# tfdesk's own code, synthetic data.
"""Classifying short series; the arrays are shuffled with NumPy before training."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(7)
x_train = rng.normal(size=(128, 20, 1)).astype("float32")
y_train = (x_train.mean(axis=(1, 2)) > 0).astype("int32")

idx = np.random.permutation(len(x_train))
x_train = x_train[idx]
y_train = y_train[idx]

model = tf.keras.Sequential([
    tf.keras.layers.Input(shape=(20, 1)),
    tf.keras.layers.Conv1D(4, 3, activation="relu"),
    tf.keras.layers.GlobalAveragePooling1D(),
    tf.keras.layers.Dense(2, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=16, epochs=2, validation_split=0.25)
