"""A script written for MirroredStrategy (one machine, several GPUs): the global batch is built
from a per-replica batch, the loss is averaged with tf.nn.compute_average_loss, train and test
steps run through strategy.run, and every replica saves a checkpoint.

Pattern from tensorflow/docs site/en/tutorials/distribute/custom_training.ipynb
(commit a9413810508a3c335b75b96c832664682a0c1969); rewritten with synthetic data.
"""
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
print("replicas:", strategy.num_replicas_in_sync)

rng = np.random.default_rng(2)
images = rng.random((256, 12), dtype=np.float32)
labels = rng.integers(0, 4, size=(256,)).astype("int64")

BATCH_SIZE_PER_REPLICA = 32
GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
EPOCHS = 2

train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(GLOBAL_BATCH_SIZE)
test_dataset = tf.data.Dataset.from_tensor_slices((images[:64], labels[:64])).batch(GLOBAL_BATCH_SIZE)
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)

checkpoint_dir = "./training_checkpoints"
checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")

with strategy.scope():
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def compute_loss(labels, predictions):
        per_example_loss = loss_object(labels, predictions)
        return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)

    test_loss = tf.keras.metrics.Mean(name="test_loss")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(4)])
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = compute_loss(y, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


def test_step(inputs):
    x, y = inputs
    predictions = model(x, training=False)
    test_loss.update_state(loss_object(y, predictions))
    test_accuracy.update_state(y, predictions)


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


@tf.function
def distributed_test_step(dataset_inputs):
    return strategy.run(test_step, args=(dataset_inputs,))


for epoch in range(EPOCHS):
    total_loss, num_batches = 0.0, 0
    for x in train_dist_dataset:
        total_loss += distributed_train_step(x)
        num_batches += 1
    for x in test_dist_dataset:
        distributed_test_step(x)
    checkpoint.save(checkpoint_prefix)
    print(f"epoch {epoch + 1} loss {float(total_loss / num_batches):.4f} "
          f"test accuracy {float(test_accuracy.result()):.3f}")
    test_loss.reset_states()
    test_accuracy.reset_states()
