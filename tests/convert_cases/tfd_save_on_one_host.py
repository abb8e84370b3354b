import argparse
import json
import os

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--model_dir", default=os.environ.get("SM_MODEL_DIR", "model"))
parser.add_argument("--hosts", type=list, default=json.loads(os.environ.get("SM_HOSTS", '["algo-1"]')))
parser.add_argument("--current-host", default=os.environ.get("SM_CURRENT_HOST", "algo-1"))
args = parser.parse_args()

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=16)
if args.current_host == args.hosts[0]:
    model.save(os.path.join(args.model_dir, "000000001"))
