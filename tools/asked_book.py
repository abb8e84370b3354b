"""Write ``knowledge_base/qa/data/asked.npz``: the "asked before" phrasebook.

Every question of our own sets that the manifest (``knowledge_base/qa/sets/manifest.yaml``)
puts in the book (roles training, tuned, book-only: never the held-out set), embedded with the
search's sentence model and linked to the answers it accepts. A user's question worded like
one of them then finds the same answers (``knowledge_base/qa/phrasebook.py``). Besides questions
written for the ranker, ``kb_questions_needs.yaml`` holds up to three questions for each of the
960 most used symbols, so that a need worded in a new way has neighbours. Only our own words go in:
real users' questions (kept outside the repository) never do, and the held-out set never does.

Each sentence keeps its file and a key of its text, so ``tools/train_ranking.py`` can compute
a training question's features without its own file: as for a new user, whose question is not
in the book. ``tests/knowledge_base/test_kb_phrasebooks.py`` fails when a training file changed and this
was not re-run.

Run: ``.venv/bin/python -m tools.asked_book``.
"""
from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import yaml

from knowledge_base.names import clean_query, is_name
from knowledge_base.qa import minilm, phrasebook, question_sets, semantic


def own_words() -> list[Path]:
    """The sets the book holds, in the manifest's order (the held-out set is never one)."""
    return [s.path for s in question_sets.sets(*question_sets.IN_BOOK)]


def questions(path: Path) -> list[tuple[str, list[str]]]:
    """(question as the searcher sees it, accepted names); name queries are left out: names
    are answered by name matching."""
    out = []
    for item in yaml.safe_load(path.read_text()) or []:
        q = clean_query(item["q"])
        if q and not is_name(q):
            out.append((q, list(item["accept"])))
    return out


@functools.lru_cache(maxsize=1)
def held_out_keys() -> frozenset[int]:
    """Keys of the held-out questions: a training question worded the same (an old tuned set
    may hold a short question that the held-out set's author also wrote) is left out."""
    return frozenset(phrasebook.key(q) for q, _ in questions(question_sets.held_out().path))


def main() -> int:
    files = own_words()
    held = held_out_keys()
    texts, targets, keys, origin = [], [], [], []
    for i, path in enumerate(files):
        for q, accept in questions(path):
            if phrasebook.key(q) in held:
                continue
            texts.append(q)
            targets.append([(n, 1.0) for n in accept])
            keys.append(phrasebook.key(q))
            origin.append(i)
    t0 = time.perf_counter()
    vectors = minilm.model().embed(
        texts, progress=lambda done, total: print(f"\rembedding {done}/{total}", end=""))
    print(f"\n{len(texts)} questions from {len(files)} files in {time.perf_counter() - t0:.0f} s")
    out = phrasebook.BOOKS["asked"]
    phrasebook.write(out, semantic.MODEL, vectors, targets, keys=keys, origin=origin,
                     files=[p.name for p in files])
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
