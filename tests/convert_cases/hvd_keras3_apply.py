import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam()
for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = keras.losses.mean_squared_error(y, model(x))
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
