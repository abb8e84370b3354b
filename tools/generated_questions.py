"""Write the generated question sets: questions made from the KB's own text, not users' threads.

For the most used public symbols (the KB's popularity table: guides and examples that use them),
three kinds of question, each from a fact the KB holds:

- purpose: the docstring's first sentence turned into a how-to ("Computes the mean of elements
  across dimensions of a tensor." -> "how do I compute the mean of elements across dimensions
  of a tensor"), the symbol's own name words left in only where the sentence has them;
- parameter: a documented keyword of a callable, asked about by its words and its owner's
  ("what does mask zero do in embedding"), for keywords specific enough to point somewhere;
- replacement: a deprecated or removed symbol whose notice names its successor ("is
  deprecated, what do I use instead"), answered by the successor.

Symbols are split by a hash of the object they name (all names of one object fall on the same
side), a fifth held out: the held-out file measures how the ranker carries to symbols it never
saw a generated question about; the ranker is fitted on the other file only. Deterministic: the
same KB writes the same files (tests check the shipped files are this tool's output).

Run: ``.venv/bin/python -m tools.generated_questions [--kb PATH] [--check]``.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from knowledge_base.qa import question_sets
from knowledge_base.qa.arguments import GENERIC, MIN_SINGLE
from knowledge_base.signatures import parse_params

TRAIN_FILE, HELD_OUT_FILE = "kb_generated.yaml", "kb_generated_heldout.yaml"
HELD_OUT_EVERY = 5
SYMBOLS = 1000          # the most used symbols that get questions
REPLACED = 150          # at most this many replacement questions
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_CODE = re.compile(r"`+([^`]*)`+")
_ARG = re.compile(r"^\s{2,8}\*{0,2}(\w+)(?:\s*\([^)]*\))?:\s*(\S.*)$")
_REPLACED = re.compile(r"\b(?:[Uu]se|replaced by|in favou?r of)\s+`?((?:tf|keras)\.[\w.]+)")


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str
    object: str
    summary: str
    signature: str | None
    doc: str


def base_verb(word: str) -> str:
    """The docstring's third person as a request: Computes -> compute, Applies -> apply."""
    w = word.lower()
    if w in ("does", "has", "is"):
        return {"does": "do", "has": "have", "is": "be"}[w]
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z)es$", w):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def plain(text: str) -> str:
    """A docstring sentence as a user would type it: no links, no backticks, no brackets."""
    text = _CODE.sub(r"\1", _LINK.sub(r"\1", text))
    text = re.sub(r"\([^)]*\)", "", text)
    return " ".join(text.replace("_", " ").split()).rstrip(" .:;,")


def purpose_question(sym: Symbol, pick: int) -> str | None:
    words = plain(sym.summary).split()
    if len(words) < 3 or len(words) > 18:
        return None
    first = words[0]
    rest = " ".join(words[1:]).replace("this ", "a ")
    if first.lower().endswith("s") and first[0].isupper() and first.isalpha():
        verb = base_verb(first)
        return ("how do I {v} {r}", "how to {v} {r}", "is there a way to {v} {r}",
                "{v} {r} in tensorflow")[pick % 4].format(v=verb, r=rest)
    if first[0].isupper() and first.isalpha() and first.lower() in _IMPERATIVES:
        return f"how do I {first.lower()} {rest}"
    return None


# Docstrings that open in the imperative ("Record operations ...", "Resize images ...").
_IMPERATIVES = frozenset("""record resize compute create return apply convert load save build
    run get set add remove make use cast split join pad sort reshape reduce""".split())


def owner_words(sym: Symbol) -> str:
    """How a user names the callable a keyword belongs to: 'embedding', 'model fit'."""
    parts = sym.name.split(".")
    tail = parts[-2:] if sym.kind == "method" else parts[-1:]
    return " ".join(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", p).replace("_", " ").lower()
                    for p in tail)


def documented_args(doc: str) -> dict[str, str]:
    """Keyword -> the first line of its description, from the docstring's Args section."""
    out, inside = {}, False
    for line in doc.splitlines():
        if re.match(r"^\s*(Args|Arguments|Parameters):\s*$", line):
            inside = True
            continue
        if inside and re.match(r"^\s*(Returns|Raises|Yields|Example|Examples|Call arguments"
                               r"|Input shape|Output shape)\b", line):
            break
        m = _ARG.match(line) if inside else None
        if m:
            out[m.group(1)] = m.group(2)
    return out


def param_questions(sym: Symbol, pick: int) -> list[str]:
    params = parse_params(sym.signature) or []
    described = documented_args(sym.doc)
    out = []
    for name, kind, _ in params:
        if kind.startswith("var_") or name in GENERIC or name not in described:
            continue
        if "_" not in name and len(name) < MIN_SINGLE:
            continue  # one short word ("units", "rate") says too little on its own
        words = name.replace("_", " ")
        owner = owner_words(sym)
        out.append(("what does {p} do in {o}", "how to set {p} in {o}",
                    "{o} {p} argument", "what is the {p} parameter of {o}")
                   [(pick + len(out)) % 4].format(p=words, o=owner))
        if len(out) == 2:
            break
    return out


