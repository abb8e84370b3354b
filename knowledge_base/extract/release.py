"""One release's extract: walk the generated API namespaces from their roots and describe
every public path from the defining sources.

Walked: ``tf`` (``tensorflow/__init__.py``), ``tf.compat.v1`` and the companion roots from
:mod:`.companions`. Skipped on purpose: ``tf.compat.v2.*`` (a mirror of ``tf.*``),
``tf.compat.v1.compat.*`` (mirrors again), private namespaces (``tf.__internal__``,
``tf.__operators__``, any ``_x`` component) and, in the TF wheel, anything under
``tf.keras``/``tf.estimator`` (those come from the companion wheels). Class members are
emitted for every class, ``tf.compat.v1`` included, with nested classes, class constants
and operator methods.
"""
from __future__ import annotations

import ast
import gc
import re
import zipfile
from pathlib import Path

from ..errors import WheelError
from ..records import (CLASS, CONSTANT, FUNCTION, METHOD, MODULE, PROPERTY, ReleaseExtract,
                       ReleaseInfo, SymbolRecord)
from ..wheels import ReleaseWheels, wheel_version
from . import companions
from . import deprecation as dep_rules
from .api_files import is_generated, is_namespace, parse_api_file
from .renames import extract_renames
from .source import Resolved, Resolver, members, params_of
from .zipsource import Sources, open_wheel

_SKIP_PREFIXES = ("tf.compat.v2", "tf.compat.v1.compat")
_DUNDER = re.compile(r"^__\w+__$")
_PRIVATE_NAMESPACES = {"__internal__", "__operators__"}
_VERSION_RE = re.compile(r"""^\s*__version__\s*=\s*['"]([^'"]+)['"]""", re.M)


def allowed(public: str) -> bool:
    if any(public == p or public.startswith(p + ".") for p in _SKIP_PREFIXES):
        return False
    parts = public.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            last = i == len(parts) - 1
            if not (last and _DUNDER.match(part) and part not in _PRIVATE_NAMESPACES):
                return False
    return True


# Instances of these classes are of a type built at run time (pybind/C) on a Python base whose
# members they have: eager tensors are tf.Tensor instances of EagerTensor, whose Python base
# _EagerTensorBase defines numpy(), cpu(), backing_device...
RUNTIME_MEMBERS = {
    "tf.Tensor": ("tensorflow.python.framework.ops", "_EagerTensorBase",
                  "Eager tensors only (EagerTensor, what TF 2 runs by default)."),
}


