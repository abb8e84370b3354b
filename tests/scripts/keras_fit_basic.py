"""Regression on synthetic data with a Sequential model: the plainest Keras script."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x_train = rng.random((256, 8), dtype=np.float32)
y_train = (x_train.sum(axis=1, keepdims=True) > 4).astype("float32")

model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)  # tuned on one GPU
model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"])

callbacks = [
    tf.keras.callbacks.ModelCheckpoint("checkpoints/ckpt-{epoch}.weights.h5", save_weights_only=True),
    tf.keras.callbacks.TensorBoard(log_dir="logs"),
]
model.fit(x_train, y_train, batch_size=32, epochs=2, callbacks=callbacks, verbose=2)
model.save("model.keras")
