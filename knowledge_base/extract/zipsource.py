"""Python sources of one or more wheels, read straight from the zip files.

Modules are looked up by dotted name across all the wheels of a release (TF, keras,
estimator), because the companions import from TensorFlow and the other way round.
Parsed ASTs are cached: the same defining modules are hit by hundreds of API entries.
"""
from __future__ import annotations

import ast
import zipfile
from pathlib import Path

from ..errors import WheelError


def open_wheel(path: Path, must_have: str) -> zipfile.ZipFile:
    """Open a wheel, raising WheelError naming the file if it is corrupt or not the package."""
    path = Path(path)
    try:
        z = zipfile.ZipFile(path)
        names = set(z.namelist())
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise WheelError(f"{path.name}: not a readable wheel (corrupt zip: {e})") from e
    if must_have not in names:
        z.close()
        raise WheelError(f"{path.name}: not the expected package (no {must_have} inside)")
    return z


class Sources:
    def __init__(self) -> None:
        self._files: dict[str, tuple[zipfile.ZipFile, str, bool]] = {}  # module -> (zip, name, is_pkg)
        self._ast: dict[str, ast.Module | None] = {}
        self._text: dict[str, str | None] = {}
        self.wheel_names: dict[int, str] = {}
        self._children: dict[str, list[str]] | None = None
        self._stubs: dict[str, tuple[zipfile.ZipFile, str, bool]] = {}

    def add(self, z: zipfile.ZipFile, label: str) -> None:
        self.wheel_names[id(z)] = label
        for name in z.namelist():
            # .pyi stubs describe compiled (pybind11) modules, which have no .py source:
            # tf.DType's properties live in _dtypes.so and are typed in _dtypes.pyi.
            stub = name.endswith(".pyi")
            if not (name.endswith(".py") or stub) or ".dist-info/" in name:
                continue
            parts = name[:-4 if stub else -3].split("/")
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            if not parts or not all(p.isidentifier() for p in parts):
                continue
            mod = ".".join(parts)
            if stub:
                if mod not in self._files:
                    self._stubs[mod] = (z, name, is_pkg)
                continue
            # First wheel added wins (TF before companions), packages over same-named modules.
            if mod not in self._files or (is_pkg and not self._files[mod][2]):
                self._files[mod] = (z, name, is_pkg)
                self._stubs.pop(mod, None)
        for mod, f in self._stubs.items():
            self._files.setdefault(mod, f)
        # TensorFlow makes its generated compat namespaces importable as tensorflow.compat.v2
        # (Keras writes `import tensorflow.compat.v2 as tf` and subclasses tf.Module).
        for mod in [m for m in self._files if m.startswith("tensorflow._api.v2.compat")]:
            self._files.setdefault("tensorflow." + mod[len("tensorflow._api.v2."):], self._files[mod])
        self._children = None

    def is_stub(self, module: str) -> bool:
        f = self._files.get(module)
        return bool(f and f[1].endswith(".pyi"))

    def has(self, module: str) -> bool:
        return module in self._files

    def subpackages(self, module: str) -> list[str]:
        """Packages directly inside ``module`` (folders with an ``__init__.py``)."""
        if self._children is None:
            self._children = {}
            for mod, (_, _, is_pkg) in self._files.items():
                if is_pkg and "." in mod:
                    self._children.setdefault(mod.rpartition(".")[0], []).append(mod)
        return sorted(self._children.get(module, ()))

    def has_prefix(self, prefix: str) -> bool:
        return any(m.startswith(prefix) for m in self._files)

    def is_package(self, module: str) -> bool:
        f = self._files.get(module)
        return bool(f and f[2])

    def text(self, module: str) -> str | None:
        if module not in self._text:
            f = self._files.get(module)
            if f is None:
                self._text[module] = None
            else:
                z, name, _ = f
                try:
                    self._text[module] = z.read(name).decode("utf-8", "replace")
                except (zipfile.BadZipFile, OSError, EOFError) as e:
                    raise WheelError(f"{Path(z.filename).name}: corrupt member {name} ({e})") from e
        return self._text[module]

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._ast:
            src = self.text(module)
            tree = None
            if src is not None:
                try:
                    tree = ast.parse(src)
                except (SyntaxError, ValueError):
                    tree = None  # py2-only or otherwise unparsable file: treat as missing
            self._ast[module] = tree
        return self._ast[module]
