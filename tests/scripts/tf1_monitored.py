"""TF1-style graph training with MonitoredTrainingSession (runs on TF 2 via tf.compat.v1)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

rng = np.random.default_rng(13)
features = rng.random((200, 4)).astype("float32")
targets = features @ np.array([[2.0], [-1.0], [0.5], [1.5]], dtype="float32")

x = tf.compat.v1.placeholder(tf.float32, [None, 4])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
w = tf.compat.v1.get_variable("w", [4, 1], initializer=tf.compat.v1.random_normal_initializer())
b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))

global_step = tf.compat.v1.train.get_or_create_global_step()
opt = tf.compat.v1.train.GradientDescentOptimizer(0.05)
train_op = opt.minimize(loss, global_step=global_step)

hooks = [tf.compat.v1.train.StopAtStepHook(last_step=20)]
with tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir="tf1_ckpt", hooks=hooks) as sess:
    step = 0
    while not sess.should_stop():
        batch = slice((step * 20) % 200, (step * 20) % 200 + 20)
        _, value = sess.run([train_op, loss], feed_dict={x: features[batch], y: targets[batch]})
        step += 1
print("done after", step, "steps")
