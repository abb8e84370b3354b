"""GAN-like loop: two models, two tapes, two optimizers."""
import numpy as np
import tensorflow as tf

NOISE_DIM = 4
BATCH = 32
rng = np.random.default_rng(4)
real = rng.normal(loc=2.0, size=(256, 2)).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(256).batch(BATCH, drop_remainder=True)


def make_generator():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(NOISE_DIM,)),
        tf.keras.layers.Dense(2),
    ])


def make_discriminator():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(2,)),
        tf.keras.layers.Dense(1),
    ])


generator = make_generator()
discriminator = make_discriminator()
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
gen_opt = tf.keras.optimizers.Adam(1e-3, beta_1=0.5)
disc_opt = tf.keras.optimizers.Adam(2e-3, beta_1=0.5)


def discriminator_loss(real_out, fake_out):
    return bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)


def generator_loss(fake_out):
    return bce(tf.ones_like(fake_out), fake_out)


@tf.function
def train_step(batch):
    noise = tf.random.normal([tf.shape(batch)[0], NOISE_DIM])
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        real_out = discriminator(batch, training=True)
        fake_out = discriminator(fake, training=True)
        g_loss = generator_loss(fake_out)
        d_loss = discriminator_loss(real_out, fake_out)
    g_grads = gen_tape.gradient(g_loss, generator.trainable_variables)
    d_grads = disc_tape.gradient(d_loss, discriminator.trainable_variables)
    gen_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
    disc_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
    return g_loss, d_loss


for epoch in range(2):
    for batch in dataset:
        g, d = train_step(batch)
    print(f"epoch {epoch} g={float(g):.3f} d={float(d):.3f}")

generator.save_weights("generator.h5")
