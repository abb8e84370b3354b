import numpy as np
import tensorflow as tf


class Model(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


x = np.random.random((64, 4)).astype("float32")
y = np.random.random((64, 1)).astype("float32")
inputs = tf.keras.Input((4,))
model = Model(inputs, tf.keras.layers.Dense(1)(inputs))
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1)
