"""Runs INSIDE a TensorFlow runtime (its own interpreter, stdlib + tensorflow only): what
resolves there. Reads a JSON request on stdin, writes one JSON object on stdout.

Request: ``{"names": ["tf.keras.Model.get_weights", ...], "walk": ["tf.keras", ...]}``.
Answer: ``{"tf_version", "keras_version", "packages": {companion: installed},
"states": {name: state}, "walked": [names]}``,
``state`` one of ``"ok"``, ``"absent"`` or ``"unusable: <Error>: <message>"`` (it resolves,
but its body raises on use and calling it does raise: Keras 3's legacy optimizer stubs).

A name resolves when ``getattr`` from ``tensorflow`` down its dotted parts succeeds, and, for
a member of ``tf.Tensor``/``tf.Variable``, when an eager instance has it (``numpy`` lives on
``EagerTensor``). The walk lists public names below each prefix: module attributes, recursing
into API modules, and the public members of classes as ``dir()`` shows them (inherited ones
included, builtins' own ones such as ``tuple.count`` left out).
"""
import ast
import importlib
import inspect
import json
import os
import signal
import sys
import textwrap
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SKIP = ("tf.compat.v2", "tf.compat.v1.compat")
API_PACKAGES = ("tensorflow", "keras", "tf_keras", "tensorboard", "tensorflow_estimator")
INSTANCES = {"tf.Tensor": lambda tf: tf.constant(0.0), "tf.Variable": lambda tf: tf.Variable(0.0)}


def _attr(obj, part):
    """obj.part; for a module, also its submodule ``part`` (a generated API package that its
    parent does not import, such as Keras 3's tf.keras.saving, still imports by name)."""
    try:
        return getattr(obj, part)
    except AttributeError:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module(f"{obj.__name__}.{part}")
        raise


def resolve(tf, name):
    obj = tf
    parts = name.split(".")[1:]
    for i, part in enumerate(parts):
        try:
            obj = _attr(obj, part)
        except Exception:  # noqa: BLE001 - absent, or a lazy module that fails to load
            parent = "tf." + ".".join(parts[:i])
            if i == len(parts) - 1 and parent in INSTANCES:
                try:
                    return getattr(INSTANCES[parent](tf), part)
                except Exception:  # noqa: BLE001
                    pass
            raise LookupError(name)
    return obj


def _raises_first(fn):
    """The exception a function's body raises first thing, by its source; else None."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except Exception:  # noqa: BLE001 - no source (C, pybind) or unparsable
        return None
    node = tree.body[0] if tree.body else None
    body = list(getattr(node, "body", []))
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    if body and isinstance(body[0], ast.Raise) and body[0].exc is not None:
        exc = body[0].exc
        f = exc.func if isinstance(exc, ast.Call) else exc
        kind = getattr(f, "id", None) or getattr(f, "attr", None)
        return None if kind == "NotImplementedError" else kind
    return None


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def state(obj):
    """'ok' or 'unusable: ...' for a resolved object."""
    target = obj
    if inspect.isclass(obj):
        target = next((c.__dict__["__init__"] for c in obj.__mro__ if "__init__" in c.__dict__), None)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        return "ok"
    kind = _raises_first(target)
    if kind is None:
        return "ok"
    # Required positional arguments get None: the stub raises before reading them.
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        params = []
    required = [p for p in params[1 if inspect.isclass(obj) else 0:]
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    try:
        obj(*[None] * len(required))
    except _Timeout:
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the stub's own error is the answer
        if type(exc).__name__ == kind:
            return f"unusable: {kind}: {' '.join(str(exc).split())}"[:600]
        return "ok"
    finally:
        signal.alarm(0)
    return "ok"


def _builtin_member(cls, member):
    """Defined by Python itself (tuple.count, MutableMapping.items): not TensorFlow's API."""
    for c in cls.__mro__:
        if member in c.__dict__:
            top = c.__module__.split(".")[0]
            return top == "builtins" or top in getattr(sys, "stdlib_module_names", ())
    return False


def walk(tf, prefix):
    out = []
    try:
        root = resolve(tf, prefix) if prefix != "tf" else tf
    except LookupError:
        return out
    seen = set()
    stack = [(prefix, root)]
    while stack:
        name, obj = stack.pop()
        if any(name == s or name.startswith(s + ".") for s in SKIP):
            continue
        out.append(name)
        if isinstance(obj, types.ModuleType):
            if id(obj) in seen or not obj.__name__.startswith(API_PACKAGES):
                continue
            seen.add(id(obj))
            try:
                attrs = dir(obj)
            except Exception:  # noqa: BLE001
                continue
            for a in attrs:
                if a.startswith("_"):
                    continue
                try:
                    child = getattr(obj, a)
                except Exception:  # noqa: BLE001
                    continue
                stack.append((f"{name}.{a}", child))
        elif inspect.isclass(obj) and name.count(".") < 8:
            for a in dir(obj):
                if a.startswith("_") or _builtin_member(obj, a):
                    continue
                out.append(f"{name}.{a}")
    return out


def main():
    req = json.load(sys.stdin)
    import tensorflow as tf
    keras_version = getattr(tf.keras, "__version__", None)
    if keras_version is None:
        try:
            import keras
            keras_version = keras.__version__
        except Exception:  # noqa: BLE001
            pass
    states = {}
    for name in req.get("names", []):
        try:
            obj = resolve(tf, name)
        except LookupError:
            states[name] = "absent"
            continue
        except BaseException as exc:  # noqa: BLE001 - resolving must not end the probe
            states[name] = f"absent: {type(exc).__name__}"
            continue
        # Only module-level classes and functions can be stubs; a member that raises when
        # called bare (an operator, an abstract method) is not "unusable".
        parent = name.rpartition(".")[0]
        try:
            at_module = parent == "tf" or isinstance(resolve(tf, parent), types.ModuleType)
            states[name] = state(obj) if at_module else "ok"
        except BaseException:  # noqa: BLE001
            states[name] = "ok"
    walked = sorted({n for p in req.get("walk", []) for n in walk(tf, p)})
    import importlib.util
    packages = {p: importlib.util.find_spec(p) is not None
                for p in ("keras", "tf_keras", "tensorflow_estimator", "tensorboard")}
    json.dump({"tf_version": tf.__version__, "keras_version": keras_version,
               "packages": packages, "states": states, "walked": walked}, sys.stdout)


if __name__ == "__main__":
    main()
