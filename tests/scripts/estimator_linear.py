"""An Estimator with a custom model_fn (TF <= 2.15)."""
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

FEATURES = np.random.default_rng(17).random((120, 3)).astype("float32")
LABELS = FEATURES.sum(axis=1, keepdims=True)


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, LABELS))
    return ds.repeat().batch(12)


def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1])
    pred = tf.matmul(features["x"], w)
    loss = tf.reduce_mean(tf.square(pred - labels))
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=pred)


estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="est_model")
estimator.train(input_fn=input_fn, steps=20)
