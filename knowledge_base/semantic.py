"""Semantic index: what a question means, not only which words it shares with a docstring.

Each searchable symbol's name words, summary and the opening of its docstring are embedded
once, at ``kb load``/``kb build``, with WordLlama's static token embeddings (the ``wordllama``
package carries its weights and tokenizer: nothing is downloaded, no torch or TensorFlow is
imported, embedding a question takes well under a millisecond). The vectors are stored
quantized (int8) in the KB file; a question is answered by one matrix product.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowledge_base.errors import KBError

MODEL = "wordllama l2_supercat 256"
TEXT_HEAD = 300   # docstring characters embedded


class SemanticUnavailable(KBError):
    pass


class Embedder:
    """WordLlama's bundled l2_supercat model, loaded from the package's own files."""

    def __init__(self) -> None:
        try:
            import wordllama
            from safetensors import safe_open
            from wordllama import WordLlama
            from wordllama.inference import WordLlamaInference
        except ImportError as exc:  # pragma: no cover - the dependency is declared
            raise SemanticUnavailable(f"the wordllama package is not installed ({exc}); "
                                      "question search uses words only") from None
        root = Path(wordllama.__file__).parent
        weights = root / "weights" / "l2_supercat_256.safetensors"
        tokenizer = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
        if not weights.is_file() or not tokenizer.is_file():
            raise SemanticUnavailable(f"wordllama at {root} lacks its bundled l2_supercat files")
        # WordLlama.load() looks for the tokenizer under "tokenizer/" (the package ships
        # "tokenizers/") and then tries the network; build the model from the files instead.
        with safe_open(str(weights), framework="np", device="cpu") as f:
            table = f.get_tensor("embedding.weight")
        self.model = WordLlamaInference(table, WordLlama.load_tokenizer(tokenizer), binary=False)
        self.dim = table.shape[1]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, one row per text (float32)."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        v = np.asarray(self.model.embed(texts, norm=True, batch_size=256), dtype=np.float32)
        return v


@functools.lru_cache(maxsize=1)
def embedder() -> Embedder:
    return Embedder()


def symbol_text(leaf_words: str, path_words: str, summary: str, doc: str) -> str:
    """What a symbol is embedded as: its name's words (twice: a name says most about what it
    does), the summary, then the docstring's opening up to its argument list."""
    body = doc.split("\nArgs:")[0].split("\n```")[0]
    head = " ".join(body.split())[:TEXT_HEAD]
    if not head.startswith(summary[:40]):
        head = f"{summary} {head}"
    return f"{leaf_words}. {leaf_words}. {head} ({path_words})"


def build(db, rows: list[tuple[int, str]]) -> dict:
    """Embed (id, text) rows and store them in the KB's ``vectors`` table (one row holding
    the id list and the int8 matrix)."""
    emb = embedder()
    ids = np.array([r[0] for r in rows], dtype=np.int32)
    vecs = emb.embed([r[1] for r in rows])
    q = np.clip(np.rint(vecs * 127), -127, 127).astype(np.int8)
    db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, dim INTEGER, ids BLOB, matrix BLOB)")
    db.execute("DELETE FROM vectors")
    db.execute("INSERT INTO vectors VALUES (?, ?, ?, ?)",
               (MODEL, emb.dim, ids.tobytes(), q.tobytes()))
    return {"vectors": len(ids)}


@dataclass
class Index:
    ids: np.ndarray        # (n,) symbol ids
    matrix: np.ndarray     # (n, dim) float32, rows of unit length (dequantized)
    emb: Embedder

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
        ids_a = np.frombuffer(ids, dtype=np.int32)
        m = np.frombuffer(matrix, dtype=np.int8).reshape(len(ids_a), dim).astype(np.float32)
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)
        return cls(ids_a, m, embedder())

    def query(self, text: str, k: int = 40) -> list[tuple[int, float]]:
        """The k symbols whose text is nearest in meaning, with cosine similarity."""
        v = self.emb.embed([text])[0]
        sims = self.matrix @ v
        k = min(k, len(sims))
        if k == 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [(int(self.ids[i]), float(sims[i])) for i in top]
