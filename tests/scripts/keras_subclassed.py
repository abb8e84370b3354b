"""A subclassed model with standalone `import keras` (Keras 2 on TF <= 2.15)."""
import keras
import numpy as np


class TinyNet(keras.Model):
    def __init__(self, units=8):
        super().__init__()
        self.hidden = keras.layers.Dense(units, activation="relu")
        self.out = keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def main(epochs=2):
    data = np.random.default_rng(5).random((96, 5)).astype("float32")
    target = data.mean(axis=1, keepdims=True)
    model = TinyNet()
    model.compile(optimizer=keras.optimizers.Adam(), loss="mae")
    model.fit(data, target, batch_size=12, epochs=epochs, verbose=0)
    model.save_weights("tiny.weights.h5")


if __name__ == "__main__":
    main()
