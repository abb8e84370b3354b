"""Pair the task words of TensorFlow's guides and Keras examples with the symbols their code uses,
and write ``knowledge_base/qa/data/guide-phrases.npz``: vectors of those task phrases, each linked
to KB symbol names, for question search ("limit GPU memory usage" lands near the guide heading
"Use a GPU: Limiting GPU memory growth", whose code calls tf.config.experimental.set_memory_growth).

What is read: the same sources as tools/usage_counts.py (``SOURCES``: tensorflow/docs
site/en/guide + site/en/tutorials notebooks and markdown, keras-io examples and guides), from
bare git dirs. Each file becomes a stream of markdown headings, markdown sentences and code
(notebook cells; fenced blocks of .md files; keras-io .py files, whose markdown is their
top-level triple-quoted strings and whose title is the "Title:" line of the first one).

How pairs are made (rules as data: the constants below; tuned on the training questions only):
- a heading, written "parent heading: heading" for context, is linked to the KB symbols that the
  code of its whole section references (HEADING_SCOPE; a page title only to the code after it);
- a sentence of the markdown (4..40 words; no links, LaTeX, licence, notebook-button or
  "read more" boilerplate) is linked to the code that follows it up to the next markdown (one
  "segment"), if at most MAX_DISTANCE sentences stand between them (farther prose is about
  something else: the nearest sentences alone kept recall with 30% fewer phrases);
- a comment in code (a block of # lines) is a sentence linked to the lines below it;
- a name in backticks (`tf.clip_by_norm`, `model.fit()`, `Dataset.flat_map`) links its
  sentence (or heading) to that symbol directly;
- references resolve with usage_counts' rules (the file's imports, Keras 3 spellings, a few
  well-known methods by name), and "Class.member" written without its module where those two
  parts name one object; modules are left out. Objects in more than UBIQUITOUS of all segments
  (Keras glue: Dense, Model.fit/compile, Sequential, Input, Dataset.batch; printed when run)
  carry no task meaning and are dropped from code links; a phrase whose code uses more than
  MAX_TARGETS symbols keeps the MAX_TARGETS rarest. Aliases of one object count once, under the
  name the sources spell most often. Identical phrase texts are one phrase with all their links.

File layout (np.savez_compressed; no text of the sources, only vectors and KB names):
``model`` (knowledge_base.qa.semantic.MODEL), ``matrix`` int8 (n, 384) quantized like
semantic.quantize, ``offsets`` int32 (n+1) into ``targets`` (KB symbol names), ``weights``
float16 per target (1.0 for a backtick mention in the phrase itself, 1/k for each of the k
symbols of the code it is linked to; the larger when both), ``kind`` int8 per phrase (0 heading,
1 sentence or code comment, 2 sentence naming a symbol in backticks), ``sources``
("repo @ commit (date)").

Re-run (a built KB; the sources as bare git dirs, e.g. ``git clone --bare``)::

    .venv/bin/python -m tools.guide_phrases --kb $TFDESK_HOME/kb.sqlite \\
        --source tensorflow/docs=/path/to/tensorflow-docs.git \\
        --source keras-team/keras-io=/path/to/keras-io.git [--cache /tmp/guide-vectors.npz]

Reading and linking take seconds; embedding ~11k phrases takes 3-10 minutes on a 2-core CPU
(18 phrases/s measured on a busy one). ``--cache`` keeps the vectors (text hashes and vectors,
no text) so that a re-run which changes only the linking embeds nothing; ``--stats`` only counts.
tools/guide_phrases_check.py measures the file on a training question set.
"""
from __future__ import annotations

import argparse
import ast
import re
import sqlite3
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from markdown_it import MarkdownIt

