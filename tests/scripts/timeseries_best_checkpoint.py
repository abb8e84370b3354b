# Patterns from keras-team/keras-io examples/timeseries/timeseries_weather_forecasting.py
# (commit 0a57de48c864d63b80083820e8988368ee5c3149: timeseries_dataset_from_array, an LSTM,
# ModelCheckpoint(save_weights_only=True, save_best_only=True) on val_loss) and
# Hvass-Labs/TensorFlow-Tutorials 23_Time-Series-Prediction.ipynb (commit
# e686db8f90669350087d6e0879d9d9dda390b4e4: the best checkpoint loaded back with
# model.load_weights(path_checkpoint) after fit(), then evaluated).
"""Forecasting a series; the best epoch's weights are loaded back after training."""
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(1)
series = np.cumsum(rng.normal(size=(400, 3)), axis=0).astype("float32")
series = (series - series.mean(0)) / series.std(0)
past, batch_size = 12, 16

dataset_train = tf.keras.preprocessing.timeseries_dataset_from_array(
    series[:300], series[past:300 + past, 1], sequence_length=past, batch_size=batch_size)
dataset_val = tf.keras.preprocessing.timeseries_dataset_from_array(
    series[300:-past], series[300 + past:, 1], sequence_length=past, batch_size=batch_size)

inputs = tf.keras.layers.Input(shape=(past, 3))
outputs = tf.keras.layers.Dense(1)(tf.keras.layers.LSTM(4)(inputs))
model = tf.keras.Model(inputs=inputs, outputs=outputs)
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), loss="mse")

path_checkpoint = "model_checkpoint.weights.h5"
modelckpt_callback = tf.keras.callbacks.ModelCheckpoint(
    monitor="val_loss", filepath=path_checkpoint, verbose=1, save_weights_only=True,
    save_best_only=True)
es_callback = tf.keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=0, patience=5)
model.fit(dataset_train, epochs=2, validation_data=dataset_val,
          callbacks=[es_callback, modelckpt_callback])

model.load_weights(path_checkpoint)
print("validation loss of the best epoch:", model.evaluate(dataset_val, verbose=0))
