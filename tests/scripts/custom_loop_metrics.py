"""Custom training loop: @tf.function train step, tf.keras.metrics objects reset every epoch,
and a tf.train.CheckpointManager that keeps the last two checkpoints."""
import numpy as np
import tensorflow as tf

NUM_CLASSES = 3
GLOBAL_STEP_LOG = 5

rng = np.random.default_rng(33)
features = rng.normal(size=(240, 10)).astype(np.float32)
targets = rng.integers(0, NUM_CLASSES, size=(240,)).astype(np.int32)
train_data = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(240, seed=3).batch(24)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(32, activation="relu", input_shape=(10,)),
    tf.keras.layers.Dropout(0.1, seed=1),
    tf.keras.layers.Dense(NUM_CLASSES),
])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_loss = tf.keras.metrics.Mean(name="train_loss")
train_acc = tf.keras.metrics.SparseCategoricalAccuracy(name="train_acc")

ckpt = tf.train.Checkpoint(step=tf.Variable(0), model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(ckpt, "./tf_ckpts", max_to_keep=2)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_object(y, logits)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_loss(loss)
    train_acc(y, logits)


for epoch in range(2):
    train_loss.reset_states()
    train_acc.reset_states()
    for x_batch, y_batch in train_data:
        train_step(x_batch, y_batch)
        ckpt.step.assign_add(1)
    save_path = manager.save()
    print(f"epoch {epoch + 1}: loss={train_loss.result():.4f} acc={train_acc.result():.3f} "
          f"saved {save_path}")
