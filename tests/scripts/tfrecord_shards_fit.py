# Pattern from keras-team/keras-io examples/keras_recipes/creating_tfrecords.py (commit
# b8bb4c0d5068d64290003740c2ef9e703eefa751): the data written to TFRecord shards first
# (`with tf.io.TFRecordWriter(path) as writer` per shard, tf.train.Example records), then read
# back with tf.data.TFRecordDataset(tf.io.gfile.glob(...)), parsed and trained on with fit().
# tfdesk's own code, synthetic data.
"""Write TFRecord shards, then train on them."""
import os

import numpy as np
import tensorflow as tf

tfrecords_dir = "tfrecords"
num_shards = 2
os.makedirs(tfrecords_dir, exist_ok=True)

rng = np.random.default_rng(9)
features = rng.random((64, 3), dtype=np.float32)
labels = (features.sum(axis=1) > 1.5).astype("int64")


def create_example(x, y):
    feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
               "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}
    return tf.train.Example(features=tf.train.Features(feature=feature))


per_shard = len(features) // num_shards
for shard in range(num_shards):
    part = slice(shard * per_shard, (shard + 1) * per_shard)
    with tf.io.TFRecordWriter(f"{tfrecords_dir}/shard_{shard:02d}.tfrec") as writer:
        for x, y in zip(features[part], labels[part]):
            writer.write(create_example(x, y).SerializeToString())


def parse(record):
    spec = {"x": tf.io.FixedLenFeature([3], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}
    example = tf.io.parse_single_example(record, spec)
    return example["x"], example["y"]


files = sorted(tf.io.gfile.glob(f"{tfrecords_dir}/*.tfrec"))
train_dataset = tf.data.TFRecordDataset(files).map(parse).batch(8)
model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train_dataset, epochs=2, verbose=0)
