import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()
for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    pairs = list(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    optimizer.apply_gradients(pairs)
