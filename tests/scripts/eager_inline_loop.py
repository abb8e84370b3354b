"""The training step written inline in an eager loop (no function): tape, gradients and
apply_gradients in the body of `for step, (x, y) in enumerate(dataset)`.

Pattern from keras-team/keras-io guides/writing_a_training_loop_from_scratch.py
(commit 02743a2aafd542d9bad4b4a54b8f64d327ca171b: "Using the GradientTape: a first end-to-end
example"); rewritten with synthetic data.
"""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(4)
x_train = rng.random((128, 12), dtype=np.float32)
y_train = rng.integers(0, 3, size=(128,))

model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
optimizer = keras.optimizers.SGD(learning_rate=1e-2)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

batch_size = 32
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)

for epoch in range(2):
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            logits = model(x_batch_train, training=True)
            loss_value = loss_fn(y_batch_train, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        if step % 2 == 0:
            print("step %d loss %.4f" % (step, float(loss_value)))
