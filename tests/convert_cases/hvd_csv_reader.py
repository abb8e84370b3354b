import tensorflow as tf

columns = ["a", "b", "label"]
train = tf.data.experimental.make_csv_dataset("train.csv", 16, column_names=columns,
                                              label_name="label", num_epochs=1)
held_out = tf.data.experimental.make_csv_dataset("test.csv", batch_size=16, label_name="label",
                                                 num_epochs=1, shuffle=False)
extra = tf.data.Dataset.from_generator(lambda: iter([]), output_signature=tf.TensorSpec([2]))

model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(train.map(lambda f, y: (tf.stack(list(f.values()), axis=1), y)), epochs=2)
