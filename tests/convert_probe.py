"""Runner-side probe for the EQUIVALENCE check (imported by convert_shim.py under .venv-runner).

Equivalence: the first distributed step must equal one single-process step on the union of the
workers' batches, with the documented scaling (global batch = per-worker batch x workers; the
learning rate x workers with Horovod, unchanged with tf.distribute). The probe records, for
every variable the optimizer updates, its FIRST update: the gradient the optimizer applied
(after any cross-worker averaging), the value before and the value after. The harness compares
the distributed record with a reference record made by running the ORIGINAL script in one
process with this probe scaling its batches (and, for Horovod, its learning rate).

Switched on by environment variables the harness sets (the plain agreement runs do not set them):
  TFDESK_PROBE_OUT=DIR          write DIR/step1-rank<N>.npz
  TFDESK_PROBE_REFERENCE=B,L    reference run: batch sizes x B, learning rate x L; the process
                                exits as soon as the second step starts (nothing after step 1
                                matters to the comparison).

Randomness the comparison cannot share between one process and two is switched off in both runs,
the same way: Dataset.shuffle is a no-op, fit(shuffle=False), Dropout rate 0, and every process
starts from the same seed. What stays random (augmentation layers) or per-worker by design (batch
normalisation statistics) is recorded, and the harness calls those scripts "not comparable".
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

OUT = os.environ.get("TFDESK_PROBE_OUT")
_REF = os.environ.get("TFDESK_PROBE_REFERENCE")
BATCH_FACTOR, LR_FACTOR = (int(x) for x in _REF.split(",")) if _REF else (1, 1)
SCRIPT = {"path": None}
RECORD: dict[str, np.ndarray] = {}
SEEN: dict[str, int] = {}  # variable key -> updates seen
FLAGS: set[str] = set()


def _rank() -> int:
    if "HOROVOD_RANK" in os.environ:
        return int(os.environ["HOROVOD_RANK"])
    if "TF_CONFIG" in os.environ:
        return int(json.loads(os.environ["TF_CONFIG"])["task"]["index"])
    return 0


def dump() -> None:
    if not OUT:
        return
    os.makedirs(OUT, exist_ok=True)
    meta = np.array(json.dumps({"flags": sorted(FLAGS), "variables": len(SEEN)}))
    np.savez(os.path.join(OUT, f"step1-rank{_rank()}.npz"), __meta__=meta, **RECORD)


def _from_script() -> bool:
    """Whether the caller two frames up is the user's script (not Keras' own data adapters)."""
    frame = sys._getframe(2)
    return SCRIPT["path"] is not None and frame.f_code.co_filename == SCRIPT["path"]


def _record(key, grad, before, after):
    n = SEEN.get(key, 0)
    if n == 0:
        RECORD[f"grad/{key}"] = grad.numpy()
        RECORD[f"before/{key}"] = before.numpy()
        RECORD[f"after/{key}"] = after.numpy()
    elif _REF:
        # The second step has started: the reference has what it needs.
        dump()
        sys.stdout.flush()
        os._exit(0)
    SEEN[key] = n + 1


def _patch_optimizer():
    from keras.src.optimizers import optimizer as new_opt

    original = new_opt._BaseOptimizer._update_step
    keys: dict[int, str] = {}

    def _update_step(self, gradient, variable):
        if isinstance(gradient, tf.IndexedSlices):
            gradient = tf.convert_to_tensor(gradient)
        key = keys.get(id(variable))
        if key is None:
            key = variable.name.replace("/", "|")
            if key in keys.values():  # two variables of one name: number the later one
                key = f"{key}#{len(keys)}"
            keys[id(variable)] = key
        before = tf.identity(variable.read_value())
        op = original(self, gradient, variable)
        after = tf.identity(variable.read_value())
        tf.py_function(lambda g, b, a, key=key: _record(key, g, b, a) or 0,
                       [gradient, before, after], [tf.int32])
        return op

    new_opt._BaseOptimizer._update_step = _update_step

    if LR_FACTOR != 1:
        build = new_opt._BaseOptimizer._build_learning_rate

        def _build_learning_rate(self, learning_rate):
            if isinstance(learning_rate, tf.keras.optimizers.schedules.LearningRateSchedule):
                FLAGS.add("learning-rate schedule (reference not scaled)")
            elif isinstance(learning_rate, (int, float)):
                learning_rate = learning_rate * LR_FACTOR
            return build(self, learning_rate)

        for cls in (new_opt._BaseOptimizer, new_opt.Optimizer):
            if "_build_learning_rate" in cls.__dict__:
                cls._build_learning_rate = _build_learning_rate


def _patch_data():
    tf.data.Dataset.shuffle = lambda self, *a, **k: self
    batch = tf.data.Dataset.batch

    def _batch(self, batch_size, *args, **kwargs):
        if BATCH_FACTOR != 1 and _from_script():
            batch_size = batch_size * BATCH_FACTOR
        return batch(self, batch_size, *args, **kwargs)

    tf.data.Dataset.batch = _batch
    fit = tf.keras.Model.fit

    def _fit(self, x=None, y=None, batch_size=None, *args, **kwargs):
        kwargs["shuffle"] = False
        if BATCH_FACTOR != 1 and _from_script() and not isinstance(x, tf.data.Dataset):
            batch_size = (batch_size or 32) * BATCH_FACTOR
        return fit(self, x, y, batch_size, *args, **kwargs)

    tf.keras.Model.fit = _fit

    # Keras' dataset builders batch by themselves (32 unless told): their batch is scaled too.
    for module in (tf.keras.utils, tf.keras.preprocessing):
        for name in BUILDERS:
            if hasattr(module, name):
                setattr(module, name, _scaled_builder(getattr(module, name), BUILDERS[name]))
    # So do tf.data's record readers (batch_size is their second positional argument).
    for name in READERS:
        setattr(tf.data.experimental, name, _scaled_reader(getattr(tf.data.experimental, name)))


BUILDERS = {"image_dataset_from_directory": 32, "text_dataset_from_directory": 32,
            "audio_dataset_from_directory": 32, "timeseries_dataset_from_array": 128}


def _scaled_builder(builder, default):
    def scaled(*args, **kwargs):
        if BATCH_FACTOR != 1 and _from_script() and kwargs.get("batch_size", default) is not None:
            kwargs["batch_size"] = kwargs.get("batch_size", default) * BATCH_FACTOR
        kwargs.setdefault("shuffle", False)
        return builder(*args, **kwargs)
    return scaled


READERS = ("make_csv_dataset", "make_batched_features_dataset")


def _scaled_reader(reader):
    def scaled(*args, **kwargs):
        if BATCH_FACTOR != 1 and _from_script():
            if len(args) > 1:
                args = (args[0], args[1] * BATCH_FACTOR) + tuple(args[2:])
            else:
                kwargs["batch_size"] = kwargs["batch_size"] * BATCH_FACTOR
        return reader(*args, **kwargs)
    return scaled


def _patch_layers():
    dropout_init = tf.keras.layers.Dropout.__init__

    def _dropout(self, rate, *args, **kwargs):
        dropout_init(self, 0.0, *args, **kwargs)

    tf.keras.layers.Dropout.__init__ = _dropout
    layer_init = tf.keras.layers.Layer.__init__

    def _layer(self, *args, **kwargs):
        layer_init(self, *args, **kwargs)
        name = type(self).__name__
        if name.startswith("Random") or name in ("GaussianNoise", "GaussianDropout"):
            FLAGS.add(f"random layer {name}")
        if "BatchNormalization" in name:
            FLAGS.add("batch normalization (per-worker statistics)")

    tf.keras.layers.Layer.__init__ = _layer


RANDOM_OPS = ("normal", "uniform", "truncated_normal", "shuffle", "categorical")


def _patch_random():
    """Random numbers drawn in the script itself (GAN noise, label noise): one process and two
    draw different ones, so the first steps cannot be compared."""
    def flagged(name, op):
        def draw(*args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename
            if caller == SCRIPT["path"] or "__autograph_generated" in caller:
                FLAGS.add(f"random numbers drawn in the script (tf.random.{name})")
            return op(*args, **kwargs)
        return draw

    for name in RANDOM_OPS:
        setattr(tf.random, name, flagged(name, getattr(tf.random, name)))
    # NumPy shuffles of the data: a conversion draws them from a generator seeded 1337 on every
    # worker (tables.SEED_FOR_SHARDS); the reference draws its order from the same one.
    same = np.random.RandomState(1337)
    np.random.permutation, np.random.shuffle = same.permutation, same.shuffle


def install(script_path: str) -> None:
    """Called by the shim before the script runs (only when the harness asked for the probe)."""
    SCRIPT["path"] = script_path
    tf.keras.utils.set_random_seed(1234)
    _patch_optimizer()
    _patch_random()
    _patch_data()
    _patch_layers()
