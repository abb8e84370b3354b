"""A custom loop with @tf.function train and test steps; the loop reads the dataset through
enumerate() and the test step updates a validation metric.

Pattern from keras-team/keras-io guides/writing_a_training_loop_from_scratch.py
(commit 02743a2aafd542d9bad4b4a54b8f64d327ca171b: "Speeding-up your training step with
tf.function", `for step, (x, y) in enumerate(train_dataset)`, test_step with val_acc_metric);
rewritten with synthetic data.
"""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(3)
x_train = rng.random((256, 20), dtype=np.float32)
y_train = rng.integers(0, 5, size=(256,))
x_val, y_val = x_train[:64], y_train[:64]

inputs = keras.Input(shape=(20,))
hidden = keras.layers.Dense(16, activation="relu")(inputs)
outputs = keras.layers.Dense(5)(hidden)
model = keras.Model(inputs=inputs, outputs=outputs)
optimizer = keras.optimizers.SGD(learning_rate=0.1)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()

batch_size = 32
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


for epoch in range(2):
    for step, (x_batch, y_batch) in enumerate(train_dataset):
        loss_value = train_step(x_batch, y_batch)
        if step % 4 == 0:
            print("step %d loss %.4f" % (step, float(loss_value)))
    print("train acc %.4f" % float(train_acc_metric.result()))
    train_acc_metric.reset_states()
    for x_batch, y_batch in val_dataset:
        test_step(x_batch, y_batch)
    print("val acc %.4f" % float(val_acc_metric.result()))
    val_acc_metric.reset_states()