def replacement_question(sym: Symbol, successor: str, pick: int) -> str:
    words = plain(sym.name.rsplit(".", 1)[1])
    return ("{w} is deprecated what should I use instead", "what replaces {w}",
            "{w} no longer works in tensorflow 2")[pick % 3].format(w=words)


def held_out(obj: str) -> bool:
    return int(hashlib.sha1(obj.encode()).hexdigest(), 16) % HELD_OUT_EVERY == 0


def popular(db: sqlite3.Connection, limit: int) -> list[Symbol]:
    """The most used public symbols with a docstring, one name per object (its canonical)."""
    rows = db.execute(
        "SELECT s.name, s.kind, COALESCE(s.object, s.name), COALESCE(s.summary, ''), "
        "s.signature, COALESCE(s.doc, '') FROM symbols s JOIN popularity p ON p.id = s.id "
        "WHERE s.kind IN ('class', 'function', 'method') AND s.name NOT LIKE 'tf.raw_ops.%' "
        "AND s.name NOT LIKE 'tf.compat.%' "
        "AND (s.canonical IS NULL OR s.canonical = s.name) AND s.removed_in IS NULL "
        "ORDER BY p.files DESC, p.refs DESC, s.name LIMIT ?", (limit * 2,)).fetchall()
    seen, out = set(), []
    for r in rows:
        sym = Symbol(*r)
        if sym.object not in seen and sym.summary:
            seen.add(sym.object)
            out.append(sym)
    return out[:limit]


def replaced(db: sqlite3.Connection, obj_of: dict[str, str]) -> list[tuple[Symbol, str]]:
    """Deprecated or removed functions and classes whose notice names a successor the KB has
    under another short name (a member inherited from a renamed class says nothing new)."""
    rows = db.execute(
        "SELECT s.name, s.kind, COALESCE(s.object, s.name), COALESCE(s.summary, ''), "
        "s.signature, COALESCE(s.doc, ''), s.replacement FROM symbols s "
        "LEFT JOIN popularity p ON p.id = s.id "
        "WHERE s.replacement IS NOT NULL AND s.kind IN ('class', 'function') "
        "AND s.name NOT LIKE 'tf.compat.%' "
        "ORDER BY COALESCE(p.files, 0) DESC, COALESCE(p.refs, 0) DESC, s.name").fetchall()
    out = []
    for *r, successor in rows:
        short, new_short = r[0].rsplit(".", 1)[1], successor.rsplit(".", 1)[1]
        if successor in obj_of and short.lower() != new_short.lower() \
                and obj_of[successor] != r[2] and not successor.startswith("tf.compat."):
            out.append((Symbol(*r), successor))
    return out[:REPLACED]


def generate(db: sqlite3.Connection) -> tuple[list[dict], list[dict]]:
    """(training questions, held-out questions), each ``{q, accept}``."""
    obj_of = dict(db.execute("SELECT name, COALESCE(object, name) FROM symbols"))
    train, held, seen = [], [], set()

    def add(q: str | None, accept: str) -> None:
        key = " ".join(re.findall(r"[a-z0-9]+", (q or "").lower()))
        if not q or key in seen:
            return
        seen.add(key)
        (held if held_out(obj_of.get(accept, accept)) else train).append(
            {"q": q, "accept": [accept]})
    for i, sym in enumerate(popular(db, SYMBOLS)):
        add(purpose_question(sym, i), sym.name)
        for q in param_questions(sym, i):
            add(q, sym.name)
    for i, (sym, successor) in enumerate(replaced(db, obj_of)):
        add(replacement_question(sym, successor, i), successor)
    return train, held


HEADER = ("# Generated by tools/generated_questions.py from the KB's own text (docstring first\n"
          "# sentences, documented keywords, deprecation notices); never edit by hand.\n"
          "# {role}\n")
ROLE_TEXT = {TRAIN_FILE: "Training side of the split by symbol; its role is in manifest.yaml.",
             HELD_OUT_FILE: "Held-out side of the split by symbol (no symbol here has a "
                            "question in kb_generated.yaml); its role is in manifest.yaml."}


def render(file: str, items: list[dict]) -> str:
    import yaml
    body = "".join("- " + yaml.safe_dump(i, width=10_000, default_flow_style=True,
                                         sort_keys=False).strip() + "\n" for i in items)
    return HEADER.format(role=ROLE_TEXT[file]) + body


def main(argv: list[str] | None = None) -> int:
    from bot.config import load_config
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=Path, help="KB file (default: the configured one)")
    ap.add_argument("--check", action="store_true",
                    help="only say whether the shipped files are this KB's output")
    args = ap.parse_args(argv)
    db = sqlite3.connect(args.kb or load_config().kb_path)
    train, held = generate(db)
    stale = []
    for file, items in ((TRAIN_FILE, train), (HELD_OUT_FILE, held)):
        path = question_sets.DIR / file
        text = render(file, items)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(file)
            continue
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {len(items)} questions")
    if stale:
        print(f"not this KB's output: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
