# Pattern from tensorflow/tensorflow tensorflow/examples/tutorials/mnist/mnist_softmax.py
# (commit 0ed1dc250308c09eb60e3b2d3c1f8e450f48b192): TF1 graph code in an InteractiveSession,
# variables initialised with initialize_all_variables().run(), the train op run with a feed
# dict (train_step.run({x: ..., y_: ...})). Synthetic batches here.
"""Softmax regression in TF1 graph mode."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
rng = np.random.default_rng(0)
images = rng.random((200, 16)).astype("float32")
labels = np.eye(4, dtype="float32")[rng.integers(0, 4, 200)]

sess = tf.compat.v1.InteractiveSession()
x = tf.compat.v1.placeholder(tf.float32, [None, 16])
W = tf.Variable(tf.random.normal([16, 4], stddev=0.1))
b = tf.Variable(tf.zeros([4]))
y = tf.matmul(x, W) + b
y_ = tf.compat.v1.placeholder(tf.float32, [None, 4])
cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
train_step = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

tf.compat.v1.initialize_all_variables().run()
for i in range(20):
    start = (i * 10) % 200
    train_step.run({x: images[start:start + 10], y_: labels[start:start + 10]})
print("loss", cross_entropy.eval({x: images, y_: labels}))
sess.close()
