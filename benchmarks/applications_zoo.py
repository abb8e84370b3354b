"""Builds Keras Applications models as SavedModels, for benchmarks/models.py --zoo applications
and the slow tests. Runs in the runner env (nothing is downloaded: ``weights=None``):

    .venv-runner/bin/python benchmarks/applications_zoo.py [--untrained] [--steps N] OUT_DIR NAME[:SIZE] ...

Each model is then trained briefly on a synthetic image task, because a network with random
weights is chaotic: 1 % of noise on its input already changes its top class on about half
the inputs (measured on MobileNetV2), so no quantised model could agree with it, however
good the quantisation. Training makes it behave like a real classifier, with margins
between classes. The task: CLASSES smooth random colour patterns (8x8 noise upsampled), each
sample one pattern with random contrast plus pixel noise, so some samples are ambiguous.
Writes OUT_DIR/NAME (SavedModel), OUT_DIR/NAME.calibration.npz (INT8 calibration rows),
OUT_DIR/NAME.heldout.npz (other rows, never used for calibration) and its labels
(NAME.heldout_labels.npy).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

# name -> (constructor in tf.keras.applications, default input size). Sizes are small so the
# whole family converts and benchmarks on a 2-core machine; InceptionV3 and Xception need
# at least 75 px, NASNetMobile's reduction cells want a multiple of 32.
MODELS = {
    "MobileNetV2": 96, "MobileNetV3Small": 96, "ResNet50": 96, "EfficientNetB0": 96,
    "DenseNet121": 96, "ConvNeXtTiny": 64, "InceptionV3": 96, "Xception": 96,
    "NASNetMobile": 96, "VGG16": 64, "RegNetX002": 96,
}
SEED = 7
CLASSES = 10
STEPS = 35
BATCH = 32


def set_batchnorm_statistics(model: tf.keras.Model, x: np.ndarray) -> int:
    """Every BatchNormalization's moving statistics set to those of ``x`` (momentum 0 for one
    training-mode pass): a few dozen steps leave the moving averages near their initial
    values, which would make inference mode a different (collapsed) network."""
    bns = [layer for layer in model.submodules
           if isinstance(layer, tf.keras.layers.BatchNormalization)]
    saved = [bn.momentum for bn in bns]
    for bn in bns:
        bn.momentum = 0.0
    model(x, training=True)
    for bn, m in zip(bns, saved):
        bn.momentum = m
    return len(bns)


def task_samples(n: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    protos = np.random.default_rng(SEED).standard_normal((CLASSES, 8, 8, 3)).astype("float32")
    protos = tf.image.resize(protos, (size, size), "bicubic").numpy()
    protos /= protos.std(axis=(1, 2, 3), keepdims=True)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, n)
    contrast = rng.uniform(0.5, 1.5, (n, 1, 1, 1)).astype("float32")
    noise = 0.7 * rng.standard_normal((n, size, size, 3)).astype("float32")
    return (protos[labels] * contrast + noise).astype("float32"), labels


def build(name: str, size: int, train: bool = True,
          steps: int = STEPS) -> tuple[tf.keras.Model, float | None]:
    tf.keras.utils.set_random_seed(SEED)
    model = getattr(tf.keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                                 classes=CLASSES)
    if not train:
        return model, None
    model.compile(tf.keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    x, y = task_samples(steps * BATCH, size, seed=1)
    hist = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    set_batchnorm_statistics(model, x[:128])
    print(f"{name}: training accuracy {hist.history['accuracy'][-1]:.3f}", flush=True)
    xv, yv = task_samples(256, size, seed=2)
    return model, float(model.evaluate(xv, yv, verbose=0)[1])


def main(out: Path, names: list[str], train: bool = True, steps: int = STEPS) -> None:
    """``train=False`` (--untrained): the SavedModel only, for conversion tests."""
    for item in names:
        name, _, size = item.partition(":")
        size = int(size or MODELS[name])
        model, accuracy = build(name, size, train, steps)
        tf.saved_model.save(model, str(out / name))
        if not train:
            print(f"{name} params={model.count_params()} untrained", flush=True)
            continue
        x, _ = task_samples(128, size, seed=3)
        np.savez(out / f"{name}.calibration.npz", x)
        x, y = task_samples(256, size, seed=4)
        np.savez(out / f"{name}.heldout.npz", x)
        np.save(out / f"{name}.heldout_labels.npy", y)
        print(f"{name} params={model.count_params()} accuracy={accuracy:.3f} size={size} "
              f"steps={steps}", flush=True)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--untrained", action="store_true")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("out")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    main(Path(a.out), a.names or list(MODELS), train=not a.untrained, steps=a.steps)