from knowledge_base.qa import minilm, phrasebook, semantic
from tools.usage_counts import (SOURCES, aliases, notebook_cells, read_source,
                                references)

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "knowledge_base" / "qa" / "data" / "guide-phrases.npz"
HEADING, SENTENCE, MENTION = 0, 1, 2
MIN_WORDS, MAX_WORDS = 4, 40
UBIQUITOUS = 0.05      # share of code segments above which a symbol says nothing of the task
MAX_TARGETS = 6
MAX_DISTANCE = 2            # a sentence with more sentences than this before its code: no code link
HEADING_SCOPE = "section"   # a heading links to its whole section's code ("next": the next code)
SECTION_FROM_LEVEL = 2      # ... headings from this level down (a title would link everything)
COMMENTS = True             # code comments are sentences linked to the lines below them
# Headings that name a notebook's furniture, not a task.
BOILERPLATE_HEADINGS = re.compile(
    r"^(setup|set ?up|imports?|import (tensorflow|the libraries|dependencies).*|introduction|"
    r"overview|next steps?|conclusions?|summary|references?|resources|learn more|"
    r"further reading|acknowledg.*|licen[cs]e.*|copyright.*|.*authors?\.?|"
    r"(run|view|open) (in|on) .*|download notebook|setup and imports?)$", re.I)
