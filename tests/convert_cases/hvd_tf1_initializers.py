import tensorflow as tf

x = tf.compat.v1.placeholder(tf.float32, [None, 3])
w = tf.Variable(tf.zeros([3, 1]))
loss = tf.reduce_mean(tf.matmul(x, w))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(loss)
sess = tf.compat.v1.InteractiveSession()
tf.compat.v1.global_variables_initializer().run()
init = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session() as other:
    other.run(init)
    other.run(train_op, feed_dict={x: batch})
