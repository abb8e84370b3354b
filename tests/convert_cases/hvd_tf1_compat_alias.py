# tfdesk's own case: a TF1 graph script on TF 2.x through the usual alias
# ('import tensorflow.compat.v1 as tf'), as tf_upgrade_v2 leaves scripts (pattern seen in
# tensorflow/tensorflow tensorflow/examples/tutorials/mnist/mnist_deep.py run on TF 2).
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(10):
        xs = np.random.rand(8, 4).astype("float32")
        sess.run(train_op, feed_dict={x: xs, y: xs.sum(axis=1, keepdims=True)})
