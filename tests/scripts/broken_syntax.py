import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)]
model.compile(optimizer="adam", loss="mse")
