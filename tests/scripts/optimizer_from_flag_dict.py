"""Optimizer picked by a string flag via a dict; model from a function; main guard."""
import argparse

import numpy as np
import tensorflow as tf

OPTIMIZERS = {
    "adam": tf.keras.optimizers.Adam,
    "sgd": tf.keras.optimizers.SGD,
    "rmsprop": tf.keras.optimizers.RMSprop,
}


def build_model(hidden: int, n_classes: int) -> tf.keras.Model:
    inputs = tf.keras.Input(shape=(8,))
    h = tf.keras.layers.Dense(hidden, activation="relu")(inputs)
    h = tf.keras.layers.Dropout(0.1)(h)
    outputs = tf.keras.layers.Dense(n_classes)(h)
    return tf.keras.Model(inputs, outputs, name="mlp")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--optimizer", default="adam", choices=sorted(OPTIMIZERS))
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    return p.parse_args()


def main():
    args = parse_args()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(320, 8)).astype(np.float32)
    y = rng.integers(0, 3, size=(320,))
    model = build_model(32, 3)
    opt = OPTIMIZERS[args.optimizer](learning_rate=args.learning_rate)
    model.compile(opt, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
              validation_split=0.2, verbose=1)
    loss, acc = model.evaluate(x, y, verbose=0)
    print(f"eval loss={loss:.3f} acc={acc:.3f}")
    model.save("mlp_model")


if __name__ == "__main__":
    main()
