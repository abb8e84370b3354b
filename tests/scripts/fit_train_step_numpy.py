# Pattern from keras-team/keras-io guides/custom_train_step_in_tensorflow.py
# (commit b4108fbfe9f0cbad37f4f3c2bc5e4db0dd8bd2b6): a Model subclass overriding train_step
# (tape, compiled_loss, apply_gradients, compiled_metrics), compiled with a string optimizer
# and fitted on NumPy arrays without a batch_size (Keras's default of 32).
"""fit() with a custom train_step on in-memory arrays."""
import numpy as np
import tensorflow as tf


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


inputs = tf.keras.Input(shape=(8,))
outputs = tf.keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse", metrics=["mae"])

rng = np.random.default_rng(0)
x = rng.random((256, 8)).astype("float32")
y = rng.random((256, 1)).astype("float32")
model.fit(x, y, epochs=2, shuffle=False)
