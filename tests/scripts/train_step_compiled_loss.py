"""fit() with a train_step override that computes the loss with self.compiled_loss, on NumPy
arrays, without batch_size (Keras' default batch of 32).

Pattern from keras-team/keras-io guides/_customizing_what_happens_in_fit.py
(commit b4108fbfe9f0cbad37f4f3c2bc5e4db0dd8bd2b6: CustomModel.train_step with the compiled loss,
model.fit(x, y, epochs=3) on NumPy arrays); rewritten with synthetic data.
"""
import numpy as np
import tensorflow as tf


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


rng = np.random.default_rng(0)
x = rng.random((256, 16), dtype=np.float32)
y = x @ rng.random((16, 1), dtype=np.float32)

inputs = tf.keras.Input(shape=(16,))
hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
outputs = tf.keras.layers.Dense(1)(hidden)
model = CustomModel(inputs, outputs)
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="mse", metrics=["mae"])
model.fit(x, y, epochs=2, verbose=2)
