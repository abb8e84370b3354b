import tensorflow as tf

ds = tf.data.Dataset.from_tensor_slices((words, labels)).batch(8)
lookup = tf.keras.layers.StringLookup()
lookup.adapt(ds.map(lambda x, y: x))
model = tf.keras.Sequential([lookup, tf.keras.layers.Embedding(20, 4), tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(ds, epochs=1)
