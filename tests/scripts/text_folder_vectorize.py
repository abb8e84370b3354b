# Pattern from keras-team/keras-io examples/nlp/text_classification_from_scratch.py
# (commit ef4cd453400aae442632ffdba260673ecc09500a): text_dataset_from_directory with
# validation_split/subset/seed, TextVectorization adapted on raw_train_ds.map(lambda x, y: x),
# the dataset mapped through the layer, a TensorBoard callback. Synthetic text folder here.
"""Text classification from a folder of .txt files with a TextVectorization layer."""
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(11)
words = {"pos": ["good", "great", "fine", "nice"], "neg": ["bad", "awful", "poor", "sad"]}
for label, vocab in words.items():
    os.makedirs(os.path.join("reviews", label), exist_ok=True)
    for i in range(24):
        text = " ".join(rng.choice(vocab + ["the", "film", "was"], 6))
        with open(os.path.join("reviews", label, f"{i}.txt"), "w") as fh:
            fh.write(text)

raw_train_ds = tf.keras.utils.text_dataset_from_directory(
    "reviews", batch_size=8, validation_split=0.25, subset="training", seed=1337)
raw_val_ds = tf.keras.utils.text_dataset_from_directory(
    "reviews", batch_size=8, validation_split=0.25, subset="validation", seed=1337)

vectorize_layer = tf.keras.layers.TextVectorization(max_tokens=40, output_sequence_length=6)
text_ds = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(text_ds)


def vectorize_text(text, label):
    return vectorize_layer(tf.expand_dims(text, -1)), label


train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)

model = tf.keras.Sequential([
    tf.keras.layers.Embedding(40, 8),
    tf.keras.layers.GlobalAveragePooling1D(),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(train_ds, validation_data=val_ds, epochs=2,
          callbacks=[tf.keras.callbacks.TensorBoard(log_dir="logs")])
