import numpy as np
import tensorflow as tf


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return {"loss": loss}


inputs = tf.keras.Input(shape=(4,))
model = CustomModel(inputs, tf.keras.layers.Dense(1)(inputs))
model.compile(optimizer="sgd", loss="mse")
model.fit(np.ones((64, 4)), np.ones((64, 1)), epochs=1)
