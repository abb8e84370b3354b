"""fit() with ModelCheckpoint(save_best_only=True), then the best weights loaded back from that
file for a prediction.

Pattern from keras-team/keras-io examples/vision/3D_image_classification.py
(commit 0766e7be5fbe02ab55c4f0cd4e6d433bf6c44b61: ModelCheckpoint("3d_image_classification.h5",
save_best_only=True) ... model.load_weights("3d_image_classification.h5")); rewritten with
synthetic data and a small dense model.
"""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(5)
x_train = rng.random((192, 16), dtype=np.float32)
y_train = (x_train[:, :8].sum(axis=1) > 4).astype("float32")
x_test, y_test = x_train[:64], y_train[:64]

batch_size = 32
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)
test_dataset = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size)


def get_model():
    inputs = keras.Input((16,))
    x = keras.layers.Dense(16, activation="relu")(inputs)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(inputs, outputs, name="classifier")


model = get_model()
model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.SGD(learning_rate=0.1),
              metrics=["acc"])
checkpoint_cb = keras.callbacks.ModelCheckpoint("best_classifier.h5", save_best_only=True)
model.fit(train_dataset, validation_data=test_dataset, epochs=3, verbose=2,
          callbacks=[checkpoint_cb])

model.load_weights("best_classifier.h5")
prediction = model.predict(np.expand_dims(x_test[0], axis=0), verbose=0)[0]
print("confidence %.3f" % prediction[0])
