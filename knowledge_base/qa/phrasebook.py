"""Phrasebooks: sentences already known to point at symbols, kept as vectors.

A docstring says what a symbol does in its author's words; users ask in task words ("limit
GPU memory usage", "stop training when the loss stops improving"). Two books link such words
to symbols, and a question near one of their sentences in meaning finds its symbols:

- ``asked.npz``: questions with known answers, in our own words (the sets of ``sets/`` that
  their manifest puts in the book, written by ``tools/asked_book.py``): "asked before".
- ``guide-phrases.npz``: headings and sentences of TensorFlow's guides and the Keras examples,
  each linked to the symbols the code after it uses (``tools/guide_phrases.py``). Only the
  vectors, the symbol names and the link weights ship, never the guides' text.

Both hold MiniLM vectors (int8, like the symbols' own, ``semantic.py``), one row a sentence,
and its targets as ``offsets`` into ``targets`` (symbol names) with a weight each.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
BOOKS = {"asked": DATA / "asked.npz", "guide": DATA / "guide-phrases.npz"}


def key(text: str) -> int:
    """A sentence's identity in a book: so a training question can leave itself out."""
    norm = " ".join(text.lower().split())
    return int.from_bytes(hashlib.blake2b(norm.encode(), digest_size=8).digest(), "little",
                          signed=True)


@dataclass
class Book:
    matrix: np.ndarray    # (n, dim) float32, unit rows
    offsets: np.ndarray   # (n + 1,) into targets
    targets: np.ndarray   # symbol ids, -1 where the KB lacks the name
    weights: np.ndarray   # link strength per target
    keys: np.ndarray      # (n,) sentence keys (zeros where the book has none)
    origin: np.ndarray    # (n,) index into files (-1 where unknown)
    files: tuple[str, ...]

    @classmethod
    def load(cls, path: Path, model: str, name_to_id: dict[str, int]) -> "Book | None":
        """The book at ``path``, or None when there is none or its vectors come from
        another model (a wrong-model book would match nothing sensibly, so it is left out)."""
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                if str(f["model"]) != model:
                    return None
                m = f["matrix"].astype(np.float32)
                m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)
                n = len(m)
                return cls(
                    m, f["offsets"].astype(np.int64),
                    np.array([name_to_id.get(str(t), -1) for t in f["targets"]], np.int64),
                    f["weights"].astype(np.float32),
                    f["keys"] if "keys" in f.files else np.zeros(n, np.int64),
                    f["origin"] if "origin" in f.files else np.full(n, -1, np.int64),
                    tuple(str(x) for x in f["files"]) if "files" in f.files else ())
        except (OSError, KeyError, ValueError):
            return None

    def __len__(self) -> int:
        return len(self.matrix)

    def evidence(self, v: np.ndarray, k: int, leave_out: tuple[tuple[str, ...], int] = ((), 0)
                 ) -> dict[int, tuple[float, int, float, int]]:
        """symbol id -> (best cosine, rank of that sentence, its link weight, how many of the
        k nearest sentences point at the symbol), over the k sentences nearest to ``v``.
        ``leave_out`` = (files, key): a training question does not see its own file (nor one
        that paraphrases it) or its own text, as a new user's question would not be in the
        book."""
        sims = self.matrix @ v
        files, own = leave_out
        for file in files:
            if file in self.files:
                sims[self.origin == self.files.index(file)] = -2.0
        if own:
            sims[self.keys == own] = -2.0
        k = min(k, len(sims))
        if k <= 0:
            return {}
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        out: dict[int, tuple[float, int, float, int]] = {}
        for rank, row in enumerate(top.tolist()):
            c = float(sims[row])
            if c <= -1.5:
                break
            for j in range(self.offsets[row], self.offsets[row + 1]):
                sid = int(self.targets[j])
                if sid < 0:
                    continue
                old = out.get(sid)
                if old is None:
                    out[sid] = (c, rank, float(self.weights[j]), 1)
                else:
                    out[sid] = (*old[:3], old[3] + 1)
        return out


def load_all(model: str, name_to_id: dict[str, int],
             books: dict[str, Path] = BOOKS) -> dict[str, Book]:
    out = {}
    for name, path in books.items():
        book = Book.load(path, model, name_to_id)
        if book is not None and len(book):
            out[name] = book
    return out


ARRAYS = ("matrix", "offsets", "targets", "weights", "keys", "origin")


def pack(books: dict[str, Book]) -> dict:
    """The books as named arrays and values (knowledge_base/prepared.py keeps them)."""
    out: dict = {"books": list(books)}
    for name, book in books.items():
        out.update({f"book.{name}.{a}": getattr(book, a) for a in ARRAYS})
        out[f"book.{name}.files"] = list(book.files)
    return out


def unpack(packed: dict) -> dict[str, Book]:
    return {name: Book(*(packed[f"book.{name}.{a}"] for a in ARRAYS),
                       tuple(packed[f"book.{name}.files"])) for name in packed["books"]}


def write(path: Path, model: str, vectors: np.ndarray, targets: list[list[tuple[str, float]]],
          keys: list[int] | None = None, origin: list[int] | None = None,
          files: list[str] | None = None, sources: list[str] | None = None,
          kinds: list[int] | None = None) -> None:
    """Write a book: int8 vectors (quantized like the symbols'), targets per sentence, and
    optionally each sentence's key, origin file and kind (heading, sentence... as the tool
    that wrote it defines them)."""
    from knowledge_base.qa.semantic import quantize
    offsets = np.cumsum([0] + [len(t) for t in targets]).astype(np.int32)
    arrays = dict(model=np.array(model), matrix=quantize(vectors),
                  offsets=offsets,
                  targets=np.array([n for t in targets for n, _ in t]),
                  weights=np.array([w for t in targets for _, w in t], np.float16))
    if keys is not None:
        arrays["keys"] = np.array(keys, np.int64)
    if origin is not None:
        arrays["origin"] = np.array(origin, np.int16)
        arrays["files"] = np.array(files or [])
    if kinds is not None:
        arrays["kind"] = np.array(kinds, np.int8)
    arrays["sources"] = np.array(sources or [])
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
