# Pattern from keras-team/keras-io examples/structured_data/structured_data_classification_from_scratch.py
# (commit 002c7bbfe68f2f82b7294b712e9784c03a16e960): a dataframe turned into a shuffled
# tf.data pipeline inside a helper, Normalization / StringLookup layers adapted on a map() of
# that (sharded) dataset, then fit(). Written for tfdesk's corpus with synthetic data.
"""Tabular classification: lookup + normalization layers adapted on the training dataset."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
N = 96
columns = {
    "age": rng.normal(50, 9, N).astype("float32"),
    "chol": rng.normal(240, 40, N).astype("float32"),
    "thal": rng.choice(["fixed", "normal", "reversible"], N),
}
target = (columns["age"] > 50).astype("float32")


def frame_to_dataset(features, labels):
    ds = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    return ds.shuffle(buffer_size=len(labels), seed=5)


train_ds = frame_to_dataset(columns, target).batch(16)


def numeric_input(name, dataset):
    inp = tf.keras.Input(shape=(1,), name=name)
    norm = tf.keras.layers.Normalization()
    norm.adapt(dataset.map(lambda x, y: tf.expand_dims(x[name], -1)))
    return inp, norm(inp)


def string_input(name, dataset):
    inp = tf.keras.Input(shape=(1,), name=name, dtype="string")
    lookup = tf.keras.layers.StringLookup(output_mode="one_hot")
    lookup.adapt(dataset.map(lambda x, y: x[name]))
    return inp, lookup(inp)


age_in, age = numeric_input("age", train_ds)
chol_in, chol = numeric_input("chol", train_ds)
thal_in, thal = string_input("thal", train_ds)
x = tf.keras.layers.concatenate([age, chol, thal])
x = tf.keras.layers.Dense(8, activation="relu", kernel_initializer="glorot_uniform")(x)
out = tf.keras.layers.Dense(1, activation="sigmoid")(x)
model = tf.keras.Model([age_in, chol_in, thal_in], out)
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(train_ds, epochs=2)
