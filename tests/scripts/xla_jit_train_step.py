# Pattern from tensorflow/tensorflow tensorflow/compiler/xla/g3doc/tutorials/jit_compile.ipynb
# (commit 9558430b4026d30de7d1a6b7b489e4f59a4ac196): a training step compiled with
# @tf.function(jit_compile=True) around a GradientTape, fed from a repeated tf.data pipeline.
"""A custom loop whose step is XLA-compiled."""
import numpy as np
import tensorflow as tf

NUM_CLASSES, IMAGE_SIZE, TRAIN_BATCH_SIZE = 4, 16, 20
rng = np.random.default_rng(6)
train = (rng.random((200, IMAGE_SIZE)).astype("float32"), rng.integers(0, NUM_CLASSES, 200))
train_ds = tf.data.Dataset.from_tensor_slices(train).batch(TRAIN_BATCH_SIZE).repeat()

layer = tf.keras.Sequential([tf.keras.layers.Dense(NUM_CLASSES)])  # a model: the harness reads models
optimizer = tf.keras.optimizers.Adam()


@tf.function(jit_compile=True)
def train_mnist(images, labels):
    with tf.GradientTape() as tape:
        predicted_labels = layer(images)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            logits=predicted_labels, labels=labels))
    layer_variables = layer.trainable_variables
    grads = tape.gradient(loss, layer_variables)
    optimizer.apply_gradients(zip(grads, layer_variables))


for images, labels in train_ds.take(10):
    train_mnist(images, labels)
