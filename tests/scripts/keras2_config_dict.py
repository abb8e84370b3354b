"""Keras 2 style with `from tensorflow import keras`: hyper-parameters live in a config dict and
the optimizer takes its rate from it."""
import numpy as np
from tensorflow import keras

CONFIG = {
    "lr": 0.02,
    "batch_size": 16,
    "epochs": 2,
    "hidden": 12,
}

rng = np.random.default_rng(44)
x_train = rng.random((200, 5)).astype("float32")
y_train = x_train @ np.arange(1, 6, dtype="float32").reshape(5, 1)

lr = CONFIG["lr"]
model = keras.models.Sequential()
model.add(keras.layers.Dense(CONFIG["hidden"], activation="relu", input_shape=(5,)))
model.add(keras.layers.Dense(1))
model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr, momentum=0.9), loss="mse",
              metrics=["mae"])
model.fit(x_train, y_train, batch_size=CONFIG["batch_size"], epochs=CONFIG["epochs"],
          shuffle=True, verbose=1)
model.save_weights("keras2_config.weights.h5")
