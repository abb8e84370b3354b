"""Fit the question ranker (knowledge_base/qa/data/ranker.txt, described in ranking.yaml).

The ranker scores each candidate of a question from its features (knowledge_base/qa/questions.py:
FEATURES) with gradient-boosted trees (LightGBM, LambdaRank: the order of a question's
candidates is what is learned). Trees, not a weighted sum, because what one feature is worth
depends on the others; measured the same way below, the linear ranker this replaces got 61.8%
top-1 where the trees get 66%. Fitted on the sets whose role in
knowledge_base/qa/sets/manifest.yaml is training, tuned or generated (questions made from the
KB's own text by tools/generated_questions.py; never held-out; the book-only set,
questions per commonly used symbol, is in the "asked before" book but not fitted on: measured
by leaving each real-users file out, the book with it raised top-1 by 1-3 points, while fitting
the ranker on it as well lowered it again), and on any --extra set. Since issue 27 the shipped
ranker is fitted on none of real users' threads: it had learnt those threads (95% top-5 on
them, 71% on fresh ones), so they only measure. ``PATH:FILE[,FILE]`` names the sets that paraphrase it, left out
of "asked before" while it is featurized.

A second batch, for the 795 other symbols that answer training questions, was tried and
dropped: the files whose answers chose those symbols rose, but kb_questions_train3.yaml (the
long tail, not among them) fell from 48% to 29% top-1: a bigger book pulls questions about
uncovered symbols toward covered neighbours.

A training question is featurized as a new user's would be: the "asked before" phrasebook
without its own file (knowledge_base/qa/phrasebook.py). Never pass a held-out set
(the manifest's held-out set, the second real-users set): they measure what a new
user gets, and a training question worded as a held-out one is skipped. How well the ranker
carries to new wording is estimated by leaving each file out in turn: a ranker fitted on the
other files ranks that file's questions (questions whose answer is not among the candidates
count as misses).

Run: ``.venv/bin/python -m tools.train_ranking [--kb PATH] [--extra PATH[:PARAPHRASES]]
[--write]``; without --write it only reports.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np
import yaml

from bot.config import load_config
from knowledge_base.names import wants_compat
from knowledge_base.qa import phrasebook, question_sets, questions
from knowledge_base.qa.answers import Answers
from tools.asked_book import held_out_keys, questions as training_questions

ROOT = Path(__file__).resolve().parents[1]


def groups(a: Answers, paths: list[Path],
           paraphrased: dict[str, tuple[str, ...]] | None = None) -> list:
    """(features, accepted-mask, question) per question; the mask is all False when no
    accepted answer is among the candidates (a miss whatever the ranker does).
    ``paraphrased``: file name -> the book files that hold our paraphrases of its questions
    (left out with it)."""
    paraphrased = paraphrased or {}
    s = a.questions
    obj = {n: o for n, o in a.kb.db.execute("SELECT name, object FROM symbols")}
    out = []
    held = held_out_keys()
    for path in paths:
        name = Path(path).name
        own = (name, *paraphrased.get(name, ()))
        # As the "asked before" book reads them: name queries left out (names are answered
        # by name matching, not by the ranker).
        for q, accept in training_questions(Path(path)):
            if phrasebook.key(q) in held:
                continue  # worded as a held-out question: that one measures, it does not train
            accept = set(accept)
            objs = {obj.get(n) for n in accept} - {None}
            # As a new user's: the "asked before" book without this question's file or text.
            ids, x = questions.candidates(s, q, wants_compat(q),
                                          leave_out=(own, phrasebook.key(q)))
            names, objects = s.lookup.names, s.lookup.objects
            pos = np.array([names[i] in accept or objects.get(i) in objs for i in ids],
                           dtype=bool)
            out.append((x, pos, q))
    return out


# LambdaRank trees; chosen by the leave-one-file-out estimate among four settings (leaves 7-31,
# 200-500 trees, truncation 5-10), which all landed within a point of each other.
PARAMS = dict(objective="lambdarank", learning_rate=0.05, num_leaves=15, min_data_in_leaf=20,
              bagging_fraction=0.8, bagging_freq=1, feature_fraction=0.8, seed=17,
              deterministic=True, force_row_wise=True, num_threads=1, verbose=-1)
ROUNDS = 300


def fit(data: list):
    """A booster fitted on (features, accepted-mask, question) groups."""
    import lightgbm
    data = [d for d in data if d[1].any()]  # no answer among the candidates: nothing to learn
    x = np.concatenate([d[0] for d in data])
    y = np.concatenate([d[1] for d in data]).astype(int)
    train = lightgbm.Dataset(x, label=y, group=[len(d[0]) for d in data],
                             feature_name=list(questions.FEATURES))
    return lightgbm.train(PARAMS, train, num_boost_round=ROUNDS)


def ranked(data: list, booster) -> list[tuple[float, bool, bool]]:
    """(top score squashed as the searcher does, top-1 right, right one in the top 5)."""
    out = []
    for x, pos, _ in data:
        z = booster.predict(x, num_threads=1) if len(x) else np.zeros(0)
        order = np.argsort(-z, kind="stable")
        hit = np.nonzero(pos[order])[0]
        top = 1 / (1 + np.exp(-z[order[0]])) if len(z) else 0.0
        out.append((float(top), bool(len(hit) and hit[0] == 0), bool(len(hit) and hit[0] < 5)))
    return out


def leave_one_file_out(per_file: dict[str, list]) -> tuple[dict[str, dict], list]:
    """Each file's questions ranked by a ranker fitted on the other files: how well the
    ranker carries to wording it was not fitted on. Also every question's (top score, top-1
    right, top-5 right) from those rankers, for ``calibrate``."""
    out, scored = {}, []
    for name, data in per_file.items():
        rest = [d for other, ds in per_file.items() if other != name for d in ds]
        r = ranked(data, fit(rest))
        scored += r
        top1, top5 = (sum(t[i] for t in r) / max(1, len(r)) for i in (1, 2))
        out[name] = {"questions": len(r), "top1": round(top1, 3), "top5": round(top5, 3)}
        print(f"  {name:<34} {len(r):5d} questions  top-1 {top1:6.1%}  top-5 {top5:6.1%}",
              flush=True)
    return out, scored


def calibrate(scored: list, unsure_top1: float = 0.35) -> dict:
    """The score below which a first answer is a guess: the highest threshold under which
    the first answer was right for at most ``unsure_top1`` of the questions, on questions
    the ranker was not fitted on. ``ask`` says so below it instead of answering as sure."""
    scored = sorted(scored)
    best = None
    right = 0
    for i, (score, top1, _) in enumerate(scored, 1):
        right += top1
        if i >= 20 and right / i <= unsure_top1:
            best = i
    if best is None:
        return {}
    below, above = scored[:best], scored[best:]
    rate = lambda rows, k: round(sum(r[k] for r in rows) / max(1, len(rows)), 3)  # noqa: E731
    return {"unsure_below": round(scored[best - 1][0] + 1e-6, 4),
            "questions_below": round(best / len(scored), 3),
            "below": {"top1": rate(below, 1), "top5": rate(below, 2)},
            "above": {"top1": rate(above, 1), "top5": rate(above, 2)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", help="KB file (default: the configured one)")
    ap.add_argument("--extra", action="append", default=[], metavar="PATH[:PARAPHRASES]",
                    help="another training question set; after a colon, the question sets "
                         "(comma-separated) that paraphrase it (left out of 'asked before' while "
                         "featurized)")
    ap.add_argument("--write", action="store_true",
                    help="write knowledge_base/qa/data/ranker.txt and ranking.yaml")
    args = ap.parse_args()
    extra = [e.partition(":") for e in args.extra]
    if any("heldout" in p or "questions-2" in p for p, _, _ in extra):
        ap.error("held-out sets must never be trained on")
    paraphrased = {Path(p).name: tuple(para.split(",")) for p, _, para in extra if para}
    # A misspelt paraphrase file would leave nothing out, and the estimate would read in-sample.
    known = {s.file for s in question_sets.sets()}
    unknown = sorted({f for fs in paraphrased.values() for f in fs if f not in known})
    if unknown:
        ap.error(f"no such paraphrase file among the question sets "
                 f"({question_sets.MANIFEST.relative_to(ROOT)}): {', '.join(unknown)}")
    cfg = load_config()
    a = Answers.open(Path(args.kb) if args.kb else cfg.kb_path, cfg.site_url)
    paths = [s.path for s in question_sets.sets(*question_sets.FITTED)]
    paths += [Path(p) for p, _, _ in extra]
    per_file = {p.name: groups(a, [p], paraphrased) for p in paths}
    data = [d for ds in per_file.values() for d in ds]
    missing = sum(not d[1].any() for d in data)
    print(f"{len(data)} questions, {missing} without an answer among their candidates")
    print("leave one file out (fitted on the other files):")
    lofo, scored = leave_one_file_out(per_file)
    confidence = calibrate(scored)
    print(f"confidence: {confidence}")
    n = sum(v["questions"] for v in lofo.values())
    overall = {k: round(sum(v[k] * v["questions"] for v in lofo.values()) / n, 3)
               for k in ("top1", "top5")}
    print(f"  {'all':<34} {n:5d} questions  top-1 {overall['top1']:6.1%}  "
          f"top-5 {overall['top5']:6.1%}")
    booster = fit(data)
    r = ranked(data, booster)
    train = [sum(t[i] for t in r) / len(r) for i in (1, 2)]
    print(f"fitted on all: train top-1 {train[0]:.1%} top-5 {train[1]:.1%}")
    gain = booster.feature_importance("gain")
    for f, g in sorted(zip(questions.FEATURES, gain / gain.sum()), key=lambda t: -t[1])[:12]:
        print(f"  {f:<16} {g:6.1%} of the gain")
    if args.write:
        booster.save_model(str(questions.RANKER))
        header = (
            "# The question ranker (knowledge_base/qa/data/ranker.txt): how it was fitted, by\n"
            "# tools/train_ranking.py. Fitted on training question sets only; the held-out\n"
            "# sets (knowledge_base/qa/sets/kb_questions_heldout.yaml, the second real-users\n"
            "# set) were\n"
            "# never trained on.\n")
        doc = {
            "fitted": datetime.date.today().isoformat(),
            "model": "LightGBM LambdaRank",
            "trained_on": [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else p.name
                           for p in paths],
            "questions": len(data), "without_answer_among_candidates": missing,
            "leave_one_file_out": {"all": overall, **lofo},
            "confidence": confidence,
            "train": {"top1": round(float(train[0]), 3), "top5": round(float(train[1]), 3)},
            "params": {**{k: v for k, v in PARAMS.items() if k not in ("verbose", "num_threads")},
                       "rounds": ROUNDS},
        }
        questions.RANKING.write_text(header + yaml.safe_dump(doc, sort_keys=False))
        print(f"wrote {questions.RANKER} and {questions.RANKING}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
