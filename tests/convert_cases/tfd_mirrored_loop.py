import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
GLOBAL_BATCH = 32 * strategy.num_replicas_in_sync
dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(GLOBAL_BATCH)
dist_dataset = strategy.experimental_distribute_dataset(dataset)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        loss = tf.nn.compute_average_loss(tf.square(model(x) - y), global_batch_size=GLOBAL_BATCH)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


@tf.function
def distributed_step(inputs):
    return strategy.run(train_step, args=(inputs,))


for x in dist_dataset:
    distributed_step(x)
checkpoint.save("./ckpt/ckpt")
