# tfdesk's own case: a TF1 graph script on TF 2.x through the usual alias
# ('import tensorflow.compat.v1 as tf'), as tf_upgrade_v2 leaves scripts (pattern seen in
# tensorflow/tensorflow tensorflow/examples/tutorials/mnist/mnist_deep.py run on TF 2).
import numpy as np
import tensorflow.compat.v1 as tf

import tensorflow as _tf
import horovod.tensorflow as hvd

# Horovod: one process per GPU. Start Horovod, then pin this process to the GPU of its
# local rank and let memory grow, so several processes can share a machine.
hvd.init()
_gpus = _tf.config.list_physical_devices("GPU")
for _gpu in _gpus:
    _tf.config.experimental.set_memory_growth(_gpu, True)
if _gpus:
    _tf.config.set_visible_devices(_gpus[hvd.local_rank()], "GPU")

tf.disable_v2_behavior()

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1 * hvd.size())).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(hvd.broadcast_global_variables(0))
    for step in range(10):
        xs = np.random.rand(8, 4).astype("float32")
        sess.run(train_op, feed_dict={x: xs, y: xs.sum(axis=1, keepdims=True)})
