# Pattern from tensorflow/docs site/en/tutorials/customization/custom_training_walkthrough.ipynb
# (commit 023b91c89dc0: tf.data.experimental.make_csv_dataset(path, batch_size, column_names=,
# label_name=, num_epochs=1) read in an eager loop; a grad() helper returns (loss, gradients)
# and the loop applies them). tfdesk's own code, synthetic data.
"""Classifying rows of a CSV file in an eager training loop."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
rows = rng.normal(size=(96, 3)).astype("float32")
labels = (rows.sum(axis=1) > 0).astype("int32")
with open("rows.csv", "w") as f:
    f.write("a,b,c,label\n")
    for row, label in zip(rows, labels):
        f.write(",".join(f"{v:.4f}" for v in row) + f",{label}\n")

column_names = ["a", "b", "c", "label"]
batch_size = 16
records = tf.data.experimental.make_csv_dataset(
    "rows.csv", batch_size, column_names=column_names, label_name="label", num_epochs=1)


def stack_columns(features, label):
    return tf.stack(list(features.values()), axis=1), label


records = records.map(stack_columns)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(2)])
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss_object(y_true=targets, y_pred=model(inputs, training=True))
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


for epoch in range(2):
    epoch_loss = tf.keras.metrics.Mean()
    for x, y in records:
        loss_value, grads = grad(model, x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        epoch_loss.update_state(loss_value)
    print(f"epoch {epoch}: loss {float(epoch_loss.result()):.4f}")
