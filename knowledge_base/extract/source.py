"""Static facts about defining modules: what a name is bound to, signatures, docstrings,
deprecation and class members, all from the AST (the code is never imported).

Resolution follows re-exports and aliases (``from m import y as x``, ``x = y``,
``x = m.y``, ``x = deprecated(...)(y)``, ``from m import *``) for a few hops, as the
generated API files often point at a module that merely re-exports the definition.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..records import CLASS, CONSTANT, FUNCTION, METHOD, MODULE, PROPERTY, Deprecation, Param
from . import deprecation as dep_rules
from .zipsource import Sources

MAX_HOPS = 8
# f(x) calls that return x itself, or x behind a same-signature wrapper (raw ops).
WRAPPERS = {"to_raw_op", "add_dispatch_support", "add_fallback_dispatch_list", "tf_export",
            "keras_export", "keras_core_export", "estimator_export", "wraps", "staticmethod"}
_PROPERTY_DECORATORS = {"property", "cached_property", "abstractproperty", "classproperty",
                        "lazy_property"}


@dataclass
class Table:
    """Top-level bindings of one module."""
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # name -> (module, attr|None)
    assigns: dict[str, ast.expr] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)


@dataclass
class Resolved:
    kind: str                     # MODULE, CLASS, FUNCTION, CONSTANT
    module: str
    qualname: str
    node: ast.AST | None = None
    deprecation: Deprecation | None = None   # found on the alias chain (x = deprecated(..)(y))

    @property
    def object(self) -> str:
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


def _bind(table: Table, name: str, kind: str, value, conditional: bool) -> None:
    # Unconditional statements rebind as Python does; inside if/try the first branch wins
    # (Keras 3 imports its TensorFlow trainer in the first branch of a backend switch).
    if conditional and (name in table.defs or name in table.imports or name in table.assigns):
        return
    for d in (table.defs, table.imports, table.assigns):
        d.pop(name, None)
    getattr(table, kind)[name] = value


def build_table(tree: ast.Module, module: str, is_pkg: bool) -> Table:
    from .api_files import resolve_relative
    table = Table()
    package = module if is_pkg else module.rpartition(".")[0]

    def visit(body: list[ast.stmt], conditional: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                _bind(table, node.name, "defs", node, conditional)
            elif isinstance(node, ast.ImportFrom):
                src = resolve_relative(node.module, node.level, package)
                for a in node.names:
                    if a.name == "*":
                        table.stars.append(src)
                    else:
                        _bind(table, a.asname or a.name, "imports", (src, a.name), conditional)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        _bind(table, a.asname, "imports", (a.name, None), conditional)
                    else:
                        top = a.name.split(".")[0]
                        _bind(table, top, "imports", (top, None), conditional)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        _bind(table, t.id, "assigns", node.value, conditional)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                _bind(table, node.target.id, "assigns", node.value, conditional)
            elif isinstance(node, ast.If):
                visit(node.body, True)
                visit(node.orelse, True)
            elif isinstance(node, ast.Try):
                visit(node.body, True)
                for h in node.handlers:
                    visit(h.body, True)
                visit(node.orelse, True)
                visit(node.finalbody, True)

    visit(tree.body, False)
    return table


class Resolver:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self._tables: dict[str, Table | None] = {}
        self._cache: dict[tuple[str, str], Resolved | None] = {}
        self._mro: dict[str, list[Resolved]] = {}

    def table(self, module: str) -> Table | None:
        if module not in self._tables:
            tree = self.sources.tree(module)
            self._tables[module] = (build_table(tree, module, self.sources.is_package(module))
                                    if tree is not None else None)
        return self._tables[module]

    def resolve(self, module: str, name: str, hops: int = 0) -> Resolved | None:
        """What ``name`` in ``module`` finally is, or None when the source does not say."""
        key = (module, name)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None  # cycle guard
        result = self._resolve(module, name, hops)
        self._cache[key] = result
        return result

    def _resolve(self, module: str, name: str, hops: int) -> Resolved | None:
        if hops > MAX_HOPS:
            return None
        table = self.table(module)
        if table is None:
            sub = f"{module}.{name}"
            return Resolved(MODULE, sub, "") if self.sources.has(sub) else None
        if module.endswith("_pb2") and name[:1].isupper() and name not in table.imports:
            # Generated protobuf modules build their message classes at import time.
            return Resolved(CLASS, module, name, None)
        node = table.defs.get(name)
        if node is not None:
            return Resolved(CLASS if isinstance(node, ast.ClassDef) else FUNCTION, module, name, node)
        if name in table.imports:
            src, attr = table.imports[name]
            if attr is None:
                return Resolved(MODULE, src, "")
            sub = f"{src}.{attr}"
            if self.sources.has(sub):
                t = self.table(src)
                if t is None or not (attr in t.defs or attr in t.assigns):
                    return Resolved(MODULE, sub, "")
            return self.resolve(src, attr, hops + 1)
        if name in table.assigns:
            return self.resolve_expr(module, table.assigns[name], hops + 1, name)
        for star in table.stars:
            r = self.resolve(star, name, hops + 1)
            if r is not None:
                return r
        if self.sources.has(f"{module}.{name}"):
            return Resolved(MODULE, f"{module}.{name}", "")
        return None

    def resolve_expr(self, module: str, expr: ast.expr, hops: int, bound_as: str = "") -> Resolved | None:
        if isinstance(expr, ast.Name):
            return self.resolve(module, expr.id, hops)
        if isinstance(expr, ast.Attribute):
            base = self.resolve_expr(module, expr.value, hops)
            if base is not None and base.kind == MODULE:
                return self.resolve(base.module, expr.attr, hops + 1)
            return None
        if isinstance(expr, ast.Call):
            # deprecated(...)(f), tf_export(...)(f), deprecated_alias(old, new, f)
            dep = dep_rules.from_call(expr.func) if isinstance(expr.func, ast.Call) else None
            target = None
            if (isinstance(expr.func, ast.Call) or dep_rules.call_name(expr) in WRAPPERS) \
                    and len(expr.args) == 1:
                target = expr.args[0]
            elif dep_rules.call_name(expr) == "deprecated_alias":
                dep = dep_rules.from_call(expr)
                target = dep_rules._arg(expr, 2, "func_or_class")
            if target is not None:
                r = self.resolve_expr(module, target, hops + 1)
                if r is not None:
                    if dep is not None and r.deprecation is None:
                        r = Resolved(r.kind, r.module, r.qualname, r.node, dep)
                    return r
            # rfft = _rfft_wrapper(gen_spectral_ops.rfft, 1, "rfft"): a factory that returns a
            # function it defines inside is a function with that inner signature.
            inner = self._factory_result(module, expr, hops)
            if inner is not None and bound_as:
                return Resolved(FUNCTION, module, bound_as, inner)
        if bound_as:
            return Resolved(CONSTANT, module, bound_as, expr)
        return None

    def _factory_result(self, module: str, call: ast.Call, hops: int) -> ast.FunctionDef | None:
        f = self.resolve_expr(module, call.func, hops + 1) if isinstance(
            call.func, (ast.Name, ast.Attribute)) else None
        if f is None or f.kind != FUNCTION or not isinstance(f.node, ast.FunctionDef):
            return None
        inner = {n.name: n for n in f.node.body if isinstance(n, ast.FunctionDef)}
        last = f.node.body[-1] if f.node.body else None
        if isinstance(last, ast.Return) and isinstance(last.value, ast.Name):
            return inner.get(last.value.id)
        return None

    # -- classes -------------------------------------------------------------------------

    def bases(self, module: str, cls: ast.ClassDef) -> list[Resolved]:
        out = []
        for b in cls.bases:
            r = self.resolve_expr(module, b, 0)
            if r is not None and r.kind == CLASS and isinstance(r.node, ast.ClassDef):
                out.append(r)
        return out

    def mro(self, r: Resolved) -> list[Resolved]:
        """The class and its statically resolvable bases in Python's method resolution order
        (C3: tf.compat.v1.layers.Dense takes add_loss from the legacy base Layer, not from
        Keras' Dense's bases), each once; depth-first where C3 cannot order them."""
        key = r.object
        if key not in self._mro:
            self._mro[key] = self._c3(r, set()) or self._dfs(r)
        return self._mro[key]

    def _c3(self, c: Resolved, busy: set[str]) -> list[Resolved] | None:
        if c.object in busy or len(busy) > 40:
            return None
        busy = busy | {c.object}
        bases = self.bases(c.module, c.node)
        seqs = []
        for b in bases:
            m = self._c3(b, busy)
            if m is None:
                return None
            seqs.append(list(m))
        seqs.append(list(bases))
        out = [c]
        while any(seqs):
            seqs = [q for q in seqs if q]
            head = next((q[0] for q in seqs if not any(q[0].object in (x.object for x in t[1:])
                                                           for t in seqs)), None)
            if head is None:
                return None  # inconsistent hierarchy as far as the sources show
            out.append(head)
            seqs = [q[1:] if q[0].object == head.object else q for q in seqs]
        return out

    def _dfs(self, r: Resolved) -> list[Resolved]:
        seen: set[str] = set()
        out: list[Resolved] = []

        def walk(c: Resolved, depth: int) -> None:
            if c.object in seen or depth > 20:
                return
            seen.add(c.object)
            out.append(c)
            for b in self.bases(c.module, c.node):
                walk(b, depth + 1)

        walk(r, 0)
        return out

    def init_of(self, r: Resolved) -> ast.FunctionDef | None:
        for c in self.mro(r):
            for node in c.node.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__init__":
                    return node
        return None


@dataclass
class Member:
    name: str
    kind: str                     # METHOD, PROPERTY, CLASS (nested) or CONSTANT
    owner: Resolved               # the class that defines it
    node: ast.AST
    doc: str
    params: list[Param] | None
    nested: Resolved | None = None   # a nested class, whose own members are listed too


def decorator_names(node: ast.AST) -> list[str]:
    return [dep_rules.call_name(d) for d in getattr(node, "decorator_list", [])]


def is_property(node: ast.AST) -> bool:
    return any(n in _PROPERTY_DECORATORS for n in decorator_names(node))


def params_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool = False) -> list[Param]:
    a = fn.args
    out: list[Param] = []
    positional = [(p, "positional_only") for p in a.posonlyargs] + [
        (p, "positional_or_keyword") for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for (p, kind), d in zip(positional, defaults):
        out.append(Param(p.arg, kind, ast.unparse(d) if d is not None else None))
    if drop_first and out:
        out.pop(0)
    if a.vararg:
        out.append(Param(a.vararg.arg, "var_positional"))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append(Param(p.arg, "keyword_only", ast.unparse(d) if d is not None else None))
    if a.kwarg:
        out.append(Param(a.kwarg.arg, "var_keyword"))
    return out


# Dunder methods that are the class's signature or plumbing, not something users call by name.
_NOT_OPERATORS = {"__init__", "__new__", "__init_subclass__", "__class_getitem__", "__getattr__",
                  "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__reduce__",
                  "__reduce_ex__", "__getstate__", "__setstate__", "__repr__", "__str__",
                  "__hash__", "__sizeof__", "__subclasshook__", "__tf_tracing_type__",
                  "__deepcopy__", "__copy__"}


def is_operator(name: str) -> bool:
    """A public dunder method (``__getitem__``, ``__matmul__``, ``__enter__``): listed, as the
    goldens list them, but ranked below ordinary members by the searcher."""
    return name.startswith("__") and name.endswith("__") and name not in _NOT_OPERATORS


def _public_member_name(name: str) -> bool:
    return not name.startswith("_") or is_operator(name)


def _camel(name: str) -> bool:
    return name[:1].isupper() and not name.isupper() and "_" not in name


OPERATOR_DOC = "Python operator that TensorFlow overloads for this class when it is imported."


def _overloaded_operators(cls: ast.ClassDef) -> list[str]:
    """tf.Tensor declares the operators it overloads at import time (``__getitem__``,
    ``__matmul__``...) in ``OVERLOADABLE_OPERATORS``; they are not defined in its body."""
    for node in cls.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "OVERLOADABLE_OPERATORS"
                and isinstance(node.value, (ast.Set, ast.List, ast.Tuple))):
            return sorted(e.value for e in node.value.elts
                          if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return []


def _namedtuple_fields(cls: ast.ClassDef) -> list[str]:
    """Fields of ``class X(collections.namedtuple("X", ["a", "b"]))``: read-only properties."""
    for b in cls.bases:
        if isinstance(b, ast.Call) and dep_rules.call_name(b) == "namedtuple" and len(b.args) > 1:
            spec = b.args[1]
            if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
                return spec.value.replace(",", " ").split()
            if isinstance(spec, (ast.List, ast.Tuple)):
                return [e.value for e in spec.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _defined_names(cls: ast.ClassDef) -> set[str]:
    names = {n.name for n in cls.body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names.update(t.id for n in cls.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name))
    names.update(n.target.id for n in cls.body
                 if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
    return names | set(_overloaded_operators(cls)) | set(_namedtuple_fields(cls))


def members(resolver: Resolver, cls: Resolved, public_classes: set[str]) -> list[Member]:
    """Public methods, properties, nested classes and class constants of ``cls``: its own and
    those of bases that are not public themselves (a public base documents its members under
    its own name). Operator methods (dunders) count; stubs (.pyi) give only named members."""
    chain = resolver.mro(cls)
    found: dict[str, Member] = {}
    hidden: set[str] = set()  # defined by a public base: that base's, even if a later one has it
    for i, c in enumerate(chain):
        if i > 0 and c.object in public_classes:
            hidden.update(_defined_names(c.node))
            continue
        stub = resolver.sources.is_stub(c.module)
        for name in _overloaded_operators(c.node):
            op = ast.Name(id=name, lineno=c.node.lineno, col_offset=0)
            found.setdefault(name, Member(name, METHOD, c, op, OPERATOR_DOC, None))
        for name in _namedtuple_fields(c.node):
            field = ast.Name(id=name, lineno=c.node.lineno, col_offset=0)
            found.setdefault(name, Member(name, PROPERTY, c, field, "", None))
        for node in c.node.body:
            name = kind = None
            nested = None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(n in ("setter", "deleter") for n in decorator_names(node)):
                    continue
                name = node.name
                kind = PROPERTY if is_property(node) else METHOD
            elif isinstance(node, ast.ClassDef):
                name, kind = node.name, CLASS
                nested = Resolved(CLASS, c.module, f"{c.qualname}.{node.name}", node)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1
                  and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                  and dep_rules.call_name(node.value) == "property"):
                name, kind = node.targets[0].id, PROPERTY
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not stub:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and node.value is not None:
                    name, kind = targets[0].id, CONSTANT
                    if isinstance(node.value, (ast.Name, ast.Attribute)) and _camel(name):
                        kind = CLASS  # SaveSliceInfo = Variable.SaveSliceInfo
                    if name.startswith("__"):
                        continue  # __slots__, __array_priority__: plumbing
            if not name or name in found or name in hidden or not _public_member_name(name):
                continue
            if name.startswith("__") and (stub or kind != METHOD):
                continue
            doc = (ast.get_docstring(node) or "") if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else ""
            params = None
            if kind == METHOD:
                static = "staticmethod" in decorator_names(node)
                params = params_of(node, drop_first=not static)
            elif kind == CLASS and nested is not None:
                init = resolver.init_of(nested)
                params = params_of(init, drop_first=True) if init is not None else None
            found[name] = Member(name, kind, c, node, doc, params, nested)
    # Overrides without a docstring inherit the documentation of the method they override.
    for m in found.values():
        if not m.doc and m.kind in (METHOD, PROPERTY):
            for c in chain:
                for node in c.node.body:
                    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and node.name == m.name and ast.get_docstring(node)):
                        m.doc = ast.get_docstring(node)
                        break
                if m.doc:
                    break
    return list(found.values())
