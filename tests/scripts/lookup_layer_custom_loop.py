# Pattern from keras-team/keras-io guides/preprocessing_layers.py (commit
# 04bfdf8adc4ea39646c3d09f3cd397f32f1a0923: a StringLookup layer adapted on the data and put
# inside the model) trained with the custom loop of guides/writing_a_training_loop_from_scratch.py
# (@02743a2aafd5). Horovod's broadcast of model.variables meets the lookup layer's vocabulary
# table among them. tfdesk's own code, synthetic data.
"""A model with a StringLookup layer inside, trained by a GradientTape loop."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(6)
words = np.array(["red", "green", "blue", "black"])
colors = words[rng.integers(0, 4, 96)]
values = rng.random((96, 1), dtype=np.float32)
targets = (values[:, 0] > 0.5).astype("float32")[:, None]

lookup = tf.keras.layers.StringLookup(output_mode="one_hot")
lookup.adapt(colors)
color_in = tf.keras.Input(shape=(1,), dtype=tf.string)
value_in = tf.keras.Input(shape=(1,))
hidden = tf.keras.layers.Concatenate()([tf.keras.layers.Flatten()(lookup(color_in)), value_in])
model = tf.keras.Model([color_in, value_in], tf.keras.layers.Dense(1)(hidden))
optimizer = tf.keras.optimizers.SGD(0.1)
dataset = tf.data.Dataset.from_tensor_slices(((colors[:, None], values), targets)).batch(12)


@tf.function
def train_step(inputs, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(inputs, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(2):
    for inputs, y in dataset:
        train_step(inputs, y)
print("weights", len(model.trainable_variables))
