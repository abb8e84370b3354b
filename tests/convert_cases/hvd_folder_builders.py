import tensorflow as tf
import tensorflow_datasets as tfds

train_ds = tf.keras.utils.image_dataset_from_directory("images", batch_size=16, image_size=(32, 32))
val_ds = tf.keras.utils.image_dataset_from_directory(
    "images", validation_split=0.2, subset="validation", seed=7, shuffle=True)
text_ds = tf.keras.utils.text_dataset_from_directory("texts", shuffle=False)
(mnist_train, mnist_test), info = tfds.load("mnist", split=["train", "test"], with_info=True)
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(train_ds, validation_data=val_ds, epochs=1)
