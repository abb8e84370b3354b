"""Members a TF2 class inherits from another public class.

The extractor lists a TF2 class's members where they are defined, not again under every public
subclass (``tf.keras.Model`` does not list ``set_weights``: ``tf.keras.layers.Layer`` does),
while a ``tf.compat.v1`` class lists everything it has, inherited or not. So a dotted name
``P.m`` that the KB does not hold, under a class ``P`` that it does, may still be real. The KB
holds no class hierarchy; this module finds where ``m`` is defined, release by release, from
``P``'s ``tf.compat.v1`` twin (``tf.compat.v1.`` + ``P`` less ``tf.``):

``twin`` (shown)
    In that release the twin is the same class object as ``P`` (TF core, Keras up to 2.15):
    the twin's ``m`` names the defining class's member, and the TF2 public names of that
    member object are the answer. Exact. A twin that is ``P`` and lists no ``m`` shows that
    ``P`` has none.
``parallel`` (inferred)
    The twin is another class (Keras 3 releases, 2.16+, where the twin is tf_keras';
    TF core's V1/V2 pairs such as ``tf.data.TFRecordDataset``). A class ``C`` the twin
    inherits from (it defines some member the twin lists) stands for ``B``, its TF2 name:
    ``C`` itself when ``C`` is TF2 API, else ``C`` less ``compat.v1``; ``B`` must be a TF2
    class in that release, not ``P``'s own class, from the same top package as ``P``
    (``keras``, ``tensorflow``: Keras 3 classes do not derive from TF core's). Then ``P``
    is taken to derive from ``B`` as the twin derives from ``C``. ``m`` is answered by
    ``B.m`` where the twin's own ``m`` is defined on such a ``C``; else, when the twin's
    ``m`` is not (or the twin has none, e.g. a member new in Keras 3), by the one member
    object that all such ``B`` defining ``m`` agree on. That ``P`` derives from ``B`` is an
    inference from the twins, not read from ``P``'s own code: a Keras 3 class whose bases
    differ from its tf_keras namesake's would be answered wrongly.
``defined`` (not shown)
    No twin in that release (a class new in Keras 3): the TF2 classes of ``P``'s package
    that define a member ``m`` are candidates only; nothing in the KB shows that ``P``
    derives from any of them.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from knowledge_base.names import canonical_rank

COMPAT = "tf.compat.v1."
SHOWN = ("twin", "parallel")
MAX_CANDIDATES = 3


@dataclass
class Run:
    name: str        # the defining member's public name, e.g. tf.keras.layers.Layer.set_weights
    first: int       # release ordinals, inclusive
    last: int
    how: str         # twin, parallel, defined

    @property
    def owner(self) -> str:
        return self.name.rpartition(".")[0]


@dataclass
class Inherited:
    query: str                                            # P.m
    parent: str                                           # P
    member: str                                           # m
    twin: str                                             # tf.compat.v1 twin's name
    runs: list[Run] = field(default_factory=list)         # shown: twin / parallel
    candidates: list[Run] = field(default_factory=list)   # defined on, not shown
    # P's releases where it is shown that P has no m, and where nothing is shown either way.
    absent: list[tuple[int, int]] = field(default_factory=list)
    unknown: list[tuple[int, int]] = field(default_factory=list)

    @property
    def shown(self) -> bool:
        return bool(self.runs)

    def names(self) -> list[str]:
        """Defining members to answer with, the one covering most releases first."""
        span: dict[str, int] = {}
        for r in self.runs or self.candidates:
            span[r.name] = span.get(r.name, 0) + r.last - r.first + 1
        return sorted(span, key=lambda n: (-span[n], canonical_rank(n)))

    def covers(self, ord_: int) -> bool:
        return any(r.first <= ord_ <= r.last for r in self.runs or self.candidates)

    def available(self, versions: list[str]) -> str:
        spans = [(r.first, r.last) for r in self.runs or self.candidates]
        return ", ".join(_rng(versions, a, b) for a, b in _merge(spans))

    def note(self, versions: list[str]) -> str:
        def owners(runs: list[Run]) -> str:
            by_owner: dict[str, list[tuple[int, int]]] = {}
            for r in runs:
                by_owner.setdefault(r.owner, []).append((r.first, r.last))
            return " / ".join(f"{o} ({', '.join(_rng(versions, a, b) for a, b in _merge(s))})"
                              for o, s in by_owner.items())

        if not self.runs:
            return (f"{self.query} is not listed under {self.parent}; a member {self.member} "
                    f"is defined on {owners(self.candidates)}, but the KB cannot show that "
                    f"{self.parent} derives from it")
        text = f"{self.query} is inherited: defined on {owners(self.runs)}"
        inferred = _merge([(r.first, r.last) for r in self.runs if r.how == "parallel"])
        if inferred:
            text += (f"; for {', '.join(_rng(versions, a, b) for a, b in inferred)} inferred "
                     f"from {self.twin}, a different class in those releases")
        if self.absent:
            text += (f"; {self.parent} has none in "
                     + ", ".join(_rng(versions, a, b) for a, b in self.absent))
        if self.unknown:
            text += "; not shown for " + ", ".join(_rng(versions, a, b) for a, b in self.unknown)
        return text


def resolve(db: sqlite3.Connection, parent: str, member: str) -> Inherited | None:
    """Where ``parent.member`` comes from when the KB does not list it; None when ``parent``
    is not a TF2 class or no release gives an answer (see the module docstring)."""
    if parent.startswith(COMPAT) or not parent.startswith("tf.") or not member.isidentifier():
        return None
    if db.execute("SELECT 1 FROM symbols WHERE name = ?", (f"{parent}.{member}",)).fetchone():
        return None  # listed: not this module's question
    return _Resolver(db, parent, member).run()


class _Resolver:
    def __init__(self, db: sqlite3.Connection, parent: str, member: str):
        self.db, self.parent, self.member = db, parent, member
        self.twin_name = COMPAT + parent[3:]
        self.classes = self._class_spans([parent, self.twin_name])
        # Every public member named ``member``: name -> {ord: object}.
        self.members: dict[str, dict[int, str]] = {}
        for name, first, last, obj in db.execute(
                "SELECT s.name, p.first_ord, p.last_ord, p.object FROM symbols s JOIN spans p "
                "ON p.symbol_id = s.id WHERE s.short = ? COLLATE NOCASE "
                "AND s.parent IS NOT NULL", (member,)):
            if obj and name.rpartition(".")[2] == member:
                _fill(self.members.setdefault(name, {}), first, last, obj)
        owners = {n.rpartition(".")[0] for n in self.members}
        self.classes.update(self._class_spans(sorted(owners - set(self.classes))))
        self._twin_owners: dict[int, set[str]] | None = None
        self._names_of: dict[str, dict[int, list[str]]] = {}

    def run(self) -> Inherited | None:
        own = self.classes.get(self.parent)
        if not own or not self.members:
            return None
        twin = self.classes.get(self.twin_name, {})
        twin_member = self.members.get(f"{self.twin_name}.{self.member}", {})
        found: dict[int, tuple[list[str], str]] = {}
        for o, cls_obj in sorted(own.items()):
            if twin.get(o) == cls_obj:
                if o in twin_member:
                    found[o] = (self._tf2_names(o, twin_member[o]), "twin")
                continue  # a twin that is P lists all P has: no m in this release
            if o in twin:
                names: list[str] = []
                if o in twin_member:
                    names = self._via_owner(o, cls_obj, twin_member[o].rpartition(".")[0])
                if not names:
                    names = self._via_bases(o, cls_obj)
                found[o] = (names, "parallel")
            else:
                found[o] = (self._defined(o, cls_obj), "defined")
        found = {o: (sorted(n, key=canonical_rank), h) for o, (n, h) in found.items() if n}
        if not found:
            return None
        out = Inherited(f"{self.parent}.{self.member}", self.parent, self.member, self.twin_name)
        shown = {o: v for o, v in found.items() if v[1] in SHOWN}
        for first, last in _merge([(o, o) for o in shown]):
            out.runs += _cover({o: shown[o] for o in range(first, last + 1)})
        if not out.runs:
            per: dict[str, list[int]] = {}
            for o, (names, _how) in found.items():
                for n in names:
                    per.setdefault(n, []).append(o)
            for n in sorted(per, key=lambda n: (-len(per[n]), canonical_rank(n)))[:MAX_CANDIDATES]:
                out.candidates += [Run(n, a, b, "defined")
                                   for a, b in _merge([(o, o) for o in per[n]])]
        none = [o for o in own if twin.get(o) == own[o] and o not in twin_member]
        out.absent = _merge([(o, o) for o in none])
        out.unknown = _merge([(o, o) for o in own if o not in shown and o not in none])
        return out

    # -- the three ways ------------------------------------------------------------------
    def _tf2_names(self, o: int, obj: str) -> list[str]:
        """TF2 public names, on a class other than P, of member object ``obj`` in release ``o``."""
        return [n for n, per in self.members.items()
                if per.get(o) == obj and _tf2(n) and n.rpartition(".")[0] != self.parent
                and o in self.classes.get(n.rpartition(".")[0], {})]

    def _counterparts(self, o: int, cls_obj: str, names: list[str]) -> list[str]:
        """The TF2 classes that the public classes ``names`` stand for in release ``o``."""
        out = []
        for c in names:
            b = "tf." + c[len(COMPAT):] if c.startswith(COMPAT) else c
            if not _tf2(b):
                continue
            if b not in self.classes:
                self.classes.update(self._class_spans([b]))
            b_obj = self.classes.get(b, {}).get(o)
            if b_obj and b_obj != cls_obj and _top(b_obj) == _top(cls_obj):
                out.append(b)
        return out

    def _via_owner(self, o: int, cls_obj: str, owner_obj: str) -> list[str]:
        """The twin's ``m`` is defined on class object ``owner_obj``: ``B.m`` for the TF2 class
        ``B`` that a public name of it stands for."""
        names = [c for c, per in self.classes.items() if per.get(o) == owner_obj]
        out: list[str] = []
        for b in self._counterparts(o, cls_obj, names):
            obj = self.members.get(f"{b}.{self.member}", {}).get(o)
            if obj:
                out += self._tf2_names(o, obj)
        return list(dict.fromkeys(out))

    def _via_bases(self, o: int, cls_obj: str) -> list[str]:
        """The one member object ``m`` that the TF2 classes standing for the twin's bases in
        release ``o`` agree on (none when they disagree: which one comes first in P's bases
        is not known)."""
        names = [n for obj in sorted(self.twin_owners().get(o, ()))
                 for n in self.names_of(obj).get(o, ())]
        objs = {self.members[f"{b}.{self.member}"][o] for b in self._counterparts(o, cls_obj, names)
                if o in self.members.get(f"{b}.{self.member}", {})}
        return self._tf2_names(o, objs.pop()) if len(objs) == 1 else []

    def _defined(self, o: int, cls_obj: str) -> list[str]:
        """TF2 classes of P's package that define ``m`` themselves in release ``o``, one
        public name per member object."""
        out: dict[str, str] = {}
        for n, per in self.members.items():
            owner = n.rpartition(".")[0]
            owner_obj = self.classes.get(owner, {}).get(o)
            if (o in per and _tf2(n) and owner != self.parent and owner_obj
                    and per[o] == f"{owner_obj}.{self.member}"
                    and _package(owner_obj) == _package(cls_obj)
                    and canonical_rank(n) < canonical_rank(out.get(per[o], n + "~"))):
                out[per[o]] = n
        return list(out.values())

    # -- KB reads ------------------------------------------------------------------------
    def twin_owners(self) -> dict[int, set[str]]:
        """Per release, the class objects that define the twin's members (its bases, and
        itself)."""
        if self._twin_owners is None:
            self._twin_owners = {}
            rows = self.db.execute(
                "SELECT s.short, p.first_ord, p.last_ord, p.object FROM symbols s JOIN spans p "
                "ON p.symbol_id = s.id WHERE s.parent = ?", (self.twin_name,))
            for short, first, last, obj in rows:
                if obj and obj.endswith("." + short):
                    for o in range(first, last + 1):
                        self._twin_owners.setdefault(o, set()).add(obj[:-len(short) - 1])
            missing = ({obj for objs in self._twin_owners.values() for obj in objs}
                       - set(self._names_of))
            self._names_of.update({obj: {} for obj in missing})
            if missing:
                marks = ",".join("?" * len(missing))
                rows = self.db.execute(
                    "SELECT s.name, p.first_ord, p.last_ord, p.object FROM spans p JOIN symbols s "
                    f"ON s.id = p.symbol_id WHERE p.kind = 'class' AND p.object IN ({marks})",
                    sorted(missing))
                for name, first, last, obj in rows:
                    for o in range(first, last + 1):
                        self._names_of[obj].setdefault(o, []).append(name)
        return self._twin_owners

    def names_of(self, cls_obj: str) -> dict[int, list[str]]:
        return self._names_of.get(cls_obj, {})

    def _class_spans(self, names: list[str]) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {}
        for i in range(0, len(names), 500):
            chunk = names[i:i + 500]
            rows = self.db.execute(
                "SELECT s.name, p.first_ord, p.last_ord, p.object FROM symbols s JOIN spans p "
                f"ON p.symbol_id = s.id WHERE p.kind = 'class' AND s.name IN "
                f"({','.join('?' * len(chunk))})", chunk)
            for name, first, last, obj in rows:
                if obj:
                    _fill(out.setdefault(name, {}), first, last, obj)
        return out


def _cover(per: dict[int, tuple[list[str], str]]) -> list[Run]:
    """The fewest runs of one name each that answer every release in ``per`` (consecutive
    ordinals), greedily: the name that answers the longest stretch first; split again where
    the evidence (twin, parallel) changes."""
    ords = sorted(per)
    out: list[Run] = []
    i = 0
    while i < len(ords):
        best, best_end = None, i
        for name in per[ords[i]][0]:
            j = i
            while j + 1 < len(ords) and name in per[ords[j + 1]][0]:
                j += 1
            if best is None or j > best_end:
                best, best_end = name, j
        for o in ords[i:best_end + 1]:
            how = per[o][1]
            if out and out[-1].name == best and out[-1].how == how and out[-1].last == o - 1:
                out[-1].last = o
            else:
                out.append(Run(best, o, o, how))
        i = best_end + 1
    return out


def _fill(per: dict[int, str], first: int, last: int, obj: str) -> None:
    for o in range(first, last + 1):
        per[o] = obj


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _rng(versions: list[str], a: int, b: int) -> str:
    return versions[a] if a == b else f"{versions[a]}–{versions[b]}"


def _tf2(name: str) -> bool:
    return ".compat." not in name


def _top(obj: str) -> str:
    """The top package of an object: keras, tf_keras, tensorflow..."""
    return obj.split(".", 1)[0]


def _package(obj: str) -> str:
    """The code base a class belongs to, for candidates: the top package, and within
    TensorFlow its subpackage (tensorflow.python.data), as TensorFlow is many code bases."""
    parts = obj.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["tensorflow", "python"] else parts[0]
