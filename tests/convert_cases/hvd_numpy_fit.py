import numpy as np
import tensorflow as tf

x_train = np.random.random((100, 4))
y_train = np.random.random((100, 1))
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x_train, y_train, epochs=2)
model.fit(x=x_train, y=y_train, batch_size=64, validation_split=0.1)
model.fit(train_dataset, epochs=1)
