import shutil

import matplotlib.pyplot as plt
import tensorflow as tf

shutil.rmtree("logs", ignore_errors=True)
writer = tf.summary.create_file_writer("logs/train")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
history = model.fit(dataset, epochs=2)
with writer.as_default():
    tf.summary.scalar("final_loss", history.history["loss"][-1], step=0)
plt.plot(history.history["loss"])
plt.savefig("loss.png")
