"""Count how many guide, tutorial and example FILES reference each public TensorFlow object,
and write ``knowledge_base/data/usage.tsv`` (the usage half of the KB's popularity prior).

Only counts are written (facts about the sources), never their text. A file counts once per
object however often it names it, so one long tutorial cannot dominate; aliases of one object
(``tf.concat`` / ``tf.compat.v1.concat``) share one count, keyed by the KB's object identity.

Re-run (needs git and a built KB; the sources as bare git dirs, e.g. from a mirror or
``git clone --bare``)::

    .venv/bin/python -m tools.usage_counts --kb $TFDESK_HOME/kb.sqlite \\
        --source tensorflow/docs=/path/to/tensorflow-docs.git \\
        --source keras-team/keras-io=/path/to/keras-io.git \\
        -o knowledge_base/data/usage.tsv

What is read per source is in ``SOURCES``. References are resolved per file from its own
imports: ``import tensorflow as tf`` then ``tf.x.y``; ``tensorflow.x.y``; ``from tensorflow.keras
import layers`` then ``layers.Dense``; Keras 3 spellings (``import keras``, ``from keras import
ops``, ``keras.ops.concatenate``) map onto the ``tf.keras.*`` names the KB has. A reference
counts as the longest prefix of it that is a KB name. Method calls on plain variables
(``model.fit(``, ``ds.batch(``) cannot be typed without running the code, so a short list of
well-known method names is mapped by name (``METHODS``), skipping receivers that are clearly
something else (``np.random.shuffle(``).
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict

# repo -> (what is read, path pattern)
SOURCES = {
    "tensorflow/docs": ("site/en/guide and site/en/tutorials, *.ipynb and *.md",
                        re.compile(r"^site/en/(guide|tutorials)/.*\.(ipynb|md)$")),
    "keras-team/keras-io": ("examples/**/*.py and guides/*.py",
                            re.compile(r"^(examples/.+|guides/[^/]+)\.py$")),
}

# Well-known methods, by name, for receivers the text cannot type (see the module docstring).
METHODS = {
    **{m: f"tf.keras.Model.{m}" for m in (
        "fit", "predict", "evaluate", "compile", "summary", "save_weights", "load_weights",
        "train_on_batch", "predict_on_batch", "get_weights")},
    **{m: f"tf.data.Dataset.{m}" for m in (
        "batch", "shuffle", "prefetch", "map", "cache", "repeat", "take", "skip", "unbatch",
        "padded_batch", "interleave", "as_numpy_iterator")},
    "gradient": "tf.GradientTape.gradient",
    "apply_gradients": "tf.keras.optimizers.Optimizer.apply_gradients",
    "assign": "tf.Variable.assign",
    "assign_add": "tf.Variable.assign_add",
}
# Receivers whose methods are not TensorFlow's (numpy's shuffle/repeat/take, pandas' map ...).
FOREIGN = {"np", "numpy", "random", "pd", "pandas", "jnp", "jax", "torch", "math", "os", "re",
           "plt", "json", "sklearn", "itertools", "functools", "rng", "str"}

# Python module path -> the KB's name for it.
_ROOTS = {"tensorflow": "tf", "keras": "tf.keras", "tf_keras": "tf.keras",
          "keras_core": "tf.keras"}
_DEFAULT_ALIASES = {"tf": "tf", "tensorflow": "tf", "keras": "tf.keras"}

_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\s*\()?")
_LEADING_METHOD = re.compile(r"(?:[)\]]|^)[ \t]*\.([A-Za-z_]\w*)\s*\(", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)$", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[\w \t,]+)", re.M)


def kb_name(module: str) -> str | None:
    root, _, rest = module.partition(".")
    base = _ROOTS.get(root)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


def aliases(text: str) -> dict[str, str]:
    """Local name -> KB name, from the file's import statements."""
    out = dict(_DEFAULT_ALIASES)
    for m in _IMPORT.finditer(text):
        for part in m.group(1).split(","):
            words = part.split()
            if not words:
                continue
            target = kb_name(words[0])
            if target is None:
                continue
            if len(words) == 3 and words[1] == "as":
                out[words[2]] = target
    for m in _FROM.finditer(text):
        base = kb_name(m.group(1))
        if base is None:
            continue
        for part in m.group(2).strip("()").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            local = words[2] if len(words) == 3 and words[1] == "as" else words[0]
            out[local] = f"{base}.{words[0]}"
    return out


