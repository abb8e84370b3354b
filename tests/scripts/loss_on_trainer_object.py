# Pattern from tensorflow/examples tensorflow_examples/models/densenet/train.py (commit
# cafe496cd7131079528238a34796635bdc5d4d90): a Train class keeps the loss object on itself
# (self.loss_object = SparseCategoricalCrossentropy(from_logits=True)) and the optimizer,
# compiles the model with that same loss object, and its step computes the loss through it.
# Here the step is a module-level tf.function calling the trainer's loss helper; evaluate()
# uses the compiled loss. tfdesk's own code, synthetic data.
"""A custom loop whose loss object lives on a trainer object and is shared with compile()."""
import numpy as np
import tensorflow as tf


class Trainer:
    def __init__(self, model):
        self.model = model
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
        self.model.compile(optimizer=self.optimizer, loss=self.loss_object)

    def compute_loss(self, labels, logits):
        return self.loss_object(labels, logits)


rng = np.random.default_rng(2)
images = rng.random((96, 10), dtype=np.float32)
labels = rng.integers(0, 3, 96)
train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(16)

trainer = Trainer(tf.keras.Sequential([tf.keras.Input(shape=(10,)), tf.keras.layers.Dense(3)]))


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = trainer.model(x, training=True)
        loss = trainer.compute_loss(y, logits)
    gradients = tape.gradient(loss, trainer.model.trainable_variables)
    trainer.optimizer.apply_gradients(zip(gradients, trainer.model.trainable_variables))
    return loss


for epoch in range(2):
    for x, y in train_dataset:
        train_step(x, y)
print("evaluate:", trainer.model.evaluate(images, labels, verbose=0))
