"""The question ranker evaluated without LightGBM (knowledge_base/qa/trees.py) scores exactly as
LightGBM's own ``Booster.predict`` does, bit for bit: for the shipped ranker.txt and for models
fitted here with every kind of split LightGBM writes (NaN and zero as missing, categories,
one-leaf trees, trees too wide for the bit-mask path, random forests), on generated feature
matrices that hit the thresholds exactly, one step either side, NaN, zeros, tiny and huge
values. A model it cannot reproduce is refused, never approximated."""
from functools import lru_cache

import lightgbm
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from knowledge_base.qa import questions, trees

SPECIAL = [0.0, -0.0, 1e-36, -1e-36, 1e-35, 2e-35, np.nan, np.inf, -np.inf, 1e300, -1e300,
           -1.0, 0.5, 2.0 ** 31, -2.0 ** 31 - 5, 3.0, 7.9, 40.0]


def _fit(params: dict, x: np.ndarray, y: np.ndarray, rounds: int = 8, **data) -> str:
    """A model fitted here, as the text LightGBM saves."""
    params = {"verbose": -1, "min_data_in_leaf": 2, "min_data_per_group": 2,
              "cat_smooth": 1, "num_threads": 1, "seed": 1, **params}
    booster = lightgbm.train(params, lightgbm.Dataset(x, label=y, **data),
                             num_boost_round=rounds)
    return booster.model_to_string()


@lru_cache(maxsize=None)
def _models() -> dict[str, str]:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(300, 5))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 3] = rng.integers(0, 40, 300)          # a categorical feature
    x[rng.random(300) < 0.2, 4] = 0.0
    clean = np.nan_to_num(x)
    y = clean[:, 0] * 2 + clean[:, 1] + (x[:, 3] % 3 == 0) + rng.normal(size=300) * 0.1
    rank = np.clip(np.round(y - y.min()), 0, 4).astype(int)
    group = [30] * 10
    return {
        "shipped": questions.RANKER.read_text(),
        "lambdarank, NaN missing": _fit({"objective": "lambdarank"}, x, rank, group=group),
        "zero as missing": _fit({"objective": "regression", "zero_as_missing": True}, x, y),
        "categorical": _fit({"objective": "regression", "max_cat_to_onehot": 1},
                            x, y, categorical_feature=[3]),
        "one-hot categorical": _fit({"objective": "regression", "max_cat_to_onehot": 64},
                                    x, y, categorical_feature=[3]),
        "wide trees (walked)": _fit({"objective": "regression", "num_leaves": 90,
                                     "min_data_in_leaf": 1}, x, y, rounds=3),
        "one-leaf trees": _fit({"objective": "regression", "min_data_in_leaf": 200}, x, y),
        "random forest": _fit({"objective": "regression", "boosting": "rf",
                               "bagging_fraction": 0.7, "bagging_freq": 1}, x, y),
    }


def _thresholds(text: str) -> list[float]:
    forest = trees.Forest.parse(text)
    cuts = np.unique(forest.threshold[(forest.decision & trees.CATEGORICAL) == 0])
    return [float(v) for c in cuts for v in (c, np.nextafter(c, -np.inf),
                                             np.nextafter(c, np.inf))]


@lru_cache(maxsize=None)
def _pair(name: str) -> tuple[trees.Forest, lightgbm.Booster, list[float]]:
    text = _models()[name]
    return (trees.Forest.parse(text), lightgbm.Booster(model_str=text),
            _thresholds(text) + SPECIAL)


def _matrix(name: str):
    forest, _, values = _pair(name)
    width = len(forest.feature_names)
    cell = st.one_of(st.sampled_from(values), st.floats(-5, 5), st.integers(-2, 45))
    return arrays(np.float64, st.tuples(st.integers(1, 40), st.just(width)),
                  elements=cell.map(float))


@pytest.mark.parametrize("name", [
    "shipped", "lambdarank, NaN missing", "zero as missing", "categorical",
    "one-hot categorical", "wide trees (walked)", "one-leaf trees", "random forest"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scores_are_lightgbms_own(name, data):
    forest, booster, _ = _pair(name)
    x = data.draw(_matrix(name))
    ours, theirs = forest.predict(x), booster.predict(x, num_threads=1)
    assert ours.tobytes() == theirs.tobytes(), np.flatnonzero(ours != theirs)


def test_the_fitted_models_exercise_every_path():
    """The models above really hold what their names say (else the test above proves less)."""
    parsed = {n: trees.Forest.parse(t) for n, t in _models().items()}
    missing = {n: set(((f.decision >> 2) & 3).tolist()) for n, f in parsed.items()}
    assert trees.MISSING_NAN in missing["lambdarank, NaN missing"]
    assert trees.MISSING_ZERO in missing["zero as missing"]
    assert (parsed["categorical"].decision & trees.CATEGORICAL).any()
    assert len(parsed["categorical"].cat_bits)
    assert parsed["wide trees (walked)"]._layout is None
    assert parsed["shipped"]._layout is not None
    assert (parsed["one-leaf trees"].roots >= len(parsed["one-leaf trees"].feature)).any()
    assert parsed["random forest"].average


def test_the_comparison_can_fail():
    """A forest read from a model with one threshold moved disagrees with LightGBM's."""
    forest, booster, values = _pair("shipped")
    text = _models()["shipped"]
    line = next(ln for ln in text.splitlines() if ln.startswith("threshold="))
    first = line.split("=")[1].split()[0]
    moved = trees.Forest.parse(text.replace(line, line.replace(first, "-1e9", 1), 1))
    x = np.array([[v] * len(forest.feature_names) for v in values])
    assert not np.array_equal(moved.predict(x), booster.predict(x, num_threads=1))


@pytest.mark.parametrize("params, says", [
    ({"objective": "binary"}, "objective 'binary'"),
    ({"objective": "regression", "linear_tree": True}, "linear trees"),
    ({"objective": "multiclass", "num_class": 3}, "objective 'multiclass'"),
])
def test_models_it_cannot_reproduce_are_refused(params, says):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = (x[:, 0] > 0).astype(int) + (params.get("num_class") == 3) * (x[:, 1] > 1)
    with pytest.raises(trees.ModelFormatError, match=says):
        trees.Forest.parse(_fit(params, x, y, rounds=2))
    with pytest.raises(trees.ModelFormatError, match="not a LightGBM"):
        trees.Forest.parse("hello\nworld\n")