def references(text: str, known: set[str], local: dict[str, str] | None = None) -> set[str]:
    """The KB names a text refers to; ``local`` is the import aliases in force (by default the
    text's own: a whole file; a notebook cell passes its file's)."""
    local = aliases(text) if local is None else local
    found: set[str] = set()
    for m in _CHAIN.finditer(text):
        parts = m.group(1).split(".")
        called = m.group(2) is not None
        head = local.get(parts[0])
        if head is None:
            if called and len(parts) > 1 and parts[-1] in METHODS and parts[0] not in FOREIGN:
                found.add(METHODS[parts[-1]])
            continue
        full = [*head.split("."), *parts[1:]]
        for n in range(len(full), 1, -1):  # longest prefix the KB knows; never bare "tf"
            name = ".".join(full[:n])
            if name in known:
                found.add(name)
                break
    for m in _LEADING_METHOD.finditer(text):  # ds.shuffle(10)\n  .batch(2) / f(x).map(g)
        if m.group(1) in METHODS:
            found.add(METHODS[m.group(1)])
    return found & known


def notebook_cells(text: str) -> list[tuple[str, str]] | None:
    """(cell type, source) per cell of a notebook's JSON; None when it is not JSON."""
    try:
        cells = json.loads(text).get("cells", [])
    except json.JSONDecodeError:
        return None
    return [(str(c.get("cell_type", "")),
             "".join(c.get("source", [])) if isinstance(c.get("source"), list)
             else str(c.get("source", ""))) for c in cells]


def file_text(path: str, raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    cells = notebook_cells(text) if path.endswith(".ipynb") else None
    return text if cells is None else "\n".join(src for _, src in cells)


def git(gitdir: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], input=data,
                          capture_output=True, check=True).stdout


def read_source(gitdir: str, pattern: re.Pattern,
                parse=file_text) -> tuple[str, str, dict[str, object]]:
    """(commit, date, path -> parse(path, bytes)) for the files of HEAD matching pattern."""
    commit = git(gitdir, "rev-parse", "HEAD").decode().strip()
    date = git(gitdir, "log", "-1", "--format=%cs", "HEAD").decode().strip()
    paths = [p for p in git(gitdir, "ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
             if pattern.match(p)]
    blob = git(gitdir, "cat-file", "--batch", data="".join(f"HEAD:{p}\n" for p in paths).encode())
    files, pos = {}, 0
    for p in paths:  # cat-file --batch: "<sha> <type> <size>\n<content>\n" per request
        nl = blob.index(b"\n", pos)
        size = int(blob[pos:nl].split()[2])
        files[p] = parse(p, blob[nl + 1:nl + 1 + size])
        pos = nl + 1 + size + 1
    return commit, date, files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="a built KB (kb.sqlite)")
    ap.add_argument("--source", action="append", required=True, metavar="REPO=GITDIR",
                    help=f"one of {', '.join(SOURCES)}")
    ap.add_argument("--note", action="append", default=[], help="an extra header line")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)

    db = sqlite3.connect(f"file:{args.kb}?mode=ro", uri=True)
    # Modules are left out: naming one is a path to a symbol, not a use of it.
    syms = list(db.execute("SELECT name, object, canonical FROM symbols WHERE kind != 'module'"))
    obj_of = {n: o or n for n, o, _ in syms}
    canonical = {n: c for n, _, c in syms}
    known = set(obj_of) | {n for (n,) in db.execute("SELECT name FROM symbols")}

    header = [f"# Usage counts for tfdesk's popularity prior, written by tools/usage_counts.py "
              f"on {time.strftime('%Y-%m-%d', time.gmtime())}.",
              "# Each line: an object's most-used public name, TAB, how many source files "
              "reference the object (under any of its names; once per file); modules left out.",
              "# Resolution: imports, tf./tensorflow./keras. spellings mapped to tf.* names, "
              "a few well-known methods by name (METHODS in the script)."]
    per_obj: dict[str, int] = Counter()
    spelled: dict[str, Counter] = defaultdict(Counter)
    for spec in args.source:
        repo, _, gitdir = spec.partition("=")
        if repo not in SOURCES or not gitdir:
            ap.error(f"--source {spec!r}: expected REPO=GITDIR with REPO one of {list(SOURCES)}")
        what, pattern = SOURCES[repo]
        commit, date, files = read_source(gitdir, pattern)
        header.append(f"# source: {repo} @ {commit} ({date}): {what}; {len(files)} files")
        for text in files.values():
            names = references(text, known) & obj_of.keys()
            for obj in {obj_of[n] for n in names}:
                per_obj[obj] += 1
            for n in names:
                spelled[obj_of[n]][n] += 1
    header += [f"# note: {line}" for line in args.note]

    rows = []
    for obj, count in per_obj.items():
        best = max(spelled[obj].items(),
                   key=lambda kv: (kv[1], canonical.get(kv[0]) == kv[0], -len(kv[0]), kv[0]))
        rows.append((best[0], count))
    rows.sort(key=lambda r: (-r[1], r[0]))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + "\n")
        f.writelines(f"{name}\t{count}\n" for name, count in rows)
    print(f"{len(rows)} objects with >= 1 file -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
