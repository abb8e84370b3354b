"""Issue 29: what the converter finds by following data, checked on generated scripts.

- Files only the chief writes: a read is found through whatever names, aliases, parameters
  and path building the script uses (hypothesis renames them all: the findings must not move),
  and a read of anything else is left alone.
- Loss objects wherever they live (a layer, an object, a helper), the distributed batch used
  outside strategy.run, Horovod's broadcast of lookup layers, Keras 3's limits, and
  suggestions that point at another target only when that conversion goes through.
"""
from __future__ import annotations

import keyword
import re
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from converters.script import ConversionError, convert

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
CASES = Path(__file__).resolve().parents[1] / "convert_cases"
TARGETS = ("horovod", "tf-distribute")
SYNC = {"horovod": "_hvd_sync_from_rank0", "tf-distribute": "_tfd_sync_from_chief"}
CHIEF = {"horovod": "if hvd.rank() == 0:", "tf-distribute": "if _is_chief():"}

RESERVED = {"tf", "os", "np", "shutil", "hvd", "strategy", "model", "x", "y", "keras", "path",
            "print", "sorted", "len", "max", "open", "str", "list", "dict", "set", "range"}
names = st.from_regex(r"[a-z][a-z0-9_]{1,10}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in RESERVED and not n.startswith(("_hvd", "_tfd")))
folders = st.from_regex(r"[a-z]{2,8}", fullmatch=True)

TEMPLATE = '''import numpy as np
import os as {os}
import shutil as {sh}
import tensorflow as {tf}

{ckdir} = "./{ck_text}"
{logdir} = {os}.path.join("{log_text}", "fit")
{other} = "{other_text}/table.csv"
x = np.ones((32, 4), "float32")
y = np.ones((32, 1), "float32")
model = {tf}.keras.Sequential([{tf}.keras.layers.Dense(1)])
model.compile(optimizer={tf}.keras.optimizers.SGD(0.1), loss="mse")


def {newest}({param}):
    return sorted({os}.listdir({param}))


model.fit(x, y, batch_size=8, callbacks=[
    {tf}.keras.callbacks.ModelCheckpoint({ckdir} + "/w-{{epoch}}.h5"),
    {tf}.keras.callbacks.TensorBoard(log_dir={logdir})])
{files} = {newest}({ckdir})
{sh}.copytree({logdir}, "/tmp/elsewhere")
{size} = {os}.path.getsize({other})
'''


def _shape(result):
    return sorted((f.rule_id, f.severity) for f in result.findings)


@lru_cache(maxsize=None)
def _reference(target):
    return _shape(convert(TEMPLATE.format(
        os="os", sh="shutil", tf="tf", ckdir="checkpoint_dir", logdir="log_dir", other="table",
        files="files", newest="newest", param="folder", size="size", ck_text="ckpt",
        log_text="logs", other_text="data"), target, "ref.py"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(names, min_size=8, max_size=8, unique=True),
       st.lists(folders, min_size=3, max_size=3, unique=True), st.sampled_from(TARGETS))
def test_reads_of_the_chiefs_files_are_found_whatever_the_names(ids, dirs, target):
    os_, sh, tf_, ckdir, logdir, other, files, newest = ids
    param, size = newest + "_dir", files + "_size"
    if any(a.startswith(b) or b.startswith(a) for a in dirs for b in dirs if a != b):
        return  # one folder inside another: they would overlap
    fill = dict(os=os_, sh=sh, tf=tf_, ckdir=ckdir, logdir=logdir, other=other, files=files,
                newest=newest, param=param, size=size, ck_text=dirs[0], log_text=dirs[1],
                other_text=dirs[2])
    result = convert(TEMPLATE.format(**fill), target, "gen.py")
    assert _shape(result) == _reference(target)
    code = result.code
    sync = SYNC[target]
    # The listing inside the helper waits for the chief's folder (through the parameter) ...
    assert f"    {sync}({param})\n    return sorted({os_}.listdir({param}))" in code
    # ... the log copy runs on the chief only, like the TensorBoard write it reads ...
    assert f"{CHIEF[target]}\n    {sh}.copytree({logdir}" in code
    # ... and a file nobody wrote during training is read as it was, without a barrier.
    assert f"{sync}({other})" not in code and f"{size} = {os_}.path.getsize({other})" in code
    called = set(re.findall(rf"{sync}\(([^)]*)\)", code)) - {"path", "p"}  # the helper's own
    assert called == {param}


@pytest.mark.parametrize("target", TARGETS)
def test_a_read_before_the_write_waits_for_nothing(target):
    source = ('import os\nimport tensorflow as tf\nckpt = "ckpt"\nprint(os.listdir(ckpt))\n'
              'model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n'
              'model.compile(optimizer="sgd", loss="mse")\n'
              'model.fit(x, y, callbacks=[tf.keras.callbacks.ModelCheckpoint(ckpt + "/w.h5")])\n')
    code = convert(source, target, "s.py").code
    assert SYNC[target] not in code and "    print(os.listdir(ckpt))" not in code


@pytest.mark.parametrize("target", TARGETS)
def test_shared_data_files_are_written_by_the_chief_and_read_after_it(target):
    result = convert((SCRIPTS / "tfrecord_shards_fit.py").read_text(), target, "t.py")
    code = result.code
    assert f"{CHIEF[target]}\n        with tf.io.TFRecordWriter(" in code
    assert code.index(f'{SYNC[target]}(f"{{tfrecords_dir}}/*.tfrec")') < code.index("files = sorted(")


def test_a_loss_object_in_an_endpoint_layer_is_its_replicas_mean():
    result = convert((SCRIPTS / "endpoint_layer_loss.py").read_text(), "tf-distribute", "e.py")
    assert "loss = _tfd_mean_loss(self.loss_fn, targets, logits, sample_weights)" in result.code
    assert "TFD048" in {f.rule_id for f in result.findings}


def test_a_loss_object_kept_on_an_object_is_divided_by_the_replicas_once():
    result = convert((SCRIPTS / "loss_on_trainer_object.py").read_text(), "tf-distribute", "t.py")
    code = result.code
    assert "return _tfd_mean_loss(self.loss_object, labels, logits)" in code
    assert code.split("def train_step")[1].count("/ strategy.num_replicas_in_sync") == 1
    # its reduction stays the default: compile() uses the same object
    assert "SparseCategoricalCrossentropy(from_logits=True)\n" in code


def test_a_loss_object_shared_by_fit_and_a_loop_is_fixed_not_warned():
    source = '''import tensorflow as tf
loss_fn = tf.keras.losses.MeanSquaredError()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
model.compile(optimizer=optimizer, loss=loss_fn)
model.fit(x, y, batch_size=8)


@tf.function
def step(a, b):
    with tf.GradientTape() as tape:
        loss = loss_fn(b, model(a))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


for a, b in ds:
    step(a, b)
'''
    result = convert(source, "tf-distribute", "s.py")
    assert "loss = _tfd_mean_loss(loss_fn, b, model(a))" in result.code
    assert "loss = tf.reduce_mean(loss) / strategy.num_replicas_in_sync" in result.code
    assert "loss_fn = tf.keras.losses.MeanSquaredError()\n" in result.code
    assert not [f for f in result.findings if f.severity == "warning" and f.rule_id == "TFD045"]


def test_step_methods_of_a_trainer_run_through_strategy_run_with_the_regularisation_once():
    code = convert((SCRIPTS / "trainer_methods_loop.py").read_text(), "tf-distribute", "t.py").code
    assert "strategy.run(self.train_step, args=(image, label))" in code
    assert "strategy.run(self.test_step, args=(test_image, test_label))" in code
    step = code.split("def train_step")[1].split("def test_step")[0]
    assert step.index("loss += sum(self.model.losses)") < step.index(
        "loss = tf.reduce_mean(loss) / strategy.num_replicas_in_sync")
    assert "    trainer = Train(2, model)" in code  # built in the strategy's scope


def test_the_distributed_batch_outside_strategy_run_is_this_workers_part():
    code = convert((SCRIPTS / "log_model_on_batch.py").read_text(), "tf-distribute", "l.py").code
    assert "strategy.run(run_optimization, args=(batch_x, batch_y))" in code
    assert "pred = neural_net(_tfd_local(batch_x), training=False)" in code
    assert "def _tfd_local(value):" in code


def test_horovod_broadcasts_only_variables():
    loop = convert((SCRIPTS / "lookup_layer_custom_loop.py").read_text(), "horovod", "l.py").code
    assert "hvd.broadcast_variables(_hvd_variables(model.variables), root_rank=0)" in loop
    fit = convert((SCRIPTS / "endpoint_layer_loss.py").read_text(), "horovod", "e.py").code
    assert "callbacks=[_HvdBroadcastVariables()" in fit
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback" not in fit


def test_keras3_limits_are_refusals_with_the_upstream_issue_and_the_runtime():
    source = (SCRIPTS / "keras3_plain_import_fit.py").read_text()
    with pytest.raises(ConversionError) as tfd:
        convert(source, "tf-distribute", "k.py")
    assert tfd.value.rule_id == "TFD006" and "keras-team/keras#20585" in str(tfd.value)
    with pytest.raises(ConversionError) as hvd:
        convert(source, "horovod", "k.py")
    assert hvd.value.rule_id == "HVD002" and "TF 2.15.1, Keras 2.15" in str(hvd.value)
    # neither offers the other target: both refuse it
    assert "Convert with --to" not in str(tfd.value) + str(hvd.value)
    with pytest.raises(ConversionError) as inline:
        convert((SCRIPTS / "keras3_optimizer_apply.py").read_text(), "tf-distribute", "k.py")
    assert inline.value.rule_id == "TFD053"


def _inputs():
    return [pytest.param(path, target, id=f"{path.name}-{target}")
            for path in sorted([*SCRIPTS.glob("*.py"), *CASES.glob("*.py")]) if ".out." not in path.name
            for target in TARGETS]


@pytest.mark.parametrize("path, target", _inputs())
def test_a_suggested_target_is_one_the_converter_carries_through(path, target):
    try:
        convert(path.read_bytes(), target, path.name)
        return
    except ConversionError as e:
        message = str(e)
    for other in TARGETS:
        if f"--to {other}" in message and other != target:
            offered = f"Convert with --to {other}" in message
            try:
                convert(path.read_bytes(), other, path.name)
                went_through = True
            except ConversionError:
                went_through = False
            assert offered == went_through, message


ENDPOINT = '''import tensorflow as tf
from tensorflow import keras as {k}


class {layer}({k}.layers.Layer):
    def __init__(self):
        super().__init__()
        self.{attr} = {k}.losses.BinaryCrossentropy(from_logits=True)

    def call(self, {t}, {p}):
        self.add_loss(self.{attr}({t}, {p}))
        return tf.nn.sigmoid({p})


{inp} = {k}.Input(shape=(3,))
{tin} = {k}.Input(shape=(1,))
{model} = {k}.Model([{inp}, {tin}], {layer}()({tin}, {k}.layers.Dense(1)({inp})))
{model}.compile(optimizer="sgd")
{model}.fit({{"a": x, "b": y}}, batch_size=4)
'''


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(names, min_size=7, max_size=7, unique=True))
def test_a_loss_in_a_layer_is_found_whatever_the_names(ids):
    k, attr, t, p, inp, tin, model = ids
    layer = attr.capitalize() + "Endpoint"
    result = convert(ENDPOINT.format(k=k, layer=layer, attr=attr, t=t, p=p, inp=inp, tin=tin,
                                     model=model), "tf-distribute", "e.py")
    assert f"self.add_loss(_tfd_mean_loss(self.{attr}, {t}, {p}))" in result.code
    assert [f.rule_id for f in result.findings].count("TFD048") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_other_files_in_the_chiefs_folder_are_not_its_files(target):
    source = ('import tensorflow as tf\ndata_dir = "data"\n'
              'model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n'
              'model.compile(optimizer="sgd", loss="mse")\n'
              'model.fit(x, y, callbacks=[tf.keras.callbacks.ModelCheckpoint(data_dir + "/w-{epoch}.h5")])\n'
              'images = tf.data.Dataset.list_files(data_dir + "/*.png")\n'
              'weights = tf.io.gfile.glob(f"{data_dir}/w-*.h5")\n')
    code = convert(source, target, "s.py").code
    assert f'{SYNC[target]}(data_dir + "/*.png")' not in code
    assert f'{SYNC[target]}(f"{{data_dir}}/w-*.h5")\nweights =' in code


def test_a_loss_object_made_by_a_factory_is_a_loss_object():
    source = '''import tensorflow as tf
def make_loss():
    return tf.keras.losses.MeanSquaredError()
loss_fn = make_loss()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
@tf.function
def step(a, b):
    with tf.GradientTape() as tape:
        loss = loss_fn(b, model(a))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
for a, b in ds:
    step(a, b)
'''
    code = convert(source, "tf-distribute", "f.py").code
    assert "MeanSquaredError(reduction=tf.keras.losses.Reduction.NONE)" in code
    assert "loss = tf.nn.compute_average_loss(loss)" in code
