"""LightGBM's text model evaluated with NumPy: the question ranker without LightGBM at run time.

LightGBM is the ranker's *training* tool (``tools/train_ranking.py``); importing it costs a
shell's question 0.3 s of CPU (it pulls SciPy, pandas' helpers and more) to walk 300 small
trees. This module reads the file LightGBM writes (``Booster.save_model``) and walks the trees
for all candidates and all trees at once, reproducing LightGBM's own prediction exactly, bit
for bit, as ``tests/knowledge_base/test_qa_trees.py`` checks against ``Booster.predict`` on
generated matrices (NaN, zeros, values on the thresholds, categories) for the shipped model and
for models fitted in the test:

- a feature within ``1e-35`` (as float32) of zero is zero (LightGBM's dense rows skip such
  values);
- numerical split: a missing value goes the default way (missing type Zero: near zero; NaN:
  NaN), otherwise NaN is 0.0 and ``value <= threshold`` goes left;
- categorical split: the value cast to C ``int`` (NaN and out-of-range values become negative)
  goes left when its bit is set in the node's bitset;
- the trees' outputs are summed one after another in file order (a pairwise sum rounds
  differently), then averaged for random forests.

Objectives whose prediction transforms the sum (binary, multiclass, poisson...) and linear
trees are refused when the file is read, never answered approximately.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float literal widened)
CATEGORICAL, DEFAULT_LEFT = 1, 2
MISSING_ZERO, MISSING_NAN = 1, 2
# Objectives whose predict() is the raw sum of the trees (ConvertOutput is the identity).
RAW_OBJECTIVES = frozenset({"lambdarank", "rank_xendcg", "regression", "regression_l2",
                            "regression_l1", "huber", "fair", "quantile", "mape"})


class ModelFormatError(ValueError):
    """A model file this evaluator cannot reproduce exactly (said why, never approximated)."""


@dataclass(frozen=True)
class Forest:
    """Every tree's nodes in flat arrays: internal nodes 0..I-1 (all trees, one after another),
    then leaves I..I+L-1, each leaf its own child, so a walk of ``depth`` steps from the roots
    ends on every tree's leaf whatever its depth."""
    feature_names: tuple[str, ...]
    roots: np.ndarray        # (T,) each tree's first node
    feature: np.ndarray      # (I,) the feature an internal node splits on
    threshold: np.ndarray    # (I,) float64 (for a categorical node: its bitset's index)
    decision: np.ndarray     # (I,) decision-type bits
    cat_start: np.ndarray    # (I,) a categorical node's bitset: offset into cat_bits ...
    cat_words: np.ndarray    # (I,) ... and its length in 32-bit words
    cat_bits: np.ndarray     # uint32
    left: np.ndarray         # (I + L,) child when the decision goes left (a leaf: itself)
    right: np.ndarray        # (I + L,)
    leaf_value: np.ndarray   # (L,) float64
    inner_tree: np.ndarray   # (I,) the tree an internal node belongs to
    leaf_tree: np.ndarray    # (L,) ... and a leaf
    depth: int               # the deepest leaf's depth
    average: bool            # random forest: the mean of the trees, not their sum

    @classmethod
    def read(cls, path: Path) -> "Forest":
        return cls.parse(path.read_text())

    @classmethod
    def parse(cls, text: str) -> "Forest":
        head, _, rest = text.partition("\nTree=")
        header = _keys(head)
        if "feature_names" not in header:
            raise ModelFormatError("not a LightGBM text model (no feature_names line)")
        objective = header.get("objective", "").split(" ")[0]
        if objective not in RAW_OBJECTIVES:
            raise ModelFormatError(f"objective {objective!r} transforms the trees' sum; this "
                                   f"evaluator reads {', '.join(sorted(RAW_OBJECTIVES))}")
        if int(header.get("num_tree_per_iteration", "1")) != 1:
            raise ModelFormatError("several trees per iteration (multiclass) are not read")
        body = rest.partition("\nend of trees")[0]
        trees = [_keys(block) for block in ("Tree=" + body).split("\nTree=") if block.strip()]
        if not trees:
            raise ModelFormatError("the model has no trees")
        return cls._flatten(tuple(header["feature_names"].split(" ")), trees,
                            "average_output" in header)

    @classmethod
    def _flatten(cls, names: tuple[str, ...], trees: list[dict], average: bool) -> "Forest":
        leaves = [int(t["num_leaves"]) for t in trees]
        n_inner = sum(n - 1 for n in leaves)
        inner_at = np.cumsum([0] + [n - 1 for n in leaves])   # each tree's first inner node
        leaf_at = n_inner + np.cumsum([0] + leaves)           # ... and its first leaf
        feature, decision = np.zeros(n_inner, np.int64), np.zeros(n_inner, np.int64)
        threshold = np.zeros(n_inner, np.float64)
        cat_start, cat_words = np.zeros(n_inner, np.int64), np.zeros(n_inner, np.int64)
        left = np.arange(n_inner + sum(leaves), dtype=np.int64)
        right = left.copy()
        values: list[float] = []
        bits: list[int] = []
        roots = np.zeros(len(trees), np.int64)
        for i, t in enumerate(trees):
            if t.get("is_linear", "0") != "0":
                raise ModelFormatError("linear trees (linear_tree=true) are not read")
            values += _floats(t["leaf_value"])
            if leaves[i] == 1:
                roots[i] = leaf_at[i]
                continue
            roots[i] = inner_at[i]
            at = slice(inner_at[i], inner_at[i + 1])
            feature[at] = _ints(t["split_feature"])
            threshold[at] = _floats(t["threshold"])
            decision[at] = _ints(t["decision_type"])
            for side, out in (("left_child", left), ("right_child", right)):
                child = np.array(_ints(t[side]), np.int64)
                out[at] = np.where(child >= 0, inner_at[i] + child, leaf_at[i] + ~child)
            if int(t.get("num_cat", "0")):
                bounds = np.array(_ints(t["cat_boundaries"]), np.int64) + len(bits)
                which = threshold[at].astype(np.int64)
                is_cat = (decision[at] & CATEGORICAL) > 0
                cat_start[at] = np.where(is_cat, bounds[np.where(is_cat, which, 0)], 0)
                cat_words[at] = np.where(is_cat, bounds[np.where(is_cat, which, 0) + 1]
                                         - bounds[np.where(is_cat, which, 0)], 0)
                bits += _ints(t["cat_threshold"])
        if len(values) != sum(leaves):
            raise ModelFormatError("leaf_value lengths disagree with num_leaves")
        forest = cls(names, roots, feature, threshold, decision, cat_start, cat_words,
                     np.array(bits, np.uint32), left, right, np.array(values, np.float64),
                     np.repeat(np.arange(len(trees)), [n - 1 for n in leaves]),
                     np.repeat(np.arange(len(trees)), leaves), 0, average)
        object.__setattr__(forest, "depth", forest._depth())
        return forest

    def _depth(self) -> int:
        """Steps from the roots to the deepest leaf (each node's depth settles in as many
        rounds as the trees are deep)."""
        inner = len(self.feature)
        depth = np.zeros(len(self.left), np.int64)
        depth[self.roots] = 0
        for _ in range(inner + 1):
            below = depth[:inner] + 1
            new = depth.copy()
            np.maximum.at(new, self.left[:inner], below)
            np.maximum.at(new, self.right[:inner], below)
            if np.array_equal(new, depth):
                return int(depth[inner:].max(initial=0))
            depth = new
        raise ModelFormatError("the trees' children form a cycle")

    ARRAYS = ("roots", "feature", "threshold", "decision", "cat_start", "cat_words", "cat_bits",
              "left", "right", "leaf_value", "inner_tree", "leaf_tree")

    def pack(self) -> dict:
        """The forest and what :meth:`predict` derives from it, as named arrays and plain
        values (knowledge_base/prepared.py keeps them beside the KB)."""
        out: dict = {f"ranker.{a}": getattr(self, a) for a in self.ARRAYS}
        out["ranker.values"] = [list(self.feature_names), self.depth, self.average,
                                self._layout is not None]
        if self._layout is not None:
            out.update(zip(("ranker.nodes", "ranker.masks", "ranker.trees", "ranker.by_position"),
                           self._layout))
        thresholds, position = self._ranks
        out["ranker.rank_features"] = list(thresholds)
        out["ranker.rank_thresholds"] = np.concatenate([[], *thresholds.values()])
        out["ranker.rank_counts"] = np.array([len(u) for u in thresholds.values()], np.int64)
        out["ranker.rank_position"] = position
        return out

    @classmethod
    def unpack(cls, packed: dict) -> "Forest":
        names, depth, average, has_layout = packed["ranker.values"]
        forest = cls(tuple(names), *(packed[f"ranker.{a}"] for a in cls.ARRAYS),
                     depth=depth, average=average)
        forest.__dict__["_layout"] = tuple(packed[f"ranker.{k}"] for k in (
            "nodes", "masks", "trees", "by_position")) if has_layout else None
        bounds = np.cumsum([0, *packed["ranker.rank_counts"].tolist()])
        forest.__dict__["_ranks"] = (
            {f: packed["ranker.rank_thresholds"][a:b] for f, a, b in zip(
                packed["ranker.rank_features"], bounds[:-1], bounds[1:])},
            packed["ranker.rank_position"])
        return forest

    def feature_name(self) -> list[str]:
        return list(self.feature_names)

    def feature_importance(self, importance_type: str = "split") -> np.ndarray:
        """How many splits use each feature (LightGBM's "split" importance)."""
        if importance_type != "split":
            raise ValueError("only the split counts are in the trees")
        return np.bincount(self.feature, minlength=len(self.feature_names))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """One score per row of ``x`` (float64, a column per feature), as LightGBM's
        ``Booster.predict`` gives it."""
        x = np.asarray(x, np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.feature_names):
            raise ValueError(f"expected rows of {len(self.feature_names)} features, "
                             f"got shape {x.shape}")
        if self._layout is not None:
            nodes, masks, trees, by_position = self._layout
            goes_left = self._decide(x, nodes.ravel()).reshape(len(x), *nodes.shape)
            leaves = self._exits(goes_left)
        else:
            leaves = self._walk(self._decide(x, np.arange(len(self.feature))))
        outputs = self.leaf_value[leaves - len(self.feature)]
        outputs[:, 0] += 0.0  # LightGBM adds to 0.0: -0.0 becomes 0.0
        total = np.cumsum(outputs, axis=1)[:, -1]  # in tree order, as LightGBM adds them
        return total / len(self.roots) if self.average else total

    def _walk(self, goes_left: np.ndarray) -> np.ndarray:
        """Each row's leaf in each tree, ``depth`` steps from the roots."""
        n, inner = goes_left.shape
        flat = np.concatenate([goes_left, np.zeros((n, len(self.left) - inner), bool)],
                              axis=1).ravel()
        offset = (np.arange(n, dtype=np.int64) * len(self.left))[:, None]
        children = np.stack([self.right, self.left], axis=1).ravel()  # [node, went left]
        node = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        for _ in range(self.depth):
            node = children[2 * node + flat[offset + node]]
        return node

    def _exits(self, goes_left: np.ndarray) -> np.ndarray:
        """Each row's leaf in each tree without walking (QuickScorer, Lucchese et al. 2015):
        leaves numbered left to right, a node that sends the row right rules out the leaves
        of its left subtree, and the row's leaf is the leftmost one left. A bit mask a tree
        (the smallest unsigned integer that holds its leaves), so for up to 64 leaves."""
        _, masks, trees, by_position = self._layout
        ruled = np.where(goes_left, ~masks.dtype.type(0), masks)
        left_over = np.bitwise_and.reduce(ruled, axis=2)
        lowest = left_over & (~left_over + masks.dtype.type(1))
        position = np.frexp(lowest.astype(np.float64))[1] - 1  # exact: powers of two
        leaves = np.broadcast_to(self.roots, (len(goes_left), len(self.roots))).copy()
        leaves[:, trees] = by_position[trees, position]
        return leaves

    @functools.cached_property
    def _ranks(self) -> tuple[dict[int, np.ndarray], np.ndarray]:
        """Each split feature's thresholds, sorted and distinct, and each node's threshold's
        place among its feature's."""
        sorted_thresholds, position = {}, np.zeros(len(self.feature), np.int64)
        for f in np.flatnonzero(np.bincount(self.feature)):  # (np.unique imports numpy.ma)
            at = np.flatnonzero(self.feature == f)
            u = np.sort(self.threshold[at])
            u = u[np.concatenate([[True], u[1:] != u[:-1]])]
            sorted_thresholds[int(f)] = u
            position[at] = np.searchsorted(u, self.threshold[at])
        small = np.int16 if len(self.feature) < 2 ** 15 else np.int64
        return sorted_thresholds, position.astype(small)

    @functools.cached_property
    def _layout(self):
        """For :meth:`_exits`, over the trees that split: their internal nodes, one row a
        tree (padded with a node whose mask rules nothing out), each node's mask of the
        leaves still possible when it sends a row right, which trees these are, and each
        one's leaves (flat index) left to right. None for trees of more than 64 leaves."""
        inner = len(self.feature)
        trees = np.flatnonzero(self.roots < inner)
        counts = np.bincount(self.leaf_tree, minlength=len(self.roots))
        if not len(trees) or counts.max() > 64:
            return None
        bits = next(b for b in (8, 16, 32, 64) if counts.max() <= b)
        width = int(np.bincount(self.inner_tree).max())
        nodes = np.zeros((len(trees), width), np.int64)
        masks = np.full((len(trees), width), (1 << bits) - 1, f"uint{bits}")
        by_position = np.zeros((len(self.roots), int(counts.max())), np.int64)
        for row, t in enumerate(trees):
            order: list[int] = []       # the tree's leaves, left to right
            first: dict[int, int] = {}  # node -> position of its subtree's first leaf
            own = np.flatnonzero(self.inner_tree == t)
            nodes[row, :len(own)] = own
            stack = [(int(self.roots[t]), False)]
            while stack:
                node, done = stack.pop()
                if node >= inner:
                    first[node] = len(order)
                    order.append(node)
                elif done:
                    lo, hi = first[int(self.left[node])], first[int(self.right[node])]
                    first[node] = lo
                    masks[row, node - own[0]] = ((1 << bits) - 1) ^ ((1 << hi) - (1 << lo))
                else:
                    stack += [(node, True), (int(self.right[node]), False),
                              (int(self.left[node]), False)]
            by_position[t, :len(order)] = order
        return nodes, masks, trees, by_position

    def _decide(self, x: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """(rows, nodes): does the row go left at each of these internal nodes."""
        nan_x = np.isnan(x)
        x = np.where(np.abs(x) <= ZERO, 0.0, x)  # LightGBM keeps NaN, zeroes the rest
        decision, feature, threshold = (self.decision[nodes], self.feature[nodes],
                                        self.threshold[nodes])
        missing = (decision >> 2) & 3
        if not ((missing != 0) | ((decision & CATEGORICAL) > 0)).any():
            # No missing-value rules, no categories: NaN is 0.0, then value <= threshold,
            # compared as ranks among the feature's thresholds (x <= u[j] exactly when fewer
            # than j + 1 thresholds are below x): small integers instead of float64s.
            x = np.where(nan_x, 0.0, x)
            sorted_thresholds, position = self._ranks
            rank = np.zeros(x.shape, position.dtype)
            for f, u in sorted_thresholds.items():
                rank[:, f] = np.searchsorted(u, x[:, f], side="left")
            return rank[:, feature] <= position[nodes]
        value = x[:, feature]
        nan = np.isnan(value)
        v = np.where(nan & (missing != MISSING_NAN), 0.0, value)
        with np.errstate(invalid="ignore"):
            out = v <= threshold
        default = ((missing == MISSING_ZERO) & (np.abs(v) <= ZERO)) | (
            (missing == MISSING_NAN) & nan)
        out = np.where(default, (decision & DEFAULT_LEFT) > 0, out)
        categorical = (decision & CATEGORICAL) > 0
        if categorical.any():
            out = np.where(categorical, self._in_category(value, nodes), out)
        return out

    def _in_category(self, value: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """C's ``static_cast<int>``: NaN and values outside int's range become INT_MIN
        (x86), a negative category, which goes right; otherwise the value truncated."""
        with np.errstate(invalid="ignore"):
            fits = ~np.isnan(value) & (value > -2.0 ** 31 - 1) & (value < 2.0 ** 31)
        cat = np.where(fits, np.trunc(np.where(fits, value, 0.0)), -1).astype(np.int64)
        word = np.where(cat >= 0, cat // 32, 0)
        inside = (cat >= 0) & (word < self.cat_words[nodes])
        if not len(self.cat_bits):
            return inside
        got = self.cat_bits[np.where(inside, self.cat_start[nodes] + word, 0)]
        return inside & (((got >> (cat % 32).astype(np.uint32)) & 1) == 1)


def _keys(block: str) -> dict[str, str]:
    out = {}
    for line in block.splitlines():
        key, eq, value = line.partition("=")
        out[key.strip()] = value.strip() if eq else ""
    return out


def _floats(s: str) -> list[float]:
    return [float(v) for v in s.split()]  # correctly rounded, as LightGBM parses them


def _ints(s: str) -> list[int]:
    return [int(v) for v in s.split()]
