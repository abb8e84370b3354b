import tensorflow as tf

import horovod.tensorflow as hvd

# Horovod: one process per GPU. Start Horovod, then pin this process to the GPU of its
# local rank and let memory grow, so several processes can share a machine.
hvd.init()
_gpus = tf.config.list_physical_devices("GPU")
for _gpu in _gpus:
    tf.config.experimental.set_memory_growth(_gpu, True)
if _gpus:
    tf.config.set_visible_devices(_gpus[hvd.local_rank()], "GPU")

x = tf.compat.v1.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.zeros([3, 1]))
loss = tf.reduce_mean(tf.matmul(x, w))
train_op = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5 * hvd.size())).minimize(loss)
sess = tf.compat.v1.InteractiveSession()
tf.compat.v1.global_variables_initializer().run()
hvd.broadcast_global_variables(0).run()
init = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session() as other:
    other.run(init)
    other.run(hvd.broadcast_global_variables(0))
    other.run(train_op, feed_dict={x: batch})
