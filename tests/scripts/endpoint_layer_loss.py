# Pattern from keras-team/keras-io examples/keras_recipes/endpoint_layer_pattern.py (commit
# 8320a6c0a63cd6debe960689c182cee491193fa9): a "logistic endpoint" layer that builds a loss
# object in __init__, calls it on (targets, logits, sample weights) in call() and add_loss()es
# it; the model is compiled without a loss and fit on a dict of inputs. tfdesk's own code,
# synthetic data.
"""A model whose loss lives in a layer (add_loss), trained with fit()."""
import numpy as np
import tensorflow as tf
from tensorflow import keras


class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)
        return tf.nn.sigmoid(logits)


inputs = keras.Input(shape=(4,), name="inputs")
targets = keras.Input(shape=(1,), name="targets")
sample_weights = keras.Input(shape=(1,), name="sample_weights")
logits = keras.layers.Dense(1)(keras.layers.Dense(8, activation="relu")(inputs))
predictions = LogisticEndpoint()(targets, logits, sample_weights)
model = keras.Model(inputs=[inputs, targets, sample_weights], outputs=predictions)
model.compile(optimizer=keras.optimizers.SGD(0.1))

rng = np.random.default_rng(7)
data = {
    "inputs": rng.random((64, 4), dtype=np.float32),
    "targets": rng.integers(0, 2, (64, 1)).astype("float32"),
    "sample_weights": rng.random((64, 1), dtype=np.float32),
}
model.fit(data, batch_size=16, epochs=2, verbose=0)
print("trained", [w.shape for w in model.get_weights()])
