"""Models are data: refuse the ones that would run code or touch files when loaded or served.

Keras files: a ``Lambda`` layer stores Python bytecode that runs when the model loads (Keras'
``safe_mode`` covers only the v3 ``.keras`` format, not legacy ``.h5``), and a custom object
names a module to import. Both are read from the model's config JSON, never by loading it.

SavedModels: ops that read or write files or call back into Python, found in the graph
without TensorFlow (``savedmodel_pb``). Checkpoint ops are in every SavedModel (its save and
restore functions), so those count only when a serving signature reaches them.

``allow_code`` (``--allow-code``, a compute right) lets a trusted model through.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Iterator

from converters.model.errors import NotAModel, UnsafeModel
from converters.model.savedmodel_pb import _all, _first, fields

ALLOW_HINT = ("if you trust this model and its author, run it again with --allow-code "
              "(needs the compute right)")

# op -> (what it does, where it counts): "graph" anywhere in the serving MetaGraph,
# "serving" only when a serving signature reaches it.
UNSAFE_OPS: dict[str, tuple[str, str]] = {
    **{op: ("reads or writes files", "graph") for op in (
        "ReadFile", "WriteFile", "MatchingFiles", "MatchingFilesDataset", "DeleteFile",
        "ImmutableConst", "WholeFileReader", "WholeFileReaderV2", "TextLineReader",
        "TextLineReaderV2", "TFRecordReader", "TFRecordReaderV2", "FixedLengthRecordReader",
        "FixedLengthRecordReaderV2", "TFRecordDataset", "TFRecordDatasetV2",
        "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2", "TextLineDataset",
        "CSVDataset", "CSVDatasetV2", "SnapshotDataset", "SnapshotDatasetV2", "SaveDataset",
        "SaveDatasetV2", "LoadDataset", "DatasetToTFRecord", "CreateSummaryFileWriter",
        "CreateSummaryDbWriter", "LoadAndRemapMatrix", "GenerateVocabRemapping",
        "ExperimentalCSVDataset", "ExperimentalSaveDataset", "ExperimentalLoadDataset")},
    **{op: ("calls Python", "graph") for op in (
        "PyFunc", "PyFuncStateless", "EagerPyFunc")},
    **{op: ("saves or restores checkpoint files", "serving") for op in (
        "Save", "SaveV2", "SaveSlices", "Restore", "RestoreV2", "RestoreSlice",
        "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec")},
    **{op: ("reads files", "serving") for op in (
        "InitializeTableFromTextFile", "InitializeTableFromTextFileV2")},
}

KERAS_MODULES = ("keras", "tf_keras", "tensorflow", "builtins", "numpy")
# Sections of a .keras config.json that the conversion never builds: the worker loads with
# compile=False (converters/model/worker.py export_keras), and Keras then drops the training
# set-up (optimizer, loss, metrics) unread. So a training-only wrapper there (Horovod's
# DistributedOptimizer, module horovod._keras, in every model a Horovod run saves) is not code
# that runs; layers, and any custom object among them, still are.
NOT_LOADED = ("compile_config",)
CODE_CLASSES = {"Lambda"}


# -- Keras configs -----------------------------------------------------------------------------
def _walk(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def code_in_config(config: Any) -> list[str]:
    """What in a Keras model config would run code: Lambda layers and custom objects."""
    found: list[str] = []
    for obj in _walk(config):
        cls = obj.get("class_name")
        if not isinstance(cls, str):
            continue
        name = (obj.get("config") or {}).get("name") if isinstance(obj.get("config"), dict) else None
        label = f"{cls} {name!r}" if name else cls
        module = obj.get("module")
        registered = obj.get("registered_name")
        if cls in CODE_CLASSES or cls == "__lambda__":
            found.append(f"Lambda layer {name!r}" if name else "a Lambda function")
        elif isinstance(module, str) and module and not module.split(".")[0] in KERAS_MODULES:
            found.append(f"custom object {label} from module {module!r}")
        elif ">" in cls or (isinstance(registered, str) and ">" in registered):
            found.append(f"custom object {label} ({registered or cls})")
    return sorted(set(found))


def keras_config(path: Path, kind: str) -> Any:
    """The model config JSON, read as data: ``config.json`` in a .keras zip, the
    ``model_config`` attribute of an .h5 file (h5py reads attributes; no model is built)."""
    try:
        if kind == "keras":
            with zipfile.ZipFile(path) as zf, zf.open("config.json") as f:
                return json.loads(f.read(64 << 20))
        import h5py
        with h5py.File(path, "r") as f:
            raw = f.attrs.get("model_config")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise NotAModel(f"{path.name}: its model config could not be read ({exc}); the file "
                        "is damaged or not a Keras model") from None
    if raw is None:
        return None  # weights only: nothing to build, nothing to run
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        return json.loads(str(raw))
    except ValueError as exc:
        raise UnsafeModel(f"{path.name}: its model config is not valid JSON ({exc})") from None


def check_keras(path: Path, kind: str, allow_code: bool = False) -> list[str]:
    """Refuse a Keras model whose config holds code, unless allowed; returns what was found."""
    config = keras_config(path, kind)
    if isinstance(config, dict):
        config = {k: v for k, v in config.items() if k not in NOT_LOADED}
    found = code_in_config(config)
    if found and not allow_code:
        raise UnsafeModel(f"{path.name} holds code that would run when it is loaded: "
                          f"{'; '.join(found)}. tfdesk treats models as data; {ALLOW_HINT}. "
                          "Or export it where that code is importable, as a SavedModel "
                          "(tf.saved_model.save(model, 'exported')), and send the folder "
                          "zipped: a SavedModel's graph holds the layers' computation, no "
                          "Python to run.",
                          found=found)
    return found


# -- SavedModel graphs -------------------------------------------------------------------------
def _node_name(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _attr_functions(node: bytes) -> Iterator[str]:
    """Functions a NodeDef names in its attributes (``f`` of a PartitionedCall, branches of an
    If/While, ...): AttrValue.func (10) and AttrValue.list.func (1 -> 9)."""
    for entry in _all(node, 5):
        value = _first(entry, 2, b"")
        for num, _, v in fields(value):
            if num == 10:
                yield _first(v, 1, b"").decode("utf-8", "replace")
            elif num == 1:
                for fn in _all(v, 9):
                    yield _first(fn, 1, b"").decode("utf-8", "replace")


def serving_ops(pb: Path, tag: str = "serve") -> set[str]:
    """Ops reachable from the serving MetaGraph's signatures (every op of every function they
    call, transitively)."""
    data = pb.read_bytes()
    for meta in _all(data, 2):
        info = _first(meta, 1, b"")
        if tag not in [t.decode() for t in _all(info, 4)]:
            continue
        graph = _first(meta, 2, b"")
        nodes = {_first(n, 1, b"").decode(): n for n in _all(graph, 1)}
        library = _first(graph, 2)
        functions = {}
        for fn in (_all(library, 1) if library else []):
            functions[_first(_first(fn, 1, b""), 1, b"").decode()] = fn
        todo = []
        for _, sig in ((_first(e, 1), _first(e, 2, b"")) for e in _all(meta, 5)):
            for out in _all(sig, 2):
                todo.append(_node_name(_first(_first(out, 2, b""), 1, b"").decode()))
        ops: set[str] = set()
        seen_nodes: set[str] = set()
        seen_fns: set[str] = set()
        fn_todo: list[str] = []

        def visit(node: bytes) -> None:
            op = _first(node, 2, b"").decode()
            if op in functions:
                fn_todo.append(op)
            else:
                ops.add(op)
            fn_todo.extend(_attr_functions(node))

        while todo:
            name = todo.pop()
            if name in seen_nodes or name not in nodes:
                continue
            seen_nodes.add(name)
            visit(nodes[name])
            todo.extend(_node_name(i.decode()) for i in _all(nodes[name], 3))
        while fn_todo:
            fname = fn_todo.pop()
            if fname in seen_fns or fname not in functions:
                continue
            seen_fns.add(fname)
            for node in _all(functions[fname], 3):
                visit(node)
        ops.discard("")
        return ops
    return set()


def unsafe_ops(graph_ops: set[str], reachable: set[str]) -> dict[str, str]:
    """op -> what it does, for the ops the table refuses."""
    out = {}
    for op, (what, where) in UNSAFE_OPS.items():
        if op in (graph_ops if where == "graph" else reachable):
            out[op] = what
    return dict(sorted(out.items()))


def check_saved_model(folder: Path, graph_ops: set[str], allow_code: bool = False) -> dict[str, str]:
    found = unsafe_ops(graph_ops, serving_ops(folder / "saved_model.pb"))
    if found and not allow_code:
        listed = ", ".join(f"{op} ({what})" for op, what in found.items())
        raise UnsafeModel(f"the SavedModel's graph uses ops that reach outside the model: "
                          f"{listed}. tfdesk treats models as data; {ALLOW_HINT}.",
                          ops=sorted(found))
    return found
