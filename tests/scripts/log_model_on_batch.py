# Pattern from aymericdamien/TensorFlow-Examples tensorflow_v2/notebooks/3_NeuralNetworks/
# neural_network.ipynb (commit 26cc8836017d539b30526c96b1d9d31e3a62ca6e): a plain Python
# run_optimization(x, y) step (tape, gradients, apply_gradients), a loop
# `for step, (batch_x, batch_y) in enumerate(train_data.take(n), 1)` that, every display_step,
# calls the model on the same batch to log its loss and accuracy. tfdesk's own code,
# synthetic data.
"""A custom loop that logs by calling the model on the training batch."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(4)
x_train = rng.random((128, 8), dtype=np.float32)
y_train = rng.integers(0, 4, 128)
train_data = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(16)

neural_net = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="relu"),
                                  tf.keras.layers.Dense(4)])
optimizer = tf.keras.optimizers.SGD(0.1)


def cross_entropy_loss(logits, labels):
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int64), logits=logits)
    return tf.reduce_mean(loss)


def accuracy(logits, labels):
    correct = tf.equal(tf.argmax(logits, 1), tf.cast(labels, tf.int64))
    return tf.reduce_mean(tf.cast(correct, tf.float32))


def run_optimization(x, y):
    with tf.GradientTape() as g:
        pred = neural_net(x, training=True)
        loss = cross_entropy_loss(pred, y)
    gradients = g.gradient(loss, neural_net.trainable_variables)
    optimizer.apply_gradients(zip(gradients, neural_net.trainable_variables))


for step, (batch_x, batch_y) in enumerate(train_data, 1):
    run_optimization(batch_x, batch_y)
    if step % 2 == 0:
        pred = neural_net(batch_x, training=False)
        print("step %i, loss %f, accuracy %f" % (step, cross_entropy_loss(pred, batch_y),
                                                 accuracy(pred, batch_y)))
