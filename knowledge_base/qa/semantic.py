"""Semantic index: what a question means, not only which words it shares with a docstring.

Each searchable symbol is embedded twice with all-MiniLM-L6-v2 (``knowledge_base/minilm.py``),
a sentence model trained on question/answer pairs, so "stop tensorflow from taking all the gpu
memory" lands near ``set_memory_growth``'s docstring although they share one word: its name
words, summary and the opening of its docstring ("doc" view), and its full name with the
summary alone ("name" view: sharper for short questions, where a docstring's details blur the
match). A question is answered by one matrix product per view over the stored vectors.

Embedding every symbol takes a couple of minutes on a CPU, too long for ``kb load``, so the
vectors ship beside the extract (``kb-extract.vectors.npz``: int8, keyed by symbol name and a
hash of the embedded text). A build reuses every shipped vector whose text is unchanged and
embeds only the rest; ``kb build --export`` writes the file anew.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowledge_base.qa import minilm
from knowledge_base.errors import KBError

MODEL = f"{minilm.NAME} int8"
VIEWS = ("doc", "name")
SHIPPED_VECTORS = Path(__file__).parents[1] / "data" / "kb-extract.vectors.npz"
TEXT_HEAD = 300   # docstring characters embedded
MINILM_SUFFIX = ".minilm"  # the model's weights prepared beside the KB (knowledge_base/prepared.py)


class SemanticUnavailable(KBError):
    pass


def vectors_path(extract: Path) -> Path:
    """Where the vectors of an extract live: kb-extract.jsonl.xz -> kb-extract.vectors.npz."""
    return extract.with_name(extract.name.split(".")[0] + ".vectors.npz")


def symbol_text(leaf_words: str, path_words: str, summary: str, doc: str) -> str:
    """The "doc" view: the name's words, the summary, then the docstring's opening up to its
    argument list, and where it lives."""
    body = doc.split("\nArgs:")[0].split("\n```")[0]
    head = " ".join(body.split())[:TEXT_HEAD]
    if not head.startswith(summary[:40]):
        head = f"{summary} {head}"
    return f"{leaf_words}. {head} ({path_words})"


def name_text(name: str, summary: str) -> str:
    """The "name" view: the full name and the one-line summary."""
    return f"{name}: {summary}" if summary else name


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{MODEL}\0{text}".encode(), digest_size=8).digest(),
                          "little", signed=True)


def quantize(v: np.ndarray) -> np.ndarray:
    """int8 rows, each scaled by its own largest component (the direction is what counts:
    rows are renormalized when loaded)."""
    scale = np.maximum(np.abs(v).max(axis=1, keepdims=True), 1e-12)
    return np.clip(np.rint(v / scale * 127), -127, 127).astype(np.int8)


def read_shipped(path: Path | None) -> dict[str, dict[str, tuple[int, np.ndarray]]]:
    """view -> name -> (text hash, int8 row) from a vectors file; empty when there is none or
    it comes from another model."""
    if path is None or not path.is_file():
        return {}
    out: dict[str, dict[str, tuple[int, np.ndarray]]] = {}
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["model"]) != MODEL:
                return {}
            names = [str(n) for n in f["names"]]
            for view in VIEWS:
                if f"{view}_matrix" in f.files:
                    hashes, matrix = f[f"{view}_hashes"], f[f"{view}_matrix"]
                    out[view] = {n: (int(h), matrix[i])
                                 for i, (n, h) in enumerate(zip(names, hashes))}
    except (OSError, KeyError, ValueError):
        return {}  # a damaged file is recomputed, not trusted
    return out


def build(db, rows: list[tuple[int, str, str, str]], shipped: Path | None = None,
          progress=None) -> dict:
    """Store the vectors of (id, name, doc text, name text) rows in the KB's ``vectors``
    table, reusing shipped vectors whose text is unchanged and embedding the rest."""
    known = read_shipped(shipped)
    ids = np.array([r[0] for r in rows], dtype=np.int32)
    blobs, embedded = [], 0
    for v, view in enumerate(VIEWS):
        texts = [r[2 + v] for r in rows]
        hashes = np.array([text_hash(t) for t in texts], dtype=np.int64)
        q = np.zeros((len(rows), minilm.DIM), np.int8)
        have = known.get(view, {})
        todo = []
        for i, r in enumerate(rows):
            hit = have.get(r[1])
            if hit is not None and hit[0] == hashes[i]:
                q[i] = hit[1]
            else:
                todo.append(i)
        if todo:
            try:
                model = minilm.model()
            except KBError as exc:
                raise SemanticUnavailable(str(exc)) from None

            def step(done, total, view=view):
                if progress:
                    progress(f"embedding symbols for question search ({view})", done, total)
            q[todo] = quantize(model.embed([texts[i] for i in todo], progress=step))
        embedded += len(todo)
        blobs += [hashes.tobytes(), q.tobytes()]
    db.execute("DROP TABLE IF EXISTS vectors")
    db.execute("CREATE TABLE vectors (model TEXT, dim INTEGER, ids BLOB, "
               + ", ".join(f"{v}_hashes BLOB, {v}_matrix BLOB" for v in VIEWS) + ")")
    db.execute(f"INSERT INTO vectors VALUES ({', '.join('?' * (3 + 2 * len(VIEWS)))})",
               (MODEL, minilm.DIM, ids.tobytes(), *blobs))
    return {"vectors": len(ids), "vectors_embedded": embedded}


def export(db, path: Path) -> int:
    """Write the KB's vectors, keyed by symbol name, for a later build to reuse."""
    cols = ", ".join(f"{v}_hashes, {v}_matrix" for v in VIEWS)
    try:
        row = db.execute(f"SELECT model, dim, ids, {cols} FROM vectors").fetchone()
    except Exception:  # noqa: BLE001 - an older KB file: other columns, or no table
        row = None
    if row is None:
        raise SemanticUnavailable("this KB has no semantic index to export")
    model, dim, ids, *blobs = row
    ids_a = np.frombuffer(ids, dtype=np.int32)
    names = dict(db.execute("SELECT id, name FROM symbols"))
    arrays = {}
    for v, view in enumerate(VIEWS):
        arrays[f"{view}_hashes"] = np.frombuffer(blobs[2 * v], dtype=np.int64)
        arrays[f"{view}_matrix"] = np.frombuffer(blobs[2 * v + 1], dtype=np.int8).reshape(
            len(ids_a), dim)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, model=np.array(model), names=np.array([names[i] for i in ids_a]),
                        **arrays)
    tmp.replace(path)
    return len(ids_a)


