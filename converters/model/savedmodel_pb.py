"""Read what tfdesk needs from ``saved_model.pb`` without TensorFlow.

The bot must answer "this model was made by a newer TensorFlow" or "variables are missing"
before it starts a job, and the bot environment has no TensorFlow (hence no generated
protobuf classes). The protobuf wire format is small and stable, so this walks it directly,
reading only the fields named below (field numbers from tensorflow/core/protobuf/*.proto).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from converters.model.errors import NotAModel

# tensorflow/core/framework/types.proto
DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
          7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16",
          18: "complex128", 19: "float16", 20: "resource", 21: "variant", 22: "uint32",
          23: "uint64"}

# Ops that mean "this graph holds variables", so variables/ must be present.
VARIABLE_OPS = {"VarHandleOp", "VariableV2", "Variable"}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """Yield (field_number, wire_type, value); value is int for varints, bytes otherwise."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 1:
            val, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            if pos + n > end:
                raise ValueError("truncated length-delimited field")
            val, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            val, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
        yield num, wt, val


def _first(buf: bytes, num: int, default=None):
    for n, _, v in fields(buf):
        if n == num:
            return v
    return default


def _all(buf: bytes, num: int) -> list:
    return [v for n, _, v in fields(buf) if n == num]


@dataclass
class TensorSpec:
    name: str            # signature key (what callers pass)
    tensor: str          # graph tensor name
    dtype: str
    shape: list[int | None] | None   # None: unknown rank; None entries: dynamic dims

    def to_dict(self) -> dict:
        return {"name": self.name, "tensor": self.tensor, "dtype": self.dtype,
                "shape": self.shape,
                "dynamic_dims": None if self.shape is None else
                [i for i, d in enumerate(self.shape) if d is None]}


@dataclass
class Signature:
    key: str
    method: str
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"key": self.key, "method": self.method,
                "inputs": [t.to_dict() for t in self.inputs],
                "outputs": [t.to_dict() for t in self.outputs]}


@dataclass
class MetaGraph:
    tags: list[str]
    tensorflow_version: str
    tensorflow_git_version: str
    ops: set[str]
    signatures: dict[str, Signature]

    def to_dict(self) -> dict:
        return {"tags": self.tags, "tensorflow_version": self.tensorflow_version,
                "tensorflow_git_version": self.tensorflow_git_version,
                "ops": sorted(self.ops),
                "signatures": {k: s.to_dict() for k, s in self.signatures.items()}}


def _tensor_info(key: str, buf: bytes) -> TensorSpec:
    name = _first(buf, 1, b"").decode("utf-8", "replace")
    dtype = DTYPES.get(_first(buf, 2, 0), "unknown")
    shape_buf = _first(buf, 3)
    shape: list[int | None] | None = None
    if shape_buf is not None and not _first(shape_buf, 3, 0):  # 3: unknown_rank
        shape = []
        for dim in _all(shape_buf, 2):
            size = _first(dim, 1, 0)
            size = size - (1 << 64) if size >= 1 << 63 else size  # int64 -1 on the wire
            shape.append(None if size < 0 else size)
    return TensorSpec(key, name, dtype, shape)


def _map_entries(buf_list: list[bytes]) -> Iterator[tuple[str, bytes]]:
    for entry in buf_list:
        yield _first(entry, 1, b"").decode("utf-8", "replace"), _first(entry, 2, b"")


def _ops(meta_info: bytes, graph: bytes) -> set[str]:
    ops: set[str] = set()
    stripped = _first(meta_info, 2)  # stripped_op_list: every op the graph uses
    if stripped:
        ops |= {_first(op, 1, b"").decode() for op in _all(stripped, 1)}
    if graph:
        ops |= {_first(node, 2, b"").decode() for node in _all(graph, 1)}
        library = _first(graph, 2)
        functions = _all(library, 1) if library else []
        for fn in functions:
            ops |= {_first(node, 2, b"").decode() for node in _all(fn, 3)}
        # A node may call a library function by name; that is not an op.
        ops -= {_first(_first(fn, 1, b""), 1, b"").decode() for fn in functions}
    ops.discard("")
    return ops


def parse_saved_model(path: Path) -> list[MetaGraph]:
    """Parse ``saved_model.pb`` (a file or the SavedModel folder)."""
    path = Path(path)
    pb = path / "saved_model.pb" if path.is_dir() else path
    try:
        data = pb.read_bytes()
        metas = []
        for meta in _all(data, 2):                  # SavedModel.meta_graphs
            info = _first(meta, 1, b"")             # MetaGraphDef.meta_info_def
            graph = _first(meta, 2, b"")            # MetaGraphDef.graph_def
            sigs = {}
            for key, sig in _map_entries(_all(meta, 5)):   # signature_def map
                s = Signature(key, _first(sig, 3, b"").decode())
                s.inputs = sorted((_tensor_info(k, v) for k, v in _map_entries(_all(sig, 1))),
                                  key=lambda t: t.name)
                s.outputs = sorted((_tensor_info(k, v) for k, v in _map_entries(_all(sig, 2))),
                                   key=lambda t: t.name)
                sigs[key] = s
            metas.append(MetaGraph(
                tags=[t.decode() for t in _all(info, 4)],
                tensorflow_version=_first(info, 5, b"").decode(),
                tensorflow_git_version=_first(info, 6, b"").decode(),
                ops=_ops(info, graph), signatures=sigs))
    except (ValueError, UnicodeDecodeError, TypeError) as exc:
        raise NotAModel(f"{pb.name} is not a valid SavedModel protobuf ({exc})") from None
    if not metas:
        raise NotAModel(f"{pb.name} holds no MetaGraph: not a SavedModel")
    return metas


def serving_meta(metas: list[MetaGraph], tag: str = "serve") -> MetaGraph:
    for m in metas:
        if tag in m.tags:
            return m
    raise NotAModel(f"the SavedModel has no MetaGraph tagged {tag!r} "
                    f"(tags present: {[m.tags for m in metas]})")
