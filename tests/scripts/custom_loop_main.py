"""Custom loop inside main(), model and optimizer built in helpers, rate from a flag."""
import argparse

import numpy as np
import tensorflow as tf


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(16, activation="relu")
        self.d2 = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.d2(self.d1(x))


def make_optimizer(rate):
    return tf.keras.optimizers.SGD(rate)


def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean(tf.square(pred - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning-rate", type=float, default=0.01)
    args = parser.parse_args()
    data = np.random.default_rng(11).random((160, 3)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((data, data.sum(axis=1, keepdims=True))).batch(10)
    model = Regressor()
    optimizer = make_optimizer(args.learning_rate)
    for epoch in range(2):
        for x, y in ds:
            loss = train_step(model, optimizer, x, y)
        print("epoch", epoch, "loss", float(loss))
    model.save_weights("regressor.weights.h5")


if __name__ == "__main__":
    main()
