# Pattern from keras-team/keras-io examples/vision/mnist_convnet.py (commit
# 02cfe8063b505adc073986c91729f22039f77ad0): NumPy arrays scaled and one-hot encoded, a small
# convnet compiled with a string optimizer and fitted with batch_size and validation_split.
"""A convnet fitted on in-memory arrays."""
import numpy as np
import tensorflow as tf

num_classes, input_shape = 3, (8, 8, 1)
rng = np.random.default_rng(12)
x_train = rng.random((240, 8, 8, 1)).astype("float32")
y_train = tf.keras.utils.to_categorical(rng.integers(0, num_classes, 240), num_classes)

model = tf.keras.Sequential([
    tf.keras.Input(shape=input_shape),
    tf.keras.layers.Conv2D(4, kernel_size=(3, 3), activation="relu"),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(num_classes, activation="softmax"),
])
batch_size, epochs = 16, 2
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1)
