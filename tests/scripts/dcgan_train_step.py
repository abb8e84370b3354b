# Pattern from keras-team/keras-io examples/generative/dcgan_overriding_train_step.py
# (commit 0d5f327814b51b9f3efe59bc6845756f630eb9b6): a GAN Model subclass whose train_step
# takes two tapes (discriminator, generator), a compile() with its own d_optimizer /
# g_optimizer / loss_fn, and a callback dumping generated images every epoch (written here
# with tf.io.write_file, as the runner environment has no PIL for array_to_img: every rank
# writes its own sample, which is harmless).
"""A small GAN trained with fit() through an overridden train_step."""
import numpy as np
import tensorflow as tf

latent_dim = 4
discriminator = tf.keras.Sequential([tf.keras.Input(shape=(6,)), tf.keras.layers.Dense(8, activation="relu"),
                                     tf.keras.layers.Dense(1)], name="discriminator")
generator = tf.keras.Sequential([tf.keras.Input(shape=(latent_dim,)), tf.keras.layers.Dense(6)],
                                name="generator")


class GAN(tf.keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real):
        batch_size = tf.shape(real)[0]
        noise = tf.random.normal(shape=(batch_size, self.latent_dim))
        combined = tf.concat([self.generator(noise), real], axis=0)
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        noise = tf.random.normal(shape=(batch_size, self.latent_dim))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(tf.zeros((batch_size, 1)), self.discriminator(self.generator(noise)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


class GANMonitor(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        sample = self.model.generator(tf.random.normal((1, latent_dim)))
        pixels = tf.cast(tf.clip_by_value(tf.reshape(sample, (2, 3, 1)) * 64 + 128, 0, 255), tf.uint8)
        tf.io.write_file(f"generated_{epoch}.png", tf.io.encode_png(pixels))


real = np.random.default_rng(4).normal(size=(64, 6)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(64, seed=1).batch(8)
gan = GAN(discriminator, generator, latent_dim)
gan.compile(d_optimizer=tf.keras.optimizers.Adam(learning_rate=0.0003),
            g_optimizer=tf.keras.optimizers.Adam(learning_rate=0.0003),
            loss_fn=tf.keras.losses.BinaryCrossentropy(from_logits=True))
gan.fit(dataset, epochs=2, callbacks=[GANMonitor()])
