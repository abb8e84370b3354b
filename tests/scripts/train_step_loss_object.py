"""fit() with a train_step override that calls its own Keras loss object (default reduction)
and an evaluation step (test_step) updating a metric.

Pattern from keras-team/keras-io guides/_customizing_what_happens_in_fit.py
(commit b4108fbfe9f0cbad37f4f3c2bc5e4db0dd8bd2b6: the "lower-level" CustomModel with its own
loss tracker, and the test_step override) and examples/generative/dcgan_overriding_train_step.py
(commit cca4efba8e0b8514ae3817931696294039b3bfc9: compile(loss_fn=keras.losses.BinaryCrossentropy())
then self.loss_fn(labels, predictions) inside train_step); rewritten with synthetic data.
"""
import numpy as np
import tensorflow as tf


class Classifier(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(8, activation="relu")
        self.out = tf.keras.layers.Dense(1)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.out(self.hidden(x))

    def compile(self, optimizer, loss_fn):
        super().compile(optimizer=optimizer)
        self.loss_fn = loss_fn

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits = self(x, training=True)
            loss = self.loss_fn(y, logits)
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def test_step(self, data):
        x, y = data
        self.loss_tracker.update_state(self.loss_fn(y, self(x, training=False)))
        return {"loss": self.loss_tracker.result()}


rng = np.random.default_rng(1)
features = rng.random((256, 10), dtype=np.float32)
labels = (features.sum(axis=1, keepdims=True) > 5).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)

model = Classifier()
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
              loss_fn=tf.keras.losses.BinaryCrossentropy(from_logits=True))
model.fit(dataset, epochs=2, verbose=2)
print("eval", model.evaluate(dataset, verbose=0))
