"""A Keras 3 script: keras.ops and keras.random do not exist in Keras 2."""
import os

os.environ["KERAS_BACKEND"] = "tensorflow"
import keras
from keras import ops

x = keras.random.normal((64, 4))
y = ops.sum(x, axis=1, keepdims=True)
model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, epochs=1, batch_size=16)
