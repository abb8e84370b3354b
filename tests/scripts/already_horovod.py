"""Already distributed with Horovod: nothing to do."""
import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
x = np.random.rand(64, 4).astype("float32")
y = np.random.rand(64, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size())),
              loss="mse")
model.fit(x, y, epochs=1, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)],
          verbose=1 if hvd.rank() == 0 else 0)
