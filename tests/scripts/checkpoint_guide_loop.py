"""Custom training loop, tf.function step, CheckpointManager; save_path = manager.save() then print it."""
import numpy as np
import tensorflow as tf

BATCH_SIZE = 32
LR = 0.01

rng = np.random.default_rng(3)
features = rng.normal(size=(512, 6)).astype("float32")
targets = (features @ rng.normal(size=(6, 1))).astype("float32")
train_data = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(512).batch(BATCH_SIZE)


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(16, activation="tanh")
        self.out = tf.keras.layers.Dense(1)

    def call(self, x, training=False):
        return self.out(self.d1(x))


model = Regressor()
optimizer = tf.keras.optimizers.Adam(learning_rate=LR)
mse = tf.keras.losses.MeanSquaredError()
train_loss = tf.keras.metrics.Mean(name="train_loss")

ckpt = tf.train.Checkpoint(step=tf.Variable(0), model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(ckpt, "./tf_ckpts", max_to_keep=2)
ckpt.restore(manager.latest_checkpoint)
if manager.latest_checkpoint:
    print("Restored from", manager.latest_checkpoint)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = mse(y, pred)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_loss(loss)


for epoch in range(2):
    train_loss.reset_state()
    for xb, yb in train_data:
        train_step(xb, yb)
        ckpt.step.assign_add(1)
    save_path = manager.save()
    print(f"Saved checkpoint for step {int(ckpt.step)}: {save_path}")
    print("epoch", epoch, "loss", float(train_loss.result()))
