"""Evaluation metrics on labelled data, as data: each metric names the task it needs and how
it is computed from predictions and labels. Numpy only (the bot checks names, the runner
computes).

Predictions of shape (N, C) with C > 1 are class scores (probabilities or logits: the argmax is
the same); (N,) or (N, 1) are a single score (binary classification or regression).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from converters.model.errors import BadInput, BadOption

CLASSIFICATION, REGRESSION, PAIR = "classification", "regression", "pair"


@dataclass(frozen=True)
class Metric:
    name: str
    task: str          # what the predictions must be: classification | regression | pair
    help: str
    fn: Callable[[np.ndarray, np.ndarray], float] | None = None


def _classes(pred: np.ndarray) -> np.ndarray:
    if pred.ndim == 2 and pred.shape[1] > 1:
        return pred.argmax(axis=1)
    flat = pred.reshape(len(pred))
    # A single score: a probability is cut at 0.5, a logit (values outside [0, 1]) at 0.
    cut = 0.5 if flat.size and flat.min() >= 0 and flat.max() <= 1 else 0.0
    return (flat > cut).astype(np.int64)


def _accuracy(pred, labels):
    return float(np.mean(_classes(pred) == labels))


def _top_k(k: int):
    def fn(pred, labels):
        top = np.argsort(-pred, axis=1)[:, :k]
        return float(np.mean((top == labels[:, None]).any(axis=1)))
    return fn


def _mae(pred, y):
    return float(np.mean(np.abs(pred - y)))


def _mse(pred, y):
    return float(np.mean((pred - y) ** 2))


def _rmse(pred, y):
    return float(np.sqrt(_mse(pred, y)))


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("accuracy", CLASSIFICATION, "fraction of rows whose predicted class is the label",
           _accuracy),
    Metric("mae", REGRESSION, "mean absolute error", _mae),
    Metric("mse", REGRESSION, "mean squared error", _mse),
    Metric("rmse", REGRESSION, "root mean squared error", _rmse),
    Metric("agreement", PAIR, "how often the converted model predicts what the original "
           "predicts (needs --against)"),
)}
ALIASES = {"acc": "accuracy", "top1": "accuracy", "top_1": "accuracy",
           "mean_absolute_error": "mae", "mean_squared_error": "mse",
           "root_mean_squared_error": "rmse", "top_k_accuracy": "top5", "top_k": "top5"}
TOP_K = re.compile(r"top[-_]?(\d+)(?:[-_]?acc(?:uracy)?)?")
KNOWN = sorted(METRICS) + ["topK (e.g. top5)"]


def parse(text: str | list[str] | None) -> list[str]:
    """``accuracy,top5,mae`` -> canonical names; unknown names are an error naming the known."""
    if not text:
        return []
    parts = text if isinstance(text, list) else str(text).split(",")
    out: list[str] = []
    for part in parts:
        raw = part.strip()
        if not raw:
            continue
        key = ALIASES.get(raw.lower().replace("-", "_"), raw.lower())
        m = TOP_K.fullmatch(key)
        if m:
            k = int(m.group(1))
            if k < 1:
                raise BadOption(f"--metrics: {raw!r}: k must be at least 1")
            key = "accuracy" if k == 1 else f"top{k}"
        elif key not in METRICS:
            raise BadOption(f"--metrics: unknown metric {raw!r}; known: {', '.join(KNOWN)}")
        if key not in out:
            out.append(key)
    return out


def get(name: str) -> Metric:
    m = TOP_K.fullmatch(name)
    if m:
        k = int(m.group(1))
        return Metric(name, CLASSIFICATION, f"label among the {k} highest scores", _top_k(k))
    return METRICS[name]


def task_of(pred: np.ndarray) -> str:
    return CLASSIFICATION if pred.ndim == 2 and pred.shape[1] > 1 else REGRESSION


def default_metrics(pred: np.ndarray) -> list[str]:
    if task_of(pred) == CLASSIFICATION:
        return ["accuracy"] + (["top5"] if pred.shape[1] > 5 else [])
    return ["mae", "mse"]


def class_labels(labels: np.ndarray, pred: np.ndarray, what: str) -> np.ndarray:
    """Labels as class ids: integers (N,) or (N, 1), or one-hot (N, C) rows."""
    n_classes = pred.shape[1] if pred.ndim == 2 and pred.shape[1] > 1 else 2
    if labels.ndim == 2 and labels.shape[1] == n_classes and n_classes > 1 and labels.shape[1] > 1:
        return labels.argmax(axis=1)
    if labels.ndim > 2 or (labels.ndim == 2 and labels.shape[1] != 1):
        raise BadInput(f"{what}: labels have shape {list(labels.shape)}; for {n_classes} classes "
                       f"they must be class ids (N,) or one-hot rows (N, {n_classes})")
    flat = labels.reshape(len(labels))
    if flat.dtype.kind not in "biuf" or not np.all(np.isfinite(flat)) or \
            not np.all(flat == np.round(flat)):
        raise BadInput(f"{what}: labels are not whole numbers; classification metrics need "
                       "class ids 0..C-1 (for regression ask for --metrics mae,mse)")
    flat = flat.astype(np.int64)
    bad = flat[(flat < 0) | (flat >= n_classes)]
    if bad.size:
        raise BadInput(f"{what}: label {int(bad[0])} is not a class of this model, whose output "
                       f"has {n_classes} classes (0..{n_classes - 1})")
    return flat


def regression_targets(labels: np.ndarray, pred: np.ndarray, what: str) -> np.ndarray:
    if labels.size != pred.size:
        raise BadInput(f"{what}: labels have shape {list(labels.shape)} but the predictions have "
                       f"shape {list(pred.shape)}; regression metrics compare them value by value")
    if labels.dtype.kind not in "biuf":
        raise BadInput(f"{what}: labels are {labels.dtype}, regression metrics need numbers")
    return labels.reshape(pred.shape).astype(np.float64)


def compute(names: list[str], pred: np.ndarray, labels: np.ndarray, what: str) -> dict[str, float]:
    """Each metric of ``names`` (``agreement`` aside) for one model's predictions."""
    pred = np.asarray(pred, dtype=np.float64)
    out: dict[str, float] = {}
    for name in names:
        metric = get(name)
        if metric.task == PAIR:
            continue
        if metric.task == CLASSIFICATION:
            if name != "accuracy" and task_of(pred) != CLASSIFICATION:
                raise BadInput(f"{what}: {name} needs class scores (N, C) but the output has shape "
                               f"{list(pred.shape)}")
            out[name] = metric.fn(pred, class_labels(labels, pred, what))
        else:
            out[name] = metric.fn(pred, regression_targets(labels, pred, what))
    return out


def agreement(a: np.ndarray, b: np.ndarray, atol: float = 1e-4, rtol: float = 1e-3) -> dict:
    """How alike two models' predictions are: same predicted class (classification) or, value
    by value, within tolerance; and the largest difference."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise BadInput(f"the two models' outputs differ in shape: {list(a.shape)} vs "
                       f"{list(b.shape)}")
    diff = np.abs(a - b)
    close = (diff <= atol + rtol * np.abs(a)).reshape(len(a), -1).all(axis=1)
    out = {"max_abs_diff": float(diff.max(initial=0.0)),
           "rows_within_tolerance": float(close.mean()) if len(a) else 1.0,
           "tolerance": {"atol": atol, "rtol": rtol}}
    if task_of(a) == CLASSIFICATION:
        same = _classes(a) == _classes(b)
        out["agreement"] = float(same.mean()) if len(a) else 1.0
        out["disagreeing_rows"] = int((~same).sum())
    else:
        out["agreement"] = out["rows_within_tolerance"]
        out["disagreeing_rows"] = int((~close).sum())
    return out
