"""Train, then export twice: the native Keras format and a SavedModel for serving."""
import os

import numpy as np
import tensorflow as tf

EXPORT_DIR = os.path.join("export", "serving", "1")

rng = np.random.default_rng(77)
x = rng.normal(size=(160, 4)).astype(np.float32)
y = (x[:, 0] * 0.5 - x[:, 1] + 0.25).reshape(-1, 1)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="tanh", input_shape=(4,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=20, epochs=2, verbose=0)

model.save("out.keras")
tf.saved_model.save(model, EXPORT_DIR)
print("exported to", EXPORT_DIR)
