"""Two-input functional model (numeric features + a token id) fed by a tf.data pipeline with
map/shuffle/batch/prefetch; callbacks built in a list first, then passed to fit()."""
import numpy as np
import tensorflow as tf

BATCH_SIZE = 32
EPOCHS = 2
AUTOTUNE = tf.data.AUTOTUNE

rng = np.random.default_rng(21)
numeric = rng.random((384, 6), dtype=np.float32)
tokens = rng.integers(0, 50, size=(384, 1))
labels = ((numeric[:, 0] + tokens[:, 0] / 50.0) > 1.0).astype("float32")


def to_inputs(num, tok, label):
    return {"numeric": tf.cast(num, tf.float32) * 2.0 - 1.0, "token": tok}, label


train_ds = (
    tf.data.Dataset.from_tensor_slices((numeric, tokens, labels))
    .map(to_inputs, num_parallel_calls=AUTOTUNE)
    .shuffle(384, seed=21)
    .batch(BATCH_SIZE)
    .prefetch(AUTOTUNE)
)

numeric_in = tf.keras.Input(shape=(6,), name="numeric")
token_in = tf.keras.Input(shape=(1,), name="token", dtype="int64")
embedded = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(50, 4)(token_in))
merged = tf.keras.layers.Concatenate()([numeric_in, embedded])
hidden = tf.keras.layers.Dense(16, activation="relu")(merged)
output = tf.keras.layers.Dense(1, activation="sigmoid", name="label")(hidden)
model = tf.keras.Model(inputs=[numeric_in, token_in], outputs=output)

model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=3e-3),
    loss="binary_crossentropy",
    metrics=[tf.keras.metrics.AUC(name="auc")],
)

callbacks = []
callbacks.append(tf.keras.callbacks.ModelCheckpoint(
    filepath="ckpt/best.weights.h5", save_weights_only=True, monitor="loss", save_best_only=True))
callbacks.append(tf.keras.callbacks.EarlyStopping(monitor="loss", patience=3))
callbacks.append(tf.keras.callbacks.TensorBoard(log_dir="tb"))

model.fit(train_ds, epochs=EPOCHS, callbacks=callbacks)
