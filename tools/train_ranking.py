"""Fit the question ranker's weights (knowledge_base/data/ranking.yaml).

The ranker scores each candidate of a question by a weighted sum of its features
(knowledge_base/questions.py: FEATURES). The weights maximise the probability that a softmax
over a question's candidates puts its mass on an accepted answer (listwise logistic loss,
L2-regularised), fitted with NumPy on the TUNED question sets only:

- benchmarks/kb_queries.yaml (its questions), benchmarks/kb_questions.yaml,
  benchmarks/kb_questions_train.yaml (443 questions written as training data),
  benchmarks/kb_questions_train2.yaml (a second set, session 5, written the same way),
  benchmarks/kb_questions_train3.yaml (a third set, session 5, for symbols no other set covered),
  benchmarks/kb_questions_train4.yaml (a fourth set, session 5, in the style of issue titles),
  benchmarks/kb_questions_paraphrased.yaml (our paraphrases of real users' questions, session 5);
- any --extra set (e.g. the first real-users set, kept outside the repository).

Never pass a held-out set (benchmarks/kb_questions_heldout.yaml, the second real-users set):
they measure what a new user gets. k-fold cross-validation over the training questions picks
the regularisation and reports how well the weights carry to questions they were not fitted on.

Run: ``.venv/bin/python tools/train_ranking.py [--kb PATH] [--extra /tmp/real-questions.yaml]
[--write]``; without --write it only reports.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import load_config  # noqa: E402
from knowledge_base import phrasebook, questions  # noqa: E402
from knowledge_base.answers import Answers  # noqa: E402
from knowledge_base.search import clean_query, is_name, wants_compat  # noqa: E402

TUNED = [ROOT / "benchmarks" / n for n in
         ("kb_queries.yaml", "kb_questions.yaml", "kb_questions_train.yaml",
          "kb_questions_train2.yaml", "kb_questions_train3.yaml", "kb_questions_train4.yaml",
          "kb_questions_paraphrased.yaml")]


def groups(a: Answers, paths: list[Path], paraphrased: dict[str, str] | None = None
           ) -> tuple[list, int]:
    """(features, positive mask, question) per question whose answer is among its
    candidates, and how many questions had none. ``paraphrased``: file name -> the book file
    that holds our paraphrases of its questions (left out with it)."""
    paraphrased = paraphrased or {}
    s = a.searcher
    obj = {n: o for n, o in a.kb.db.execute("SELECT name, object FROM symbols")}
    out, missing = [], 0
    held = {phrasebook.key(clean_query(item["q"])) for item in
            yaml.safe_load((ROOT / "benchmarks" / "kb_questions_heldout.yaml").read_text())}
    for path in paths:
        name = Path(path).name
        own = (name, paraphrased[name]) if name in paraphrased else (name,)
        for item in yaml.safe_load(Path(path).read_text()):
            q = clean_query(item["q"])
            if is_name(q):
                continue  # names are answered by name matching, not by the ranker
            if phrasebook.key(q) in held:
                continue  # worded as a held-out question: that one measures, it does not train
            accept = set(item["accept"])
            objs = {obj.get(n) for n in accept} - {None}
            # As a new user's: the "asked before" book without this question's file or text.
            ids, x = questions.candidates(s, q, wants_compat(q),
                                          leave_out=(own, phrasebook.key(q)))
            pos = np.array([s.names[i] in accept or s.objects.get(i) in objs for i in ids])
            if not pos.any():
                missing += 1
                continue
            out.append((x, pos, q))
    return out, missing


CONCEPT = [i for i, f in enumerate(questions.FEATURES) if f.startswith("concept")]


def without_concepts(data: list) -> list:
    """The same questions as if no concept phrase had fired: a new user's wording often
    matches none, and the tuned sets' wording matched the phrases more than new wording will."""
    out = []
    for x, pos, q in data:
        x = x.copy()
        x[:, CONCEPT] = 0.0
        out.append((x, pos, q))
    return out


