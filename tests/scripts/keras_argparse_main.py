#!/usr/bin/env python
"""Train a classifier from a tf.data pipeline; hyper-parameters come from flags."""
import argparse
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers
from tensorflow.keras.optimizers import SGD


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", default="weights")
    return parser.parse_args()


def make_dataset(batch_size):
    rng = np.random.default_rng(1)
    features = rng.random((512, 10), dtype=np.float32)
    labels = rng.integers(0, 3, size=(512,))
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    return ds.shuffle(512, seed=1).batch(batch_size).repeat()


def build_optimizer(lr):
    # Momentum helps on this toy problem.
    return SGD(learning_rate=lr, momentum=0.9)


def build_model():
    inputs = tf.keras.Input(shape=(10,))
    x = layers.Dense(32, activation="relu")(inputs)
    outputs = layers.Dense(3)(x)
    return tf.keras.Model(inputs, outputs)


def main():
    args = parse_args()
    model = build_model()
    model.compile(
        optimizer=build_optimizer(args.lr),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(make_dataset(args.batch_size), epochs=args.epochs, steps_per_epoch=args.steps)
    os.makedirs(args.out, exist_ok=True)
    model.save_weights(os.path.join(args.out, "final.weights.h5"))


if __name__ == "__main__":
    main()
