import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="mse", jit_compile=True)
model.fit(dataset, epochs=2)


@tf.function(jit_compile=True)
def evaluate(x):
    return model(x)