def fit(data: list, l2: float, steps: int = 1500, lr: float = 0.05) -> np.ndarray:
    """Listwise logistic loss: -log(sum of softmax over the accepted answers), Adam.
    All questions' candidates are stacked in one matrix and each question's softmax is taken
    over its own rows (``reduceat``), so a step is a few array operations.
    (Fitting each question a second time as if no concept had fired was tried: the
    cross-validated numbers, with and without concepts, stayed within a question.)"""
    x = np.concatenate([d[0] for d in data])
    pos = np.concatenate([d[1] for d in data]).astype(float)
    sizes = np.array([len(d[0]) for d in data])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    group = np.repeat(np.arange(len(data)), sizes)
    w = np.zeros(x.shape[1])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, steps + 1):
        z = x @ w
        e = np.exp(z - np.maximum.reduceat(z, starts)[group])
        p = e / np.add.reduceat(e, starts)[group]
        qp = p * pos
        qp /= np.add.reduceat(qp, starts)[group]
        g = 2 * l2 * w + x.T @ (p - qp) / len(data)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def accuracy(data: list, w: np.ndarray) -> tuple[float, float]:
    top1 = top5 = 0
    for x, pos, _ in data:
        order = np.argsort(-(x @ w), kind="stable")
        hit = np.nonzero(pos[order])[0]
        top1 += bool(len(hit) and hit[0] == 0)
        top5 += bool(len(hit) and hit[0] < 5)
    return top1 / len(data), top5 / len(data)


def cross_validate(data: list, l2: float, k: int = 5) -> tuple[float, ...]:
    """top-1, top-5 on held-back folds, as asked and with no concept firing."""
    rng = np.random.default_rng(17)
    fold = rng.permutation(len(data)) % k
    sums = np.zeros(4)
    for i in range(k):
        train = [d for d, f in zip(data, fold) if f != i]
        test = [d for d, f in zip(data, fold) if f == i]
        w = fit(train, l2)
        sums += np.array([*accuracy(test, w), *accuracy(without_concepts(test), w)]) * len(test)
    return tuple(sums / len(data))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", help="KB file (default: the configured one)")
    ap.add_argument("--extra", action="append", default=[], metavar="PATH[:PARAPHRASES]",
                    help="another tuned question set; after a colon, the benchmarks file that "
                         "paraphrases it (left out of 'asked before' while it is featurized)")
    ap.add_argument("--l2", type=float, nargs="*", default=[0.0003, 0.001, 0.003, 0.01])
    ap.add_argument("--write", action="store_true", help="write knowledge_base/data/ranking.yaml")
    args = ap.parse_args()
    extra = [e.partition(":") for e in args.extra]
    if any("heldout" in p or "questions-2" in p for p, _, _ in extra):
        ap.error("held-out sets must never be trained on")
    paraphrased = {Path(p).name: para for p, _, para in extra if para}
    cfg = load_config()
    a = Answers.open(Path(args.kb) if args.kb else cfg.kb_path, cfg.site_url)
    paths = TUNED + [Path(p) for p, _, _ in extra]
    data, missing = groups(a, paths, paraphrased)
    print(f"{len(data)} questions with an answer among their candidates, {missing} without")
    try:
        current = questions.load_weights()
        print("current weights: train top-1 {:.1%} top-5 {:.1%}".format(
            *accuracy(data, current)))
    except ValueError as exc:
        print(f"current weights do not fit the features any more: {exc}")
    best = None
    for l2 in args.l2:
        cv = cross_validate(data, l2)
        print(f"l2={l2:g}: 5-fold cross-validated top-1 {cv[0]:.1%} top-5 {cv[1]:.1%}; "
              f"with no concept firing top-1 {cv[2]:.1%} top-5 {cv[3]:.1%}")
        if best is None or cv[0] + cv[2] > best[1][0] + best[1][2]:
            best = (l2, cv)
    l2, cv = best
    w = fit(data, l2)
    train = accuracy(data, w)
    print(f"chosen l2={l2:g}: train top-1 {train[0]:.1%} top-5 {train[1]:.1%}")
    for f, x in sorted(zip(questions.FEATURES, w), key=lambda t: -abs(t[1])):
        print(f"  {f:<16} {x:+.3f}")
    if args.write:
        header = (
            "# Weights of the question ranker (knowledge_base/questions.py), written by\n"
            "# tools/train_ranking.py. Fitted on the tuned question sets only; the held-out\n"
            "# sets (benchmarks/kb_questions_heldout.yaml, the second real-users set) were\n"
            "# never trained on.\n")
        doc = {
            "fitted": datetime.date.today().isoformat(),
            "trained_on": [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name
                           for p in paths],
            "questions": len(data), "without_answer_among_candidates": missing,
            "l2": l2,
            "cross_validated": {"top1": round(float(cv[0]), 3), "top5": round(float(cv[1]), 3),
                                "no_concept_top1": round(float(cv[2]), 3),
                                "no_concept_top5": round(float(cv[3]), 3)},
            "train": {"top1": round(train[0], 3), "top5": round(train[1], 3)},
            "weights": {f: round(float(x), 4) for f, x in zip(questions.FEATURES, w)},
        }
        questions.WEIGHTS.write_text(header + yaml.safe_dump(doc, sort_keys=False))
        print(f"wrote {questions.WEIGHTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
