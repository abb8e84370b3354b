"""A Keras 3 script that trains with fit() through a custom train_step."""
import numpy as np
import keras


class Regressor(keras.Model):
    def train_step(self, data):
        x, y = data
        with __import__("tensorflow").GradientTape() as tape:
            loss = keras.ops.mean(keras.ops.square(y - self(x, training=True)))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {"loss": loss}


x = np.random.rand(128, 4).astype("float32")
y = x.sum(axis=1, keepdims=True)
inputs = keras.Input((4,))
model = Regressor(inputs, keras.layers.Dense(1)(inputs))
model.compile(optimizer="sgd")
model.fit(x, y, epochs=1, batch_size=16)
