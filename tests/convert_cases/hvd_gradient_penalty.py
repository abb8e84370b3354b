# tfdesk's own case: a critic step with a gradient penalty, whose inner tape watches the
# interpolated images and differentiates with respect to them (pattern seen in keras-team/keras-io
# examples/generative/wgan_gp.py). Only the outer tape's weight gradients are averaged.
import tensorflow as tf

critic = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam(1e-3)
images = tf.data.Dataset.from_tensor_slices(tf.random.uniform((64, 8, 8, 1))).batch(16)


def penalty(real, fake):
    alpha = tf.random.uniform([tf.shape(real)[0], 1, 1, 1])
    mixed = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(mixed)
        pred = critic(mixed, training=True)
    grads = gp_tape.gradient(pred, [mixed])[0]
    norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1, 2, 3]))
    return tf.reduce_mean((norm - 1.0) ** 2)


@tf.function
def train_step(real):
    fake = tf.random.normal(tf.shape(real))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(critic(fake)) - tf.reduce_mean(critic(real)) + 10.0 * penalty(real, fake)
    grads = tape.gradient(loss, critic.trainable_variables)
    opt.apply_gradients(zip(grads, critic.trainable_variables))


for batch in images:
    train_step(batch)