def _raises(fn: ast.AST) -> bool:
    body = [n for n in getattr(fn, "body", []) if not (
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return bool(body) and isinstance(body[0], ast.Raise)


def _guess_kind(name: str) -> str:
    if name.isupper():
        return CONSTANT
    return CLASS if name[:1].isupper() else FUNCTION


class _Walker:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.resolver = Resolver(sources)
        self.records: dict[str, SymbolRecord] = {}
        self.classes: list[tuple[str, Resolved]] = []
        self._walked: set[str] = set()

    def walk(self, public: str, module: str, companion: bool) -> bool:
        """Record namespace ``module`` under ``public`` and everything it exports."""
        if public in self._walked or not allowed(public):
            return False
        tree, text = self.sources.tree(module), self.sources.text(module)
        if tree is None or text is None:
            return False
        self._walked.add(public)
        api = parse_api_file(tree, text, module if self.sources.is_package(module)
                             else module.rpartition(".")[0])
        self.records[public] = SymbolRecord(public, MODULE, module, doc=api.doc)
        for e in api.entries:
            child = f"{public}.{e.public}"
            if not allowed(child) or (not companion and companions.owned_by_companion(child)):
                continue
            r = self.resolver.resolve(e.module, e.attr)
            if r is not None and r.kind == MODULE:
                sub_text = self.sources.text(r.module)
                if sub_text is not None and is_namespace(r.module, sub_text):
                    self.walk(child, r.module, companion)
                    continue
            self.add(child, r, f"{e.module}.{e.attr}", e.line)
        # Generated namespaces on disk that this file does not import are public too (the API
        # is the generated tree: Keras 3's tf.keras root, for one, omits `saving`).
        if self.sources.is_package(module):
            for sub in self.sources.subpackages(module):
                child = f"{public}.{sub.rpartition('.')[2]}"
                if child in self.records or not allowed(child) or \
                        (not companion and companions.owned_by_companion(child)):
                    continue
                text = self.sources.text(sub)
                if text is not None and is_generated(text):
                    self.walk(child, sub, companion)
        return True

    def extend(self, public: str, module: str) -> None:
        """Add the entries of companion namespace ``module`` that ``public`` lacks."""
        tree, text = self.sources.tree(module), self.sources.text(module)
        if public not in self.records or tree is None or text is None:
            return
        api = parse_api_file(tree, text, module if self.sources.is_package(module)
                             else module.rpartition(".")[0])
        for e in api.entries:
            child = f"{public}.{e.public}"
            if child in self.records or not allowed(child):
                continue
            r = self.resolver.resolve(e.module, e.attr)
            if r is not None and r.kind != MODULE:
                self.add(child, r, f"{e.module}.{e.attr}", e.line)

    def add(self, public: str, r: Resolved | None, fallback_object: str, hint: int | None) -> None:
        if r is None:
            # A .so-only object or a source we cannot read: still a public name.
            self.records[public] = SymbolRecord(public, _guess_kind(public.rsplit(".", 1)[-1]),
                                                fallback_object, line=hint)
            return
        rec = SymbolRecord(public, r.kind, r.object)
        node = r.node
        arg_messages: list[ast.AST] = []
        if r.kind == MODULE:
            tree = self.sources.tree(r.module)
            rec.doc = (ast.get_docstring(tree) or "") if tree is not None else ""
        elif r.kind == FUNCTION:
            rec.params = params_of(node)
            rec.doc = ast.get_docstring(node) or ""
            rec.line = node.lineno
            # A stub that raises is unusable whatever else it says.
            rec.deprecation = (dep_rules.stub_raise(node) or r.deprecation
                               or dep_rules.from_decorators(node.decorator_list, public))
            arg_messages = [node]
        elif r.kind == CLASS and node is None:
            pass  # a protobuf message class: built at import time, nothing to read
        elif r.kind == CLASS:
            init = self.resolver.init_of(r)
            rec.params = params_of(init, drop_first=True) if init is not None else None
            rec.init_doc = (ast.get_docstring(init) or "") if init is not None else ""
            rec.doc = next((ast.get_docstring(c.node) for c in self.resolver.mro(r)
                            if ast.get_docstring(c.node)), "")  # V2 subclasses often have none
            rec.line = node.lineno
            rec.deprecation = (dep_rules.stub_raise(init) or r.deprecation
                               or dep_rules.from_decorators(node.decorator_list, public)
                               or (dep_rules.from_decorators(init.decorator_list, public)
                                   if init is not None and init in node.body else None))
            arg_messages = self._inits(r)
            self.classes.append((public, r))
        elif r.kind == CONSTANT:
            rec.line = getattr(node, "lineno", None)
            rec.deprecation = r.deprecation
        if rec.deprecation is not None and not dep_rules.applies_to(rec.deprecation, public):
            rec.deprecation = None
        if rec.deprecation is None:
            rec.deprecation = (dep_rules.from_docstring(rec.doc)
                               or dep_rules.argument_messages(arg_messages))
        self.records[public] = rec

    def _inits(self, cls: Resolved) -> list[ast.AST]:
        return [n for c in self.resolver.mro(cls) for n in c.node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"]

    def add_runtime_members(self, public_classes: set[str]) -> None:
        """Members a class's instances have that its own source does not define (see
        RUNTIME_MEMBERS), listed under the class with where they come from said."""
        for public, (module, name, note) in RUNTIME_MEMBERS.items():
            cls = self.resolver.resolve(module, name)
            if public not in self.records or cls is None or cls.node is None:
                continue
            for m in members(self.resolver, cls, public_classes | {self.records[public].object}):
                full = f"{public}.{m.name}"
                if full in self.records or m.kind not in (METHOD, PROPERTY) or _raises(m.node):
                    continue  # (EagerTensor.op/.graph/.name exist only to raise)
                self.records[full] = SymbolRecord(
                    full, m.kind, f"{m.owner.object}.{m.name}", params=m.params,
                    doc=f"{note} {m.doc}".strip(), line=getattr(m.node, "lineno", None))

    def add_members(self) -> None:
        # Bases public only as tf.compat.v1.* get no members of their own, so what they
        # define is listed under the TF2 subclass (tf.estimator.Estimator.train).
        public_classes = {r.object for p, r in self.classes if not p.startswith("tf.compat.v1.")}
        queue = list(self.classes)
        while queue:
            public, cls = queue.pop()
            # A TF1 class lists what it inherits from TF2 classes too, as the v1 goldens do
            # (tf.compat.v1.Variable.assign is tf.Variable's).
            skip = set() if public.startswith("tf.compat.v1.") else public_classes
            if skip and public in self.records and self.records[public].kind == CLASS:
                # What members() leaves out: the builder lists these bases' members again.
                self.records[public].bases = [
                    c.object for c in self.resolver.mro(cls)[1:] if c.object in skip] or None
            for m in members(self.resolver, cls, skip):
                name = f"{public}.{m.name}"
                if name in self.records:
                    continue  # a nested public class/namespace already has this path
                dep = dep_rules.from_decorators(getattr(m.node, "decorator_list", []), name)
                self.records[name] = SymbolRecord(
                    name, m.kind, f"{m.owner.object}.{m.name}", params=m.params, doc=m.doc,
                    deprecation=(dep or dep_rules.from_docstring(m.doc)
                                 or (dep_rules.argument_messages([m.node])
                                     if m.kind == METHOD else None)),
                    line=getattr(m.node, "lineno", None))
                if m.nested is not None and name.count(".") < 8:
                    queue.append((name, m.nested))
        self.add_runtime_members(public_classes)


def _python_tag(path: Path) -> str | None:
    parts = Path(path).name[:-4].split("-")
    return parts[-3] if len(parts) >= 5 else None


def _version_of(path: Path | None) -> str | None:
    if path is None:
        return None
    v = wheel_version(path)
    return str(v[1]) if v else None


def extract_release(wheels: ReleaseWheels) -> ReleaseExtract:
    """Everything public in one release, read statically from its wheels."""
    # Hundreds of large ASTs stay alive while we work; the cyclic GC would rescan them on
    # every allocation burst (measured: over half the run time), and none of them are cycles
    # worth collecting before the end.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _extract(wheels)
    finally:
        if gc_was_enabled:
            gc.enable()


def _extract(wheels: ReleaseWheels) -> ReleaseExtract:
    minor = wheels.minor
    opened: list[zipfile.ZipFile] = []
    try:
        sources = Sources()
        tfz = open_wheel(wheels.tf, companions.MARKERS["tf"])
        opened.append(tfz)
        sources.add(tfz, "tf")
        keras_source, keras_roots = companions.keras_plan(minor)
        keras_version = None
        if any(r.wheel == "keras" for r in keras_roots):
            if wheels.keras is None:
                keras_source, keras_roots = None, ()
            else:
                kz = open_wheel(wheels.keras, companions.MARKERS["keras"])
                opened.append(kz)
                sources.add(kz, "keras")
                keras_version = _version_of(wheels.keras)
        elif keras_roots:
            m = _VERSION_RE.search(sources.text("tensorflow.python.keras") or "")
            keras_version = m.group(1) if m else _version_of(wheels.tf)
        for label, path in (("tf_keras", wheels.tf_keras), ("tensorboard", wheels.tensorboard)):
            if path is not None:
                z = open_wheel(path, companions.MARKERS[label])
                opened.append(z)
                sources.add(z, label)
        est_roots = companions.estimator_roots(minor) if wheels.estimator else ()
        if est_roots:
            ez = open_wheel(wheels.estimator, companions.MARKERS["estimator"])
            opened.append(ez)
            sources.add(ez, "estimator")

        walker = _Walker(sources)
        root = companions.TF_ROOT
        # tf.compat.v1.layers & co. are lazy-loaded from Keras packages; walked before the TF
        # tree so that TF's own near-empty placeholder of the same namespace is not used.
        v1_text = sources.text("tensorflow._api.v2.compat.v1") or ""
        for public, module in companions.lazy_v1_roots(v1_text):
            walker.walk(public, module, companion=True)
        if not walker.walk(root.public, root.module, companion=False):
            raise WheelError(f"{Path(wheels.tf).name}: tensorflow/__init__.py cannot be parsed")
        if not sources.has_prefix("tensorflow._api.v2."):
            raise WheelError(f"{Path(wheels.tf).name}: no generated TensorFlow 2 API inside")
        keras_found = False
        for r in keras_roots:
            keras_found |= walker.walk(r.public, r.module, companion=True) and r.public == "tf.keras"
        keras_root = next((r for r in keras_roots if r.public == "tf.keras"), None)
        if keras_found and keras_root is not None:
            for alias in companions.keras_aliases(sources.text(root.module)):
                walker.walk(f"tf.{alias}", f"{keras_root.module}.{alias}", companion=True)
        estimator_found = False
        for r in est_roots:
            estimator_found |= walker.walk(r.public, r.module, companion=True)
        for public, module in companions.extensions(sources.text(root.module)):
            walker.extend(public, module)
        walker.add_members()

        info = ReleaseInfo(
            version=f"2.{minor}", tf_version=_version_of(wheels.tf) or f"2.{minor}",
            tf_wheel=Path(wheels.tf).name,
            keras_version=keras_version if keras_found else None,
            keras_source=keras_source if keras_found else None,
            estimator_version=_version_of(wheels.estimator) if estimator_found else None,
            python_tag=_python_tag(wheels.tf))
        symbols = sorted(walker.records.values(), key=lambda s: s.name)
        return ReleaseExtract(info, symbols, extract_renames(sources))
    finally:
        for z in opened:
            z.close()
