import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(0.1)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
val_acc = tf.keras.metrics.SparseCategoricalAccuracy()
train_ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(16)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    return loss


@tf.function
def test_step(x, y):
    val_acc.update_state(y, model(x, training=False))


for step, (x, y) in enumerate(train_ds):
    loss = train_step(x, y)
for x, y in train_ds:
    test_step(x, y)
print(float(val_acc.result()))
