"""A vendor training entry point: argparse with the platform's folders as defaults, train(args)
holding a subclassed model, @tf.function train/test steps nested in it, enumerate() over the
training data, metrics updated in both steps, model.save() into the model folder.

Pattern from aws/amazon-sagemaker-examples frameworks/tensorflow/code/train.py
(commit 2bc9f6dbda8367d88658b0e1556c7bc66f01dd50); rewritten with synthetic data.
"""
import argparse
import os

import numpy as np
import tensorflow as tf


class SmallNet(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(16, activation="relu")
        self.d2 = tf.keras.layers.Dense(4)

    def call(self, x):
        return self.d2(self.d1(x))


def train(args):
    rng = np.random.default_rng(9)
    x_train = rng.random((256, 12), dtype=np.float32)
    y_train = rng.integers(0, 4, size=(256,))
    train_loader = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(args.batch_size)
    test_loader = tf.data.Dataset.from_tensor_slices((x_train[:64], y_train[:64])).batch(args.batch_size)

    model = SmallNet()
    model.compile()
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate)
    train_loss = tf.keras.metrics.Mean(name="train_loss")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = loss_fn(labels, predictions)
        grad = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grad, model.trainable_variables))
        train_loss(loss)

    @tf.function
    def test_step(images, labels):
        test_accuracy(labels, model(images, training=False))

    for epoch in range(args.epochs):
        train_loss.reset_states()
        test_accuracy.reset_states()
        for batch, (images, labels) in enumerate(train_loader):
            train_step(images, labels)
        for images, labels in test_loader:
            test_step(images, labels)
        print(f"Epoch {epoch + 1}, Loss: {train_loss.result()}, Test Accuracy: {test_accuracy.result()}")
    export_dir = os.path.join(args.model_dir, "00000000")
    os.makedirs(export_dir, exist_ok=True)
    model.save(export_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--model-dir", type=str, default=os.environ.get("SM_MODEL_DIR", "model"))
    train(parser.parse_args())
