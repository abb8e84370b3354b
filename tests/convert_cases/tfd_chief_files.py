import shutil

import matplotlib.pyplot as plt
import tensorflow as tf
from tensorflow import keras

shutil.rmtree("logs", ignore_errors=True)
writer = tf.summary.create_file_writer("logs/train")
train_ds = keras.utils.image_dataset_from_directory("images", image_size=(32, 32))
val_ds = keras.utils.image_dataset_from_directory("images", image_size=(32, 32), batch_size=8)
model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(2)])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")


def plot(history):
    plt.plot(history.history["loss"])
    plt.savefig("loss.png")


best = keras.callbacks.ModelCheckpoint("best.h5", save_best_only=True)
history = model.fit(train_ds, validation_data=val_ds, epochs=2, callbacks=[best])
plot(history)
model.load_weights("best.h5")
model.save("final.keras")
reloaded = keras.models.load_model("final.keras")
