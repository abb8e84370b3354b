"""How useful are the guide phrases (knowledge_base/qa/data/guide-phrases.npz) for questions?

For each question of a question set that is written in words (not a name), with its accepted
symbols: is an accepted symbol (or an alias of one) among

- ``phrases``: the targets linked from the question's 20 nearest phrases;
- ``voted``: the 20 best symbols when the 100 nearest phrases vote (similarity x weight);
- ``doc``: the 20 nearest symbols of the KB's own "doc" view (``semantic.Index.query``);
- ``doc + phrases``: either of the first and third;
- ``doc@N``: the N nearest of the "doc" view, N the mean number of symbols "doc + phrases"
  offers, for a fair comparison.

Tune only on training sets (knowledge_base/qa/sets/kb_questions_train.yaml), never on a held-out one.
Run: ``.venv/bin/python -m tools.guide_phrases_check --kb $TFDESK_HOME/kb.sqlite
knowledge_base/qa/sets/kb_questions_train.yaml``.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from knowledge_base.qa import minilm
from knowledge_base.qa.answers import Answers
from knowledge_base.names import clean_query, is_name
from tools.guide_phrases import OUTPUT


def check(path: Path, kb: Path, questions: Path, k: int = 20) -> dict:
    with np.load(path, allow_pickle=False) as f:
        m = f["matrix"].astype(np.float32)
        offsets, targets, weights = f["offsets"], [str(t) for t in f["targets"]], f["weights"]
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)
    a = Answers.open(kb, "")
    s = a.questions
    obj = dict(a.kb.db.execute("SELECT name, COALESCE(object, name) FROM symbols"))
    items = [(clean_query(it["q"]), set(it["accept"]))
             for it in yaml.safe_load(questions.read_text())]
    items = [(q, acc) for q, acc in items if not is_name(q)]
    vectors = minilm.model().embed([q for q, _ in items])
    hits: Counter = Counter()
    offered, n_linked, wants = [], [], []
    for (q, accept), v in zip(items, vectors):
        want = {obj.get(n, n) for n in accept}
        wants.append(want)

        def hit(names) -> bool:
            return any(obj.get(n, n) in want for n in names)
        sims = m @ v
        top = np.argsort(-sims)[:5 * k]
        linked = {targets[j] for i in top[:k] for j in range(offsets[i], offsets[i + 1])}
        votes: Counter = Counter()
        for i in top:
            for j in range(offsets[i], offsets[i + 1]):
                votes[targets[j]] += float(sims[i]) * float(weights[j])
        doc = [s.lookup.names[i] for i, _ in s.semantic.query(q, k=k)]
        offered.append(len(linked | set(doc)))
        n_linked.append(len(linked))
        hits["phrases"] += hit(linked)
        hits["voted"] += hit(n for n, _ in votes.most_common(k))
        hits["doc"] += hit(doc)
        hits["doc + phrases"] += hit([*linked, *doc])
    fair = round(float(np.mean(offered)))
    for (q, _), want in zip(items, wants):
        hits[f"doc@{fair}"] += any(obj.get(s.lookup.names[i]) in want
                                   for i, _ in s.semantic.query(q, k=fair))
    out = {key: hits[key] / len(items) for key in hits}
    out["questions"] = len(items)
    out[f"symbols linked from the {k} nearest phrases (mean)"] = round(float(np.mean(n_linked)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", type=Path, required=True, help="a built KB (kb.sqlite)")
    ap.add_argument("--phrases", type=Path, default=OUTPUT)
    ap.add_argument("questions", type=Path, help="a TRAINING question set (YAML: q, accept)")
    args = ap.parse_args(argv)
    for key, value in check(args.phrases, args.kb, args.questions).items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
