import tensorflow as tf
from tensorflow import keras


class GAN(keras.Model):
    def compile(self, d_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.loss_fn = loss_fn

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            p = self(x, training=True)
            d_loss = self.loss_fn(y, p)
        grads = tape.gradient(d_loss, self.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.trainable_weights))
        with tf.GradientTape() as tape:
            p = self(x, training=True)
            mse = tf.reduce_mean(tf.square(y - p))
        grads = tape.gradient(mse, self.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"d_loss": d_loss}

    def test_step(self, data):
        x, y = data
        return {"loss": self.loss_fn(y, self(x, training=False))}


model = GAN()
model.compile(d_optimizer=keras.optimizers.SGD(0.1), loss_fn=keras.losses.BinaryCrossentropy())
model.fit(dataset, epochs=1)