@dataclass(frozen=True)
class Vectors:
    """The semantic index as the KB build's derived index (builder.DerivedIndex): reuses the
    vectors shipped in ``shipped`` where a symbol's text is unchanged, embeds the rest."""
    shipped: Path | None = SHIPPED_VECTORS

    @classmethod
    def beside(cls, extract: Path) -> "Vectors":
        return cls(vectors_path(extract))

    def inputs(self) -> list[Path]:
        return [self.shipped] if self.shipped is not None and self.shipped.is_file() else []

    def build(self, conn, rows, progress) -> dict:
        return build(conn, [(r.id, r.name, symbol_text(r.words, r.path, r.summary, r.doc),
                             name_text(r.name, r.summary)) for r in rows],
                     self.shipped, progress)

    def export(self, conn, extract: Path) -> None:
        export(conn, vectors_path(extract))


@dataclass
class Index:
    ids: np.ndarray                 # (n,) symbol ids
    matrices: dict[str, np.ndarray]  # view -> (n, dim) float32, rows of unit length
    model: minilm.MiniLM

    @classmethod
    def load(cls, db) -> "Index":
        cols = ", ".join(f"{v}_matrix" for v in VIEWS)
        try:
            row = db.execute(f"SELECT model, dim, ids, {cols} FROM vectors").fetchone()
        except Exception:  # noqa: BLE001 - an older KB file: no vectors table or other columns
            row = None
        if row is None:
            raise SemanticUnavailable("this KB has no semantic index; rebuild it with "
                                      "'tfdesk kb load --force'")
        model, dim, ids, *blobs = row
        if model != MODEL:
            raise SemanticUnavailable(f"the KB's vectors come from {model!r}, this tfdesk "
                                      f"embeds with {MODEL!r}; run 'tfdesk kb load --force'")
        from knowledge_base import prepared
        try:
            encoder = minilm.model(prepared.beside(db, MINILM_SUFFIX))
        except KBError as exc:
            raise SemanticUnavailable(str(exc)) from None
        ids_a = np.frombuffer(ids, dtype=np.int32)
        matrices = {}
        for view, blob in zip(VIEWS, blobs):
            m = np.frombuffer(blob, dtype=np.int8).reshape(len(ids_a), dim).astype(np.float32)
            m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)
            matrices[view] = m
        return cls(ids_a, matrices, encoder)

    def __post_init__(self) -> None:
        self.row_of = {int(sid): i for i, sid in enumerate(self.ids)}
        self._last: tuple[str, np.ndarray] | None = None

    def vector(self, text: str) -> np.ndarray:
        # A question is embedded once although it is asked for several times (neighbours in
        # each view, then the similarity of candidates that other signals found).
        # One read of the cache: Slack's threads share the index, and another question may
        # replace the entry between a check and a second read.
        last = self._last
        if last is None or last[0] != text:
            last = self._last = (text, self.model.embed([text])[0])
        return last[1]

    def similarity(self, text: str, ids: list[int], view: str = "doc") -> list[float]:
        """Cosine similarity of ``text`` and each symbol (0 for one not in the index)."""
        v = self.vector(text)
        rows = [self.row_of.get(i, -1) for i in ids]
        sims = self.matrices[view][[r for r in rows if r >= 0]] @ v
        it = iter(sims.tolist())
        return [next(it) if r >= 0 else 0.0 for r in rows]

    def query(self, text: str, k: int = 40, view: str = "doc") -> list[tuple[int, float]]:
        """The k symbols whose text is nearest in meaning, with cosine similarity."""
        v = self.vector(text)
        sims = self.matrices[view] @ v
        k = min(k, len(sims))
        if k == 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [(int(self.ids[i]), float(sims[i])) for i in top]
