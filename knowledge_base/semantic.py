"""Semantic index: what a question means, not only which words it shares with a docstring.

Each searchable symbol's name words, summary and the opening of its docstring are embedded
with all-MiniLM-L6-v2 (``knowledge_base/minilm.py``): a sentence model trained on question/
answer pairs, so "stop tensorflow from taking all the gpu memory" lands near
``set_memory_growth``'s docstring although they share one word. A question is answered by
one matrix product over the stored vectors.

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

from knowledge_base import minilm
from knowledge_base.errors import KBError

MODEL = f"{minilm.NAME} int8"
SHIPPED_VECTORS = Path(__file__).parent / "data" / "kb-extract.vectors.npz"
TEXT_HEAD = 300   # docstring characters embedded


class SemanticUnavailable(KBError):
    pass


def vectors_path(extract: Path) -> Path:
    """Where the vectors of an extract live: kb-extract.jsonl.xz -> kb-extract.vectors.npz."""
    return extract.with_name(extract.name.split(".")[0] + ".vectors.npz")


def symbol_text(leaf_words: str, path_words: str, summary: str, doc: str) -> str:
    """What a symbol is embedded as: its name's words, the summary, then the docstring's
    opening up to its argument list, and where it lives."""
    body = doc.split("\nArgs:")[0].split("\n```")[0]
    head = " ".join(body.split())[:TEXT_HEAD]
    if not head.startswith(summary[:40]):
        head = f"{summary} {head}"
    return f"{leaf_words}. {head} ({path_words})"


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{MODEL}\0{text}".encode(), digest_size=8).digest(),
                          "little", signed=True)


def quantize(v: np.ndarray) -> np.ndarray:
    """int8 rows, each scaled by its own largest component (the direction is what counts:
    rows are renormalized when loaded)."""
    scale = np.maximum(np.abs(v).max(axis=1, keepdims=True), 1e-12)
    return np.clip(np.rint(v / scale * 127), -127, 127).astype(np.int8)


def read_shipped(path: Path | None) -> dict[str, tuple[int, np.ndarray]]:
    """name -> (text hash, int8 row) from a vectors file; empty when there is none or it
    comes from another model."""
    if path is None or not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["model"]) != MODEL:
                return {}
            names, hashes, matrix = f["names"], f["hashes"], f["matrix"]
    except (OSError, KeyError, ValueError):
        return {}  # a damaged file is recomputed, not trusted
    return {str(n): (int(h), matrix[i]) for i, (n, h) in enumerate(zip(names, hashes))}


def build(db, rows: list[tuple[int, str, str]], shipped: Path | None = None,
          progress=None) -> dict:
    """Store the vectors of (id, name, text) rows in the KB's ``vectors`` table, reusing
    shipped vectors whose text is unchanged and embedding the rest."""
    known = read_shipped(shipped)
    hashes = np.array([text_hash(t) for _, _, t in rows], dtype=np.int64)
    q = np.zeros((len(rows), minilm.DIM), np.int8)
    todo = []
    for i, (_, name, _) in enumerate(rows):
        hit = known.get(name)
        if hit is not None and hit[0] == hashes[i]:
            q[i] = hit[1]
        else:
            todo.append(i)
    if todo:
        try:
            model = minilm.model()
        except KBError as exc:
            raise SemanticUnavailable(str(exc)) from None

        def step(done, total):
            if progress:
                progress("embedding symbols for question search", done, total)
        q[todo] = quantize(model.embed([rows[i][2] for i in todo], progress=step))
    ids = np.array([r[0] for r in rows], dtype=np.int32)
    db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, dim INTEGER, ids BLOB, "
               "hashes BLOB, matrix BLOB)")
    db.execute("DELETE FROM vectors")
    db.execute("INSERT INTO vectors VALUES (?, ?, ?, ?, ?)",
               (MODEL, minilm.DIM, ids.tobytes(), hashes.tobytes(), q.tobytes()))
    return {"vectors": len(ids), "vectors_embedded": len(todo)}


def export(db, path: Path) -> int:
    """Write the KB's vectors, keyed by symbol name, for a later build to reuse."""
    row = db.execute("SELECT model, dim, ids, hashes, matrix FROM vectors").fetchone()
    if row is None:
        raise SemanticUnavailable("this KB has no semantic index to export")
    model, dim, ids, hashes, matrix = row
    ids_a = np.frombuffer(ids, dtype=np.int32)
    names = dict(db.execute("SELECT id, name FROM symbols"))
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, model=np.array(model), names=np.array([names[i] for i in ids_a]),
                        hashes=np.frombuffer(hashes, dtype=np.int64),
                        matrix=np.frombuffer(matrix, dtype=np.int8).reshape(len(ids_a), dim))
    tmp.replace(path)
    return len(ids_a)


@dataclass
class Index:
    ids: np.ndarray        # (n,) symbol ids
    matrix: np.ndarray     # (n, dim) float32, rows of unit length (dequantized)
    model: minilm.MiniLM

    @classmethod
    def load(cls, db) -> "Index":
        try:
            row = db.execute("SELECT model, dim, ids, matrix FROM vectors").fetchone()
        except Exception:  # noqa: BLE001 - an older KB file has no vectors table
            row = None
        if row is None:
            raise SemanticUnavailable("this KB has no semantic index; rebuild it with "
                                      "'tfdesk kb load --force'")
        model, dim, ids, matrix = row
        if model != MODEL:
            raise SemanticUnavailable(f"the KB's vectors come from {model!r}, this tfdesk "
                                      f"embeds with {MODEL!r}; run 'tfdesk kb load --force'")
        try:
            encoder = minilm.model()
        except KBError as exc:
            raise SemanticUnavailable(str(exc)) from None
        ids_a = np.frombuffer(ids, dtype=np.int32)
        m = np.frombuffer(matrix, dtype=np.int8).reshape(len(ids_a), dim).astype(np.float32)
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)
        return cls(ids_a, m, encoder)

    def __post_init__(self) -> None:
        self.row_of = {int(sid): i for i, sid in enumerate(self.ids)}
        self._last: tuple[str, np.ndarray] | None = None

    def vector(self, text: str) -> np.ndarray:
        # A question is embedded once although it is asked for twice (neighbours, then the
        # similarity of the candidates that other signals found).
        if self._last is None or self._last[0] != text:
            self._last = (text, self.model.embed([text])[0])
        return self._last[1]

    def similarity(self, text: str, ids: list[int]) -> list[float]:
        """Cosine similarity of ``text`` and each symbol (0 for one not in the index)."""
        v = self.vector(text)
        rows = [self.row_of.get(i, -1) for i in ids]
        sims = self.matrix[[r for r in rows if r >= 0]] @ v
        it = iter(sims.tolist())
        return [next(it) if r >= 0 else 0.0 for r in rows]

    def query(self, text: str, k: int = 40) -> list[tuple[int, float]]:
        """The k symbols whose text is nearest in meaning, with cosine similarity."""
        v = self.vector(text)
        sims = self.matrix @ v
        k = min(k, len(sims))
        if k == 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [(int(self.ids[i]), float(sims[i])) for i in top]
