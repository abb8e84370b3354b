# Pattern from tensorflow/examples tensorflow_examples/models/densenet/train.py (commit
# cafe496cd7131079528238a34796635bdc5d4d90): a Train class holding the loss object, the
# optimizer and loss/accuracy metrics; train_step and test_step are its methods (the step adds
# the model's regularisation losses to the loss object's value), and its custom_loop method
# iterates the datasets calling self.train_step / self.test_step. tfdesk's own code,
# synthetic data.
"""A trainer object whose methods are the training and test steps."""
import numpy as np
import tensorflow as tf


class Train:
    def __init__(self, epochs, model):
        self.epochs = epochs
        self.model = model
        self.loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        self.train_loss_metric = tf.keras.metrics.Mean(name="train_loss")
        self.test_acc_metric = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")

    def train_step(self, image, label):
        with tf.GradientTape() as tape:
            predictions = self.model(image, training=True)
            loss = self.loss_object(label, predictions)
            loss += sum(self.model.losses)
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))
        self.train_loss_metric(loss)

    def test_step(self, image, label):
        predictions = self.model(image, training=False)
        self.test_acc_metric(label, predictions)

    def custom_loop(self, train_dataset, test_dataset):
        for epoch in range(self.epochs):
            for image, label in train_dataset:
                self.train_step(image, label)
            for test_image, test_label in test_dataset:
                self.test_step(test_image, test_label)
            print("epoch", epoch, float(self.train_loss_metric.result()),
                  float(self.test_acc_metric.result()))


rng = np.random.default_rng(8)
images = rng.random((96, 12), dtype=np.float32)
labels = rng.integers(0, 3, 96)
train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(16)
test_dataset = tf.data.Dataset.from_tensor_slices((images[:32], labels[:32])).batch(16)
model = tf.keras.Sequential([
    tf.keras.Input(shape=(12,)),
    tf.keras.layers.Dense(8, activation="relu", kernel_regularizer=tf.keras.regularizers.l2(1e-3)),
    tf.keras.layers.Dense(3)])
trainer = Train(2, model)
trainer.custom_loop(train_dataset, test_dataset)
