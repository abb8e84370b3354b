# Pattern from keras-team/keras-io guides/training_with_built_in_methods.py (commit
# ad4fc805f5e1a4a4c0bcdd416aa9feac6608fb6c, the Keras 3 version): `import keras` with no
# KERAS_BACKEND set, a keras.utils.PyDataset (Keras 3 only) fed to fit(). tfdesk's own code,
# synthetic data.
"""A Keras 3 fit() on a PyDataset: runs on no Keras 2, and fit() fails under
MultiWorkerMirroredStrategy on Keras 3."""
import keras
import numpy as np


class ArrayBatches(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


rng = np.random.default_rng(1)
x = rng.random((64, 4), dtype=np.float32)
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(ArrayBatches(x, y, batch_size=16), epochs=2, verbose=0)
