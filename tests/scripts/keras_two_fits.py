"""Pre-train, then fine-tune with a lower rate: two fit() calls, a string optimizer first."""
import numpy as np
import tensorflow as tf

x = np.linspace(-1, 1, 320, dtype=np.float32).reshape(-1, 4)
y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype=np.float32)) + 0.1

inputs = tf.keras.Input(shape=(4,))
hidden = tf.keras.layers.Dense(8, activation="tanh")(inputs)
outputs = tf.keras.layers.Dense(1)(hidden)
model = tf.keras.Model(inputs=inputs, outputs=outputs)

model.compile(optimizer="adam", loss="mse")
history = model.fit(x, y, batch_size=20, epochs=2)

# Fine-tune: freeze the first layer, small learning rate.
model.layers[1].trainable = False
model.compile(optimizer=tf.keras.optimizers.RMSprop(1e-4), loss="mse")
model.fit(x, y, batch_size=20, epochs=1, validation_split=0.0)
print("final loss", history.history["loss"][-1])
