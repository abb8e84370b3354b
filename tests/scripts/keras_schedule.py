"""A learning-rate schedule passed through a variable; Keras imported from tensorflow."""
import numpy as np
from tensorflow import keras

BATCH_SIZE = 16
INITIAL_LR = 0.1

rng = np.random.default_rng(3)
images = rng.random((128, 6, 6, 1), dtype=np.float32)
labels = rng.integers(0, 2, size=(128,))

model = keras.Sequential([
    keras.layers.Conv2D(4, 3, activation="relu", input_shape=(6, 6, 1)),
    keras.layers.Flatten(),
    keras.layers.Dense(2),
])
lr_schedule = keras.optimizers.schedules.ExponentialDecay(
    initial_learning_rate=INITIAL_LR, decay_steps=100, decay_rate=0.96)
model.compile(
    optimizer=keras.optimizers.SGD(learning_rate=lr_schedule),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
model.fit(images, labels, batch_size=BATCH_SIZE, epochs=2,
          callbacks=[keras.callbacks.CSVLogger("training.csv")])
