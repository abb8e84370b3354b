"""Two-stage training: fit, then lower the rate in place with
model.optimizer.learning_rate.assign() and fit again on the same compiled model."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(66)
x = rng.random((192, 8), dtype=np.float32)
y = rng.integers(0, 2, size=(192, 1)).astype("float32")

base = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(8, activation="relu"),
], name="backbone")
model = tf.keras.Sequential([base, tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=1e-2),
              loss="binary_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=16, epochs=1, verbose=2)

# Stage two: ten times smaller rate, same optimizer state.
model.optimizer.learning_rate.assign(1e-3)
model.fit(x, y, batch_size=16, epochs=1, verbose=2)
print("final rate", float(model.optimizer.learning_rate.numpy()))
