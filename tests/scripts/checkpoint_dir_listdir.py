# Pattern from keras-team/keras-io guides/distributed_training_with_tensorflow.py (commit
# 1806537c4333fbff1f9fd038b78179beeda480fb): a checkpoint folder created up front,
# make_or_restore_model() lists it (os.listdir) and loads the newest file, fit() with
# ModelCheckpoint(checkpoint_dir + "/ckpt-{epoch}...") run twice (the second run resumes from
# what the first one saved). tfdesk's own code, synthetic data.
"""Train, then train again resuming from the newest checkpoint in a folder."""
import os

import numpy as np
import tensorflow as tf
from tensorflow import keras

checkpoint_dir = "./ckpt"
if not os.path.exists(checkpoint_dir):
    os.makedirs(checkpoint_dir)

rng = np.random.default_rng(3)
x_train = rng.random((128, 6), dtype=np.float32)
y_train = (x_train.sum(axis=1, keepdims=True) > 3).astype("float32")


def get_compiled_model():
    model = keras.Sequential([keras.Input(shape=(6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def make_or_restore_model():
    checkpoints = [checkpoint_dir + "/" + name for name in os.listdir(checkpoint_dir)]
    if checkpoints:
        latest_checkpoint = max(checkpoints, key=os.path.getctime)
        print("Restoring from", latest_checkpoint)
        return keras.models.load_model(latest_checkpoint)
    print("Creating a new model")
    return get_compiled_model()


def run_training(epochs=1):
    model = make_or_restore_model()
    callbacks = [keras.callbacks.ModelCheckpoint(filepath=checkpoint_dir + "/ckpt-{epoch}.h5")]
    model.fit(x_train, y_train, batch_size=16, epochs=epochs, callbacks=callbacks, verbose=0)
    return model


run_training(epochs=1)
model = run_training(epochs=1)
print("checkpoints:", sorted(os.listdir(checkpoint_dir)))
