"""Dataflow over paths: which reads of the script touch files that only the chief writes.

After conversion, checkpoints, TensorBoard logs, image dumps and saved models are written by one
worker (rank 0 / the chief): the others write nothing there (Horovod) or write to a scratch
folder (tf.distribute). Code that runs on every worker and later reads such a file (lists the
checkpoint folder, copies the logs, takes the latest checkpoint) finds nothing on the others.

Which reads those are is worked out from the data, not from a list of reading calls: every path
the chief alone writes (the path argument of a chief-only write) is followed through the
script's variables, attributes, function parameters, string building and path functions, and a
call made after that write whose argument may name the same place (the same variable, or a
path with the same leading folders) reads the chief's files. Each path is a set of atoms: a
variable it came through, or the static text it starts with.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from converters.script import tables as T
from converters.script.names import ast_dotted as _dotted, canonical


@dataclass(frozen=True)
class Atom:
    kind: str     # "path" (static text) or "var" (a variable or attribute it came through)
    text: str
    exact: bool   # path: the whole path (else the text it starts with)
    ext: str = ""  # the file extension the path ends with, when its end is static ("*.png")


@dataclass(frozen=True)
class ChiefRead:
    line: int
    col: int        # ast column (UTF-8 bytes) of the call
    arg: int | str  # the argument naming the chief's files: its position or keyword
    used: bool      # the call's result is used (else: a statement of its own)
    written_by: str  # "ModelCheckpoint (line 30)"
    callee: str = ""  # the last part of the called name (calls chained on one line share a start)


def _ext(text: str) -> str:
    """'.png' for 'data/*.png' or 'w-{epoch}.h5'; '' when the end is not a static file name."""
    tail = text.replace("\\", "/").rsplit("/", 1)[-1]
    tail = tail.rsplit("}", 1)[-1].rsplit("*", 1)[-1]
    return tail[tail.rindex("."):] if "." in tail and not tail.endswith(".") else ""


def _path(text: str) -> set:
    got = _norm(text)
    return {Atom("path", got[0], got[1], _ext(text))} if got else set()


def _norm(text: str) -> tuple[str, bool] | None:
    exact = "{" not in text and "*" not in text and "?" not in text
    text = text.split("{")[0].split("*")[0].split("?")[0].replace("\\", "/")
    while "//" in text:
        text = text.replace("//", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/") if exact else text
    return (text, exact) if text not in ("", ".") else None


def overlap(a: Atom, b: Atom) -> bool:
    if a.kind != b.kind:
        return False
    if a.ext and b.ext and a.ext != b.ext:
        return False  # "data/*.png" is none of "data/ckpt-{epoch}.h5"
    if a.kind == "var":
        return a.text == b.text
    x, y = a.text, b.text
    if a.exact and b.exact:
        return x == y or y.startswith(x + "/") or x.startswith(y + "/")
    if a.exact:
        return x.startswith(y) or y.startswith(x + "/")
    if b.exact:
        return y.startswith(x) or x.startswith(y + "/")
    return x.startswith(y) or y.startswith(x)


def _inexact(atoms: set) -> set:
    """Somewhere under these paths (the file name, and so its extension, unknown)."""
    return {Atom(a.kind, a.text, False) if a.kind == "path" else a for a in atoms}


class _Scopes(ast.NodeVisitor):
    """Bindings (name -> the values assigned to it, with the scope they are read in), the
    functions, and for every node the module-level statements that run it."""

    def __init__(self, tree: ast.Module):
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.binds: dict[tuple, list] = {}   # (scope, name) -> [(value, scope)]
        self.scope_of: dict[int, str] = {}   # id(node) -> enclosing function name ("" = module)
        self.top: dict[int, int] = {}        # id(node) -> index of its module-level statement
        self.calls: dict[str, set] = {}      # function -> {(caller scope, top index)}
        self.in_class: set[str] = set()      # methods (run by frameworks, not by name)
        self._pending: list = []             # (call of a name, caller scope)
        self._scope, self._top, self._class = [""], 0, 0
        for i, stmt in enumerate(tree.body):
            self._top = i
            self.visit(stmt)

    def generic_visit(self, node):
        self.scope_of[id(node)] = self._scope[-1]
        self.top[id(node)] = self._top
        super().generic_visit(node)

    def visit_ClassDef(self, node):
        self._class += 1
        self.generic_visit(node)
        self._class -= 1

    def visit_FunctionDef(self, node):
        self.funcs.setdefault(node.name, node)
        if self._class:
            self.in_class.add(node.name)
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _bind(self, target, value):
        scope = self._scope[-1]
        if isinstance(target, ast.Name):
            self.binds.setdefault((scope, target.id), []).append((value, scope))
        elif isinstance(target, ast.Attribute) and _dotted(target):
            self.binds.setdefault(("attr", _dotted(target)), []).append((value, scope))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)

    def visit_Assign(self, node):
        for t in node.targets:
            self._bind(t, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name):
            self.calls.setdefault(node.func.id, set()).add((self._scope[-1], self._top))
            self._pending.append((node, self._scope[-1]))
        self.generic_visit(node)

    def bind_parameters(self):
        """f(a, b=c): f's parameters take the caller's values."""
        for node, scope in self._pending:
            func = self.funcs.get(node.func.id)
            if func is None:
                continue
            params = [a.arg for a in func.args.posonlyargs + func.args.args]
            for name, value in zip(params, node.args):
                self.binds.setdefault((func.name, name), []).append((value, scope))
            for kw in node.keywords:
                if kw.arg:
                    self.binds.setdefault((func.name, kw.arg), []).append((kw.value, scope))

    def runs_at(self, node) -> tuple[int, int]:
        """(first, last) module-level statement that runs ``node`` (through the calls of the
        function it is in); code nothing calls by name (methods, callbacks) runs anywhere."""
        scope = self.scope_of.get(id(node), "")
        if not scope:
            top = self.top.get(id(node), 0)
            return top, top
        tops, todo, seen = set(), [scope], set()
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            if f in self.in_class or f not in self.calls:
                return 0, 10 ** 9
            for caller, top in self.calls[f]:
                if caller:
                    todo.append(caller)
                else:
                    tops.add(top)
        return (min(tops), max(tops)) if tops else (0, 10 ** 9)


class Dataflow:
    def __init__(self, tree: ast.Module, analysis):
        self.a = analysis
        self.s = _Scopes(tree)
        self.s.bind_parameters()
        self.tree = tree
        # Data files every worker would write (TFRecordWriter in a with block): made the
        # chief's (guarded), so what reads them waits for the chief's copy too.
        self.data_writes = data_writes(tree, self.q)

    def q(self, func) -> str | None:
        name = _dotted(func)
        if not name:
            return None
        head, _, rest = name.partition(".")
        head = self.a.aliases.get(head, head)
        return canonical(f"{head}.{rest}" if rest else head)

    def atoms(self, node, scope: str, depth: int = 0) -> set:
        if depth > 12 or node is None:
            return set()
        d = depth + 1
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _path(node.value)
        if isinstance(node, ast.JoinedStr) and node.values:
            first, last = node.values[0], node.values[-1]
            ext = _ext(last.value) if isinstance(last, ast.Constant) else ""
            if isinstance(first, ast.Constant):
                got = _norm(str(first.value))
                return {Atom("path", got[0], False, ext)} if got else set()
            return {Atom(a.kind, a.text, False, ext) for a in self.atoms(first.value, scope, d)}
        if isinstance(node, ast.Name):
            return self._name(node.id, scope, d)
        if isinstance(node, ast.Attribute):
            out = set()
            dotted = _dotted(node)
            if dotted:
                out.add(Atom("var", "attr:" + dotted, False))
                for value, where in self.s.binds.get(("attr", dotted), []):
                    out |= self.atoms(value, where, d)
            if node.attr in ("parent", "name", "stem"):
                out |= _inexact(self.atoms(node.value, scope, d))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div, ast.Mod)):
            left = self.atoms(node.left, scope, d)
            right = node.right
            if isinstance(right, ast.Constant) and isinstance(right.value, str) and \
                    isinstance(node.op, (ast.Add, ast.Div)):
                joiner = "/" if isinstance(node.op, ast.Div) else ""
                out = set()
                for a in left:
                    if a.kind != "path":
                        out.add(Atom(a.kind, a.text, False, _ext(right.value)))
                    elif a.exact and _norm(a.text + joiner + right.value):
                        out |= _path(a.text + joiner + right.value)
                    else:
                        out.add(Atom("path", a.text, False, _ext(right.value)))
                return out
            return _inexact(left)
        if isinstance(node, ast.Call):
            return self._call(node, scope, d)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return set().union(*(self.atoms(e, scope, d) for e in node.elts)) if node.elts else set()
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return _inexact(self.atoms(node.elt, scope, d))
        if isinstance(node, ast.IfExp):
            return self.atoms(node.body, scope, d) | self.atoms(node.orelse, scope, d)
        if isinstance(node, ast.Subscript):
            return self.atoms(node.value, scope, d)
        return set()

    def _name(self, name: str, scope: str, d: int) -> set:
        key = (scope, name) if (scope, name) in self.s.binds else ("", name)
        out = {Atom("var", f"{key[0]}:{name}", False)}
        for value, where in self.s.binds.get(key, []):
            out |= self.atoms(value, where, d)
        return out

    def _call(self, node: ast.Call, scope: str, d: int) -> set:
        """Paths made from paths: os.path.join(d, "x"), Path(d), latest_checkpoint(d), glob."""
        q = self.q(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if q in T.PATH_FUNCTIONS:
            base, rest = (node.args[0], node.args[1:]) if node.args else (None, [])
        elif method in T.PATH_METHODS:  # p.joinpath("x"), "ckpt/{}".format(n)
            base, rest = node.func.value, node.args
        else:
            return set()
        out = self.atoms(base, scope, d)
        if (q in T.PATH_JOINS or method in T.PATH_JOINS) and rest:
            if not all(isinstance(r, ast.Constant) and isinstance(r.value, str) for r in rest):
                return _inexact(out)
            joined = set()
            for a in out:
                text = "/".join([a.text, *(r.value for r in rest)])
                got = _norm(text) if a.kind == "path" else None
                joined.add(Atom("path", got[0], a.exact and got[1], _ext(text)) if got
                           else Atom(a.kind, a.text, False, _ext(text)))
            return joined
        return out if (q in T.PATH_KEEPS or method in T.PATH_KEEPS) else _inexact(out)

    # -- chief-only writes and the reads after them --------------------------------------
    def writes(self) -> list[tuple[set, int, int, str]]:
        """(atoms of the path, first statement that runs it, line, what) of every chief-only
        write."""
        out = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            spec, what = self._write_spec(node)
            if spec is None:
                continue
            arg = _arg(node, *spec)
            if arg is None:
                continue
            atoms = self.atoms(arg, self.s.scope_of.get(id(node), ""))
            if atoms:
                out.append((atoms, self.s.runs_at(node)[0], node.lineno, what))
        return out

    def _write_spec(self, node: ast.Call):
        q = self.q(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        short = (q or method or "").split(".")[-1]
        for table in (T.FILE_CALLBACKS, T.SAVE_FUNCTIONS, T.CHIEF_FILE_WRITERS):
            if q in table:
                return table[q], short
        if id(node) in self.data_writes and q in T.DATA_WRITERS:
            return T.DATA_WRITERS[q], short
        if method in T.SAVE_METHODS and not self._not_tf(node.func.value):
            return T.SAVE_METHODS[method], method
        if method in T.CHIEF_WRITE_METHODS:
            return T.CHIEF_WRITE_METHODS[method], method
        return None, ""

    def _not_tf(self, receiver) -> bool:
        name = _dotted(receiver)
        head = (name or "").split(".")[0]
        return head in T.NON_TF_RECEIVERS or head in self.a.non_keras_names or \
            self.a.aliases.get(head, "").split(".")[0] in T.NON_KERAS_LIBRARIES

    def reads(self) -> list[ChiefRead]:
        writes = self.writes()
        if not writes:
            return []
        used = _used_calls(self.tree)
        out = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call) or self._not_a_read(node):
                continue
            scope = self.s.scope_of.get(id(node), "")
            if scope and not self._host_code(scope):
                continue
            first, last = self.s.runs_at(node)
            args = [(i, a) for i, a in enumerate(node.args) if not isinstance(a, ast.Starred)]
            args += [(k.arg, k.value) for k in node.keywords if k.arg]
            for key, value in args:
                atoms = self.atoms(value, scope)
                hit = next(((line, what) for w_atoms, w_first, line, what in writes
                            if (last > w_first or (last == w_first and node.lineno > line))
                            and any(overlap(x, y) for x in atoms for y in w_atoms)), None)
                if hit:
                    callee = node.func.attr if isinstance(node.func, ast.Attribute) else \
                        (node.func.id if isinstance(node.func, ast.Name) else "")
                    out.append(ChiefRead(node.lineno, node.col_offset, key, id(node) in used,
                                         f"{hit[1]} (line {hit[0]})", callee))
                    break
        return out

    def _host_code(self, scope: str) -> bool:
        """Whether a function runs as Python on each worker, where a barrier can wait: not a
        tf.function (traced into a graph) nor a function only handed to something else (a
        dataset's map(), a lambda's body), which runs wherever that decides."""
        func = self.s.funcs.get(scope)
        if func is None:
            return True
        if any("function" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
               for d in func.decorator_list):
            return False
        return scope in self.s.calls or scope in self.s.in_class

    def _not_a_read(self, node: ast.Call) -> bool:
        q = self.q(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if self._write_spec(node)[0] is not None or q in T.DATA_WRITERS:
            return True
        if q in T.NOT_FILE_READS or (q in T.PATH_FUNCTIONS and q not in T.PATH_READS) \
                or q in T.RANK0_WRITE_FUNCTIONS \
                or q in T.SUMMARY_WRITERS or q in T.TF1_SUMMARY_WRITERS:
            return True
        if method in T.PATH_METHODS or method in T.NOT_FILE_READ_METHODS:
            return True
        # The script's own functions and classes: their bodies are read themselves.
        return isinstance(node.func, ast.Name) and (node.func.id in self.s.funcs
                                                    or node.func.id in self.a.model_classes
                                                    or node.func.id in self.a.layer_classes)


def _arg(node: ast.Call, keyword: str, position: int | None):
    for k in node.keywords:
        if k.arg == keyword:
            return k.value
    if position is not None and len(node.args) > position and \
            not any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
        return node.args[position]
    return None


def _used_calls(tree) -> set[int]:
    """Calls whose result is used (all but those that are a statement by themselves)."""
    alone = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    return {id(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and id(n) not in alone}


def data_writes(tree, q) -> set[int]:
    """ids of data-file writers opened by a ``with`` (each worker would write the same file)."""
    return {id(item.context_expr) for node in ast.walk(tree) if isinstance(node, ast.With)
            for item in node.items if isinstance(item.context_expr, ast.Call)
            and q(item.context_expr.func) in T.DATA_WRITERS}


def chief_reads(tree: ast.Module, analysis) -> list[ChiefRead]:
    return Dataflow(tree, analysis).reads()
