import numpy as np
import tensorflow as tf

x_train = np.random.random((100, 4))
y_train = np.random.random((100, 1))
idx = np.random.permutation(len(x_train))
x_train, y_train = x_train[idx], y_train[idx]
np.random.shuffle(x_train)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x_train, y_train, batch_size=16, epochs=2)
