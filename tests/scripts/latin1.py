# -*- coding: latin-1 -*-
import tensorflow as tf
# café à la crème
model = tf.keras.Sequential()
