"""Optimizer and callbacks come from a YAML config (overridable by flags); run under
`if __name__ == "__main__":`."""
import argparse

import numpy as np
import tensorflow as tf
import yaml

DEFAULT_CONFIG = """
optimizer:
  name: rmsprop
  learning_rate: 0.005
training:
  batch_size: 16
  epochs: 2
  steps_per_epoch: 6
callbacks:
  csv_log: history.csv
  reduce_lr_patience: 2
"""


def load_config(path):
    if path:
        with open(path) as fh:
            return yaml.safe_load(fh)
    return yaml.safe_load(DEFAULT_CONFIG)


def make_optimizer(cfg):
    name = cfg["name"].lower()
    if name == "rmsprop":
        return tf.keras.optimizers.RMSprop(learning_rate=cfg["learning_rate"])
    return tf.keras.optimizers.Adam(learning_rate=cfg["learning_rate"])


def make_callbacks(cfg):
    return [
        tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=cfg["reduce_lr_patience"]),
        tf.keras.callbacks.CSVLogger(cfg["csv_log"]),
    ]


def build_dataset(batch_size):
    rng = np.random.default_rng(55)
    x = rng.random((400, 7)).astype("float32")
    y = (x[:, :3].sum(axis=1) > 1.5).astype("int32")
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(400, seed=5).repeat().batch(batch_size)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=None)
    parser.add_argument("--epochs", type=int, default=None)
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if args.epochs:
        cfg["training"]["epochs"] = args.epochs

    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(7,)),
        tf.keras.layers.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer=make_optimizer(cfg["optimizer"]),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(build_dataset(cfg["training"]["batch_size"]),
              epochs=cfg["training"]["epochs"],
              steps_per_epoch=cfg["training"]["steps_per_epoch"],
              callbacks=make_callbacks(cfg["callbacks"]))
    model.save("yaml_model.keras")


if __name__ == "__main__":
    main()