# Sentences that are links, maths or boilerplate rather than prose about a task.
# Pointers elsewhere ("read more", "see the guide") say nothing of the task either.
NOISE = re.compile(r"https?://|www\.|colab|github|licen[cs]e|copyright|\$|\\[a-z]+\{|"
                   r"\.ipynb|tensorflow\.org|this (notebook|tutorial|guide) (is|was)|"
                   r"\b(read|learn|find out) more\b|for more (details|information)|"
                   r"^(see|refer to|check out)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
# A comment line; not a notebook form field, a linter's or a shell command.
_COMMENT = re.compile(r"^\s*#(?![@!%]|\s*(?:pylint|noqa|type:|TODO))\s*(.*)$")
_DOTTED = re.compile(r"([A-Za-z_]\w*\.[A-Za-z_]\w*)(?:\(.*\))?")
_TITLE = re.compile(r"^Title:\s*(.+)$", re.M)
_md = MarkdownIt("commonmark").enable("table")


# -- a file as a stream of (kind, ...) items ------------------------------------------------
# ("h", level, text, codes)   a heading; codes: the contents of its `backtick` spans
# ("s", text, codes)          a sentence of prose
# ("code", text)              code

def _inline_text(token) -> tuple[str, list[str]]:
    """An inline token's words (link texts kept, images and HTML dropped) and its code spans."""
    words, codes = [], []
    for c in token.children or []:
        if c.type == "text":
            words.append(c.content)
        elif c.type == "code_inline":
            words.append(c.content)
            codes.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            words.append(" ")
    return " ".join("".join(words).split()), codes


def markdown_items(text: str) -> list[tuple]:
    """Headings, sentences and fenced code of one markdown text, in order."""
    items: list[tuple] = []
    tokens = _md.parse(text)
    for i, t in enumerate(tokens):
        if t.type == "fence" or t.type == "code_block":
            items.append(("code", t.content))
        elif t.type == "inline" and i and tokens[i - 1].type == "heading_open":
            words, codes = _inline_text(t)
            items.append(("h", int(tokens[i - 1].tag[1]), words, codes))
        elif t.type == "inline" and i and tokens[i - 1].type == "paragraph_open":
            words, codes = _inline_text(t)
            for s in _SENTENCE_END.split(words):
                items.append(("s", s, [c for c in codes if c in s]))
    return items


def file_items(path: str, text: str) -> list[tuple]:
    """A guide, tutorial or example as one stream; a file it cannot read gives none."""
    if path.endswith(".ipynb"):
        items: list[tuple] = []
        for kind, src in notebook_cells(text) or []:
            if kind == "markdown":
                items += markdown_items(src)
            elif kind == "code":
                items.append(("code", src))
        return items
    if path.endswith(".md"):
        return markdown_items(text)
    return python_items(text)


def python_items(text: str) -> list[tuple]:
    """A keras-io example: top-level strings are markdown (the first one a header whose
    "Title:" is the page's title), everything between them code."""
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return []
    lines = text.splitlines(keepends=True)
    items: list[tuple] = []
    prev_end = 0
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            code = "".join(lines[prev_end:node.lineno - 1])
            if code.strip():
                items.append(("code", code))
            doc = node.value.value
            title = _TITLE.search(doc) if not items else None
            if title:
                items.append(("h", 1, title.group(1).strip(), []))
            else:
                items += markdown_items(doc)
            prev_end = node.end_lineno
    code = "".join(lines[prev_end:])
    if code.strip():
        items.append(("code", code))
    return items


# -- pairs -----------------------------------------------------------------------------------

@dataclass
class Raw:
    """A phrase of one file: its text and kind, the code segments it is linked to, the names it
    mentions in backticks."""
    text: str
    kind: int
    segments: list[int] = field(default_factory=list)
    mentions: set[str] = field(default_factory=set)
    own: set[str] = field(default_factory=set)  # a code comment: the names of the lines below it
    distance: int = 0  # a sentence: how many sentences stand between it and its code


def good_sentence(s: str) -> bool:
    n = len(s.split())
    return MIN_WORDS <= n <= MAX_WORDS and not NOISE.search(s) \
        and sum(ch.isalpha() for ch in s) >= 0.6 * len(s.replace(" ", ""))


def comments(code: str) -> list[tuple[str, str]]:
    """(comment, the code lines it describes) per block of comment lines in a code cell: the
    lines below it up to a blank line or the next comment."""
    out: list[tuple[str, str]] = []
    words: list[str] = []
    below: list[str] = []
    for line in [*code.splitlines(), ""]:
        m = _COMMENT.match(line)
        if m and below or not line.strip():
            if words and below:
                out.append((" ".join(words), "\n".join(below)))
            words, below = [], []
        if m:
            words.append(m.group(1).strip())
        elif line.strip() and words:
            below.append(line)
    return out


def pairs(items: list[tuple], known: set[str], short: dict[str, str] | None = None
          ) -> tuple[list[Raw], list[set[str]]]:
    """Phrases of one file linked to the segments of code that follow them, and each segment's
    KB names. A heading is written under its parent heading for context. ``short`` resolves
    backtick mentions written without their module (see ``short_names``)."""
    local = aliases("\n".join(it[1] for it in items if it[0] == "code"))
    segments: list[set[str]] = []
    phrases: list[Raw] = []
    pending: list[Raw] = []     # markdown since the last code
    heads: dict[int, str] = {}  # level -> the heading now in force
    sections: list[tuple[int, Raw]] = []  # headings whose section is open, with their level
    code: list[str] = []

    def close_segment() -> None:
        if not code:
            return
        segments.append(references("\n".join(code), known, local))
        for i, p in enumerate(pending):
            p.segments.append(len(segments) - 1)
            p.distance = len(pending) - 1 - i
        for _, p in sections:
            if not p.segments or p.segments[-1] != len(segments) - 1:
                p.segments.append(len(segments) - 1)
        pending.clear()
        code.clear()

    for it in items:
        if it[0] == "code":
            code.append(it[1])
            if COMMENTS:
                for text, lines in comments(it[1]):
                    if good_sentence(text):
                        phrases.append(Raw(text, SENTENCE,
                                           own=references(lines, known, local)))
            continue
        close_segment()
        if it[0] == "h":
            _, level, text, codes = it
            heads = {lv: h for lv, h in heads.items() if lv < level}
            sections = [(lv, p) for lv, p in sections if lv < level]
            parent = heads[max(heads)] if heads else ""
            heads[level] = text
            if not text or BOILERPLATE_HEADINGS.match(text) or NOISE.search(text):
                continue
            full = f"{parent}: {text}" if parent else text
            raw = Raw(full, HEADING, mentions=_mentions(codes, known, local, short))
            if HEADING_SCOPE == "section" and level >= SECTION_FROM_LEVEL:
                sections.append((level, raw))
                phrases.append(raw)
                continue
        else:
            _, text, codes = it
            if not good_sentence(text):
                continue
            found = _mentions(codes, known, local, short)
            raw = Raw(text, MENTION if found else SENTENCE, mentions=found)
        phrases.append(raw)
        pending.append(raw)
    close_segment()
    return phrases, segments


def _mentions(codes: list[str], known: set[str], local: dict[str, str],
              short: dict[str, str] | None) -> set[str]:
    found: set[str] = set()
    for c in codes:
        names = references(c, known, local)
        if not names and short:
            m = _DOTTED.fullmatch(c.strip())
            names = {short[m.group(1)]} if m and m.group(1) in short else set()
        found |= names
    return found


def short_names(obj_of: dict[str, str]) -> dict[str, str]:
    """"Class.member" -> its KB name, for prose that writes `Dataset.flat_map` or `Model.fit()`
    without the module; only where the two parts name one object (compat names left out)."""
    objs: dict[str, set[str]] = defaultdict(set)
    best: dict[str, str] = {}
    for name, o in obj_of.items():
        parts = name.split(".")
        if len(parts) < 3 or "compat" in parts:
            continue
        key = ".".join(parts[-2:])
        objs[key].add(o)
        if key not in best or (len(name), name) < (len(best[key]), best[key]):
            best[key] = name
    return {k: best[k] for k, o in objs.items() if len(o) == 1 and k[0].isupper()}


# -- the whole corpus ------------------------------------------------------------------------

@dataclass
class Corpus:
    phrases: list[Raw]
    segments: list[set[str]]
    sources: list[str]


def _decode(path: str, raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def read_corpus(specs: list[tuple[str, str]], known: set[str],
                short: dict[str, str] | None = None) -> Corpus:
    phrases: list[Raw] = []
    segments: list[set[str]] = []
    sources = []
    for repo, gitdir in specs:
        commit, date, files = read_source(gitdir, SOURCES[repo][1], parse=_decode)
        sources.append(f"{repo} @ {commit} ({date})")
        for path, text in sorted(files.items()):
            ps, segs = pairs(file_items(path, text), known, short)
            for p in ps:
                p.segments = [s + len(segments) for s in p.segments]
            segments += segs
            phrases += ps
    return Corpus(phrases, segments, sources)


@dataclass
class Linked:
    texts: list[str]
    kinds: list[int]
    targets: list[dict[str, float]]   # per phrase: KB name -> weight
    dropped: list[tuple[str, float]]  # the ubiquitous names and their share of segments


def link(corpus: Corpus, obj_of: dict[str, str], ubiquitous: float = UBIQUITOUS,
         max_targets: int = MAX_TARGETS, max_distance: int = MAX_DISTANCE) -> Linked:
    """Phrases with their final targets (see the module docstring), merged by text. Names not
    in ``obj_of`` (modules) are left out."""
    corpus = Corpus([Raw(p.text, p.kind, p.segments, p.mentions & obj_of.keys(),
                         p.own & obj_of.keys(), p.distance) for p in corpus.phrases],
                    [s & obj_of.keys() for s in corpus.segments], corpus.sources)
    segs = [{obj_of[n] for n in s} for s in corpus.segments]
    share = Counter(o for s in segs for o in s)
    n_segs = max(len(segs), 1)
    spelled: dict[str, Counter] = defaultdict(Counter)
    for s in corpus.segments:
        for n in s:
            spelled[obj_of[n]][n] += 1
    for p in corpus.phrases:
        for n in p.mentions | p.own:
            spelled[obj_of[n]][n] += 1
    name = {o: max(c.items(), key=lambda kv: (kv[1], -len(kv[0]), kv[0]))[0]
            for o, c in spelled.items()}
    drop = {o for o, c in share.items() if c / n_segs > ubiquitous}

    merged: dict[str, tuple[int, dict[str, float]]] = {}
    for p in corpus.phrases:
        near = p.segments if p.distance <= max_distance else []
        code = set().union(*(segs[i] for i in near), {obj_of[n] for n in p.own}) - drop
        if len(code) > max_targets:
            code = set(sorted(code, key=lambda o: (share[o], o))[:max_targets])
        weights = {name[o]: 1.0 / len(code) for o in code}
        for o in {obj_of[n] for n in p.mentions}:
            weights[name[o]] = 1.0
        if not weights:
            continue
        kind, have = merged.get(p.text, (p.kind, {}))
        for n, w in weights.items():
            have[n] = max(have.get(n, 0.0), w)
        merged[p.text] = (min(kind, p.kind), have)
    dropped = sorted(((name[o], share[o] / n_segs) for o in drop), key=lambda x: -x[1])
    texts = list(merged)
    return Linked(texts, [merged[t][0] for t in texts], [merged[t][1] for t in texts], dropped)


def embed(texts: list[str], cache: Path | None = None) -> np.ndarray:
    """Unit vectors of the texts; with a cache file (text hashes and vectors, no text), only
    the texts it lacks are embedded, and it is written back with them."""
    hashes = np.array([semantic.text_hash(t) for t in texts], np.int64)
    out = np.zeros((len(texts), minilm.DIM), np.float32)
    have: dict[int, np.ndarray] = {}
    if cache is not None and cache.is_file():
        with np.load(cache) as f:
            have = dict(zip(f["hashes"].tolist(), f["vectors"]))
    todo = [i for i, h in enumerate(hashes.tolist()) if h not in have]
    for i, h in enumerate(hashes.tolist()):
        if h in have:
            out[i] = have[h]
    if todo:
        out[todo] = _embed([texts[i] for i in todo])
    if cache is not None and todo:
        have.update(zip(hashes[todo].tolist(), out[todo]))
        np.savez(cache, hashes=np.array(list(have), np.int64),
                 vectors=np.array(list(have.values()), np.float32))
    return out


def _embed(texts: list[str]) -> np.ndarray:
    start = time.monotonic()

    def progress(done: int, total: int) -> None:
        rate = done / max(time.monotonic() - start, 1e-9)
        print(f"\rembedding phrases {done}/{total} ({rate:.0f}/s, "
              f"{(total - done) / max(rate, 1e-9):.0f} s left)", end="", file=sys.stderr)
    out = minilm.model().embed(texts, progress=progress)
    print(file=sys.stderr)
    return out


def write(path: Path, linked: Linked, vectors: np.ndarray, sources: list[str]) -> None:
    # Each phrase's targets strongest first (then by name): a stable file for a stable input.
    targets = [sorted(t.items(), key=lambda nw: (-nw[1], nw[0])) for t in linked.targets]
    phrasebook.write(path, semantic.MODEL, vectors, targets, sources=sources,
                     kinds=linked.kinds)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="a built KB (kb.sqlite)")
    ap.add_argument("--source", action="append", default=[], metavar="REPO=GITDIR",
                    help=f"one of {', '.join(SOURCES)}")
    ap.add_argument("-o", "--output", type=Path, default=OUTPUT)
    ap.add_argument("--stats", action="store_true", help="count phrases only; embed nothing")
    ap.add_argument("--cache", type=Path, help="vectors embedded before (text hashes and "
                    "vectors), reused and updated: for re-runs that change only the linking")
    args = ap.parse_args(argv)
    specs = []
    for spec in args.source:
        repo, _, gitdir = spec.partition("=")
        if repo not in SOURCES or not gitdir:
            ap.error(f"--source {spec!r}: expected REPO=GITDIR with REPO one of {list(SOURCES)}")
        specs.append((repo, gitdir))
    if not specs:
        ap.error("give at least one --source")
    db = sqlite3.connect(f"file:{args.kb}?mode=ro", uri=True)
    # Modules are left out: naming one is a path to a symbol, not a use of it.
    obj_of = {n: o or n for n, o in db.execute(
        "SELECT name, object FROM symbols WHERE kind != 'module'")}
    known = set(obj_of) | {n for (n,) in db.execute("SELECT name FROM symbols")}
    t0 = time.monotonic()
    corpus = read_corpus(specs, known, short_names(obj_of))
    linked = link(corpus, obj_of)
    print(f"read {len(corpus.phrases)} phrases, {len(corpus.segments)} code segments in "
          f"{time.monotonic() - t0:.1f} s", file=sys.stderr)
    print("dropped as ubiquitous (share of segments): " + ", ".join(
        f"{n} {s:.1%}" for n, s in linked.dropped), file=sys.stderr)
    kinds = Counter(linked.kinds)
    n_targets = sum(len(t) for t in linked.targets)
    print(f"{len(linked.texts)} distinct phrases (headings {kinds[HEADING]}, sentences "
          f"{kinds[SENTENCE]}, with a backtick mention {kinds[MENTION]}), {n_targets} links to "
          f"{len({n for t in linked.targets for n in t})} symbols", file=sys.stderr)
    if args.stats:
        return 0
    t0 = time.monotonic()
    vectors = embed(linked.texts, args.cache)
    print(f"embedded in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    write(args.output, linked, vectors, corpus.sources)
    print(f"-> {args.output} ({args.output.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
