"""What extraction produces for one release, and its on-disk form (JSON lines, gzip).

One release's extract is written by :mod:`knowledge_base.extract` from the wheels and read
by :mod:`knowledge_base.builder`, which merges all releases into the KB. The format:

    {"type": "release", ...ReleaseInfo fields}
    {"type": "symbol", ...SymbolRecord fields}      one per public path
    {"type": "rename", "old": ..., "new": ..., "note": ...}
"""
from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

# Symbol kinds.
MODULE, CLASS, FUNCTION, METHOD, PROPERTY, CONSTANT = (
    "module", "class", "function", "method", "property", "constant")
KINDS = (MODULE, CLASS, FUNCTION, METHOD, PROPERTY, CONSTANT)

# Parameter kinds, as in inspect.Parameter.
PARAM_KINDS = ("positional_only", "positional_or_keyword", "var_positional", "keyword_only",
               "var_keyword")


@dataclass
class Param:
    name: str
    kind: str = "positional_or_keyword"
    default: str | None = None  # source text of the default, None when there is none

    def render(self) -> str:
        prefix = {"var_positional": "*", "var_keyword": "**"}.get(self.kind, "")
        return f"{prefix}{self.name}" + (f"={self.default}" if self.default is not None else "")


def render_signature(params: list[Param] | None) -> str | None:
    if params is None:
        return None
    parts: list[str] = []
    saw_kwonly_marker = False
    for i, p in enumerate(params):
        if p.kind == "keyword_only" and not saw_kwonly_marker and not any(
                q.kind == "var_positional" for q in params[:i]):
            parts.append("*")
            saw_kwonly_marker = True
        parts.append(p.render())
        if p.kind == "positional_only" and (i + 1 == len(params) or params[i + 1].kind != "positional_only"):
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


RAISES = "raises"  # Deprecation.how of a stub whose body raises on use: present but unusable
ARGUMENT = "argument"  # Deprecation.how of arguments the code's own messages call deprecated


@dataclass
class Deprecation:
    # "decorator" (deprecation.deprecated*), "endpoint" (deprecated_endpoints), "docstring",
    # "raises": present but unusable, a stub whose body raises (instructions: "ImportError: ...");
    # "argument": args the code's warnings call deprecated / no longer supported (see
    # extract.deprecation.argument_messages).
    how: str
    instructions: str = ""
    date: str | None = None       # the decorator's removal date, when given
    args: list[str] = field(default_factory=list)  # deprecated_args: which arguments


@dataclass
class SymbolRecord:
    name: str                     # public path: "tf.nn.softmax", "tf.keras.Model.fit"
    kind: str                     # one of KINDS
    object: str = ""              # defining object: "tensorflow.python.ops.nn_ops.softmax_v2"
    params: list[Param] | None = None
    doc: str = ""
    deprecation: Deprecation | None = None
    line: int | None = None       # line of the definition in the defining module
    # A TF2 class: the defining objects of the public classes it derives from, in method
    # resolution order. Their members are listed under their own names, not again under this
    # class; the builder adds them back as inherited members (knowledge_base.inheritance).
    bases: list[str] | None = None
    # A class: the docstring of the ``__init__`` its signature comes from (own or inherited),
    # where many classes document their constructor's Args (tf.GradientTape).
    init_doc: str = ""

    @property
    def signature(self) -> str | None:
        return render_signature(self.params)

    @classmethod
    def from_dict(cls, d: dict) -> "SymbolRecord":
        params = d.get("params")
        dep = d.get("deprecation")
        return cls(name=d["name"], kind=d["kind"], object=d.get("object", ""),
                   params=[Param(**p) for p in params] if params is not None else None,
                   doc=d.get("doc", ""), deprecation=Deprecation(**dep) if dep else None,
                   line=d.get("line"), bases=d.get("bases"), init_doc=d.get("init_doc", ""))


@dataclass
class Rename:
    old: str                      # "tf.Session"
    new: str | None               # "tf.compat.v1.Session"; None when there is no replacement
    note: str = ""                # the upgrade script's advice, when it has some


@dataclass
class ReleaseInfo:
    version: str                  # minor release: "2.16"
    tf_version: str               # the patch the wheel carries: "2.16.2"
    tf_wheel: str                 # wheel file name
    keras_version: str | None = None   # version of the Keras that supplied tf.keras
    keras_source: str | None = None    # "tensorflow (in-tree)", "keras 2 wheel", "keras 3 wheel"
    estimator_version: str | None = None
    python_tag: str | None = None


@dataclass
class ReleaseExtract:
    info: ReleaseInfo
    symbols: list[SymbolRecord]
    renames: list[Rename] = field(default_factory=list)

    def write(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as f:
            f.write(json.dumps({"type": "release", **asdict(self.info)}) + "\n")
            for s in self.symbols:
                d = {k: v for k, v in asdict(s).items() if v not in (None, "", [])}
                if s.params == []:
                    d["params"] = []
                f.write(json.dumps({"type": "symbol", **d}, ensure_ascii=False) + "\n")
            for r in self.renames:
                f.write(json.dumps({"type": "rename", **asdict(r)}) + "\n")
        tmp.replace(path)  # atomic: a half-written extract never looks finished

    @classmethod
    def read(cls, path: Path) -> "ReleaseExtract":
        return cls.from_lines(_lines(path))

    @classmethod
    def from_lines(cls, lines: Iterable[dict]) -> "ReleaseExtract":
        info = None
        symbols: list[SymbolRecord] = []
        renames: list[Rename] = []
        for d in lines:
            t = d.pop("type")
            if t == "release":
                info = ReleaseInfo(**d)
            elif t == "symbol":
                symbols.append(SymbolRecord.from_dict(d))
            elif t == "rename":
                renames.append(Rename(**d))
        if info is None:
            raise ValueError("extract has no release line")
        return cls(info, symbols, renames)


def _lines(path: Path) -> Iterable[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
