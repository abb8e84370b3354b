import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
path_checkpoint = "best.weights.h5"
checkpoint = tf.keras.callbacks.ModelCheckpoint(path_checkpoint, save_best_only=True,
                                                save_weights_only=True)
model.fit(dataset, validation_data=val_dataset, epochs=3, callbacks=[checkpoint])
model.load_weights(path_checkpoint)
model.save("final.keras")
restored = tf.keras.models.load_model("final.keras")
MODEL_PATH = "final.keras"
again = tf.keras.models.load_model(MODEL_PATH)
