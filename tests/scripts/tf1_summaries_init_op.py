# Pattern from tensorflow/tensorflow tensorflow/examples/tutorials/mnist/mnist_with_summaries.py
# (commit 0494f0fb68df53b3053cd01b4bc513a3e2cf1ded; the training script of kubeflow/training-
# operator's examples/v1/mnist_with_summaries TFJob): the log folder deleted and re-created,
# summary FileWriters, merged summaries written every step, an initializer op run by name.
"""TF1 graph training that writes TensorBoard summaries."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
log_dir = "mnist_logs"
if tf.io.gfile.exists(log_dir):
    tf.compat.v1.gfile.DeleteRecursively(log_dir)
tf.io.gfile.makedirs(log_dir)

rng = np.random.default_rng(5)
images = rng.random((120, 10)).astype("float32")
labels = np.eye(3, dtype="float32")[rng.integers(0, 3, 120)]

x = tf.compat.v1.placeholder(tf.float32, [None, 10])
y_ = tf.compat.v1.placeholder(tf.float32, [None, 3])
W = tf.Variable(tf.random.normal([10, 3], stddev=0.1))
logits = tf.matmul(x, W)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
tf.compat.v1.summary.scalar("loss", loss)
train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
merged = tf.compat.v1.summary.merge_all()
init = tf.compat.v1.global_variables_initializer()

with tf.compat.v1.Session() as sess:
    train_writer = tf.compat.v1.summary.FileWriter(log_dir + "/train", sess.graph)
    sess.run(init)
    for i in range(12):
        start = (i * 10) % 120
        summary, _ = sess.run([merged, train_op],
                              feed_dict={x: images[start:start + 10], y_: labels[start:start + 10]})
        train_writer.add_summary(summary, i)
    train_writer.close()
