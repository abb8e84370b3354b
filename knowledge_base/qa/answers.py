"""Answers to ask / history / diff as plain data (the faces render them)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from knowledge_base import links
from knowledge_base.errors import KBError
from knowledge_base.names import canonical_rank, clean_query, is_name
from knowledge_base.qa.answer import Answer
from knowledge_base.qa.index import QuestionIndex
from knowledge_base.search import Searcher
from knowledge_base.store import KB, like_prefix
from knowledge_base.qa import error_answers, pasted


# Names whose facts come from the Keras that supplied tf.keras in that release.
KERAS_NAMES = ("tf.keras.", "tf.optimizers.", "tf.losses.", "tf.metrics.", "tf.initializers.")
# A full dotted name (tf.keras.Model.fit): asked for exactly, so answered exactly or not at all.
DOTTED_PATH = re.compile(r"(?:tf|tensorflow|keras)(?:\.[A-Za-z_]\w*)+")
# How a search hit may stand for a dotted name: the name itself, another spelling of it, its
# TF1 name's new home, or where a TF2 class's inherited member is defined. A look-alike (same
# last part, similar spelling) is a suggestion.
NAME_MATCHES = ("exact", "alias", "legacy", "inherited")
# A member the class is not shown to have, defined on other classes of its package: an answer
# in `ask` (it says so), not a symbol that `history` can name.
CANDIDATE_MATCHES = ("defined",)
# A misspelt dotted name (tf.nn.softmx) still finds its symbol in `ask` when this close.
CLOSE_SPELLING = 90


class UnknownSymbol(KBError):
    def __init__(self, name: str, suggestions: list[str], releases: str = "any release"):
        hint = f"; nearest names: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f"no such symbol in TensorFlow {releases}: {name}{hint}")
        self.name = name
        self.suggestions = suggestions
        self.releases = releases

    def to_dict(self) -> dict:
        return {"query": self.name, "match": "none", "releases": self.releases,
                "suggestions": self.suggestions, "message": str(self)}


@dataclass
class Answers:
    kb: KB
    site_url: str

    @classmethod
    def open(cls, path: Path, site_url: str) -> "Answers":
        return cls(KB(path), site_url)

    @cached_property
    def lookup(self) -> Searcher:
        """Name lookup (what ``history`` and ``diff`` need)."""
        return Searcher(self.kb.db, self.kb.versions)

    @cached_property
    def questions(self) -> QuestionIndex:
        """Name lookup and the question ranker's state (what ``ask`` needs)."""
        return QuestionIndex.build(self.lookup)

    def link(self, sym: dict) -> str:
        return links.url(self.site_url, self.kb.site_path(sym))

    def describe(self, sym: dict, ord_: int | None = None) -> dict:
        """A symbol as shown in answers: signature in release ``ord_`` (default: newest that has
        it), availability, deprecation, removal with replacement, link."""
        span = self.kb.span_at(sym["id"], ord_) if ord_ is not None else None
        signature = span["signature"] if span else sym["signature"]
        out = {
            "name": sym["name"], "kind": sym["kind"], "signature": signature,
            "summary": sym["summary"] or "", "available": self.kb.availability(sym),
            "first": sym["first"], "last": sym["last"], "removed_in": sym["removed_in"],
            "deprecated_in": sym["deprecated_in"], "deprecation": sym["deprecation"],
            "replacement": sym["replacement"], "canonical": sym["canonical"],
            "provided_by": self.kb.providers(sym), "url": self.link(sym),
        }
        if ord_ is not None:
            out["in_release"] = self.kb.versions[ord_]
            out["present_in_release"] = span is not None
        shown = ord_ if ord_ is not None else sym["last_ord"]
        if sym["name"].startswith(KERAS_NAMES):
            out["keras"] = self.kb.keras_label(shown)  # tf.keras facts depend on it
        if sym["name"].startswith("tf.compat.v1."):
            from knowledge_base.qa.tf1_fixes import tf2_way
            way = tf2_way(self.kb, sym["name"])  # TensorFlow's own migration note
            if way:
                out["tf2_way"] = way
        unusable = self.kb.unusable(sym, shown)
        if unusable:
            out["unusable"] = unusable
        parent = self.kb.symbol(sym["parent"]) if sym["kind"] in (
            "method", "property", "constant") and sym["parent"] else None
        if (parent and parent["kind"] == "class" and sym["object"] and sym["canonical"] != sym["name"]
                and sym["object"] != f"{parent['object']}.{sym['short']}"):
            out["inherited_from"] = sym["canonical"].rpartition(".")[0]
        return out

    # -- ask --------------------------------------------------------------------------------
    def ask(self, query: str, version: str | None = None, limit: int = 5,
            errors: bool = True) -> Answer:
        if errors and (error := pasted.read(query, error_answers.templates)) is not None:
            return error_answers.answer(self, error, version, limit)  # fix first (issue 27)
        limit = max(1, min(int(limit), 50))
        q = clean_query(query)
        ord_ = self.kb.ord_of(version) if version else None
        if not q:
            return Answer(q, message="empty question: ask for a symbol name or describe what "
                          "you want to do", suggestions=[])
        hits = self.questions.search(q, limit=limit * 4 if ord_ is not None else limit)
        results, absent = self._results(q, hits, ord_, limit)
        out = Answer(q, self.kb.versions[ord_] if ord_ is not None else self.kb.newest, results)
        self._legacy(q, results, out)
        if absent is not None:
            where = (f"{absent['name']} is not in {self.kb.versions[ord_]}; "
                     f"it is in {absent['available']}")
            out.absent = {"name": absent["name"], "available": absent["available"]}
            if results:
                results[0]["note"] = "; ".join(filter(None, [
                    where + f" (nearest in {self.kb.versions[ord_]} below)",
                    results[0].get("note")]))
        in_words = not is_name(q)
        if in_words and self.questions.semantic is None:
            # Said, not hidden: without the sentence model a question is matched by its words.
            out.warning = (f"question search by meaning is off ({self.questions.semantic_error}"
                              "); these answers match the question's words only")
        if results and results[0]["match"] == "text" and in_words:
            out.unsure = self.unsure(results[0]["score"], self.questions.confidence) or None
        if absent is None and (not results and DOTTED_PATH.fullmatch(q) or results and
                               self._not_held(q, results[0]["name"], results[0]["match"], True)):
            missing = self.unknown(q, results)
            return replace(out, query=missing.name, results=[], match="none",
                           releases=missing.releases, suggestions=missing.suggestions,
                           message=str(missing))
        if not results:
            out.suggestions = self.lookup.nearest_names(q)
            out.message = (where if absent is not None else f"no symbol matches {q!r}" + (
                f" in {self.kb.versions[ord_]}" if ord_ is not None else ""))
        return out

    def _results(self, q: str, hits: list, ord_: int | None,
                 limit: int) -> tuple[list[dict], dict | None]:
        """The hits as answers (in release ``ord_`` when given), and the symbol the name meant
        when it is not in that release."""
        results: list[dict] = []
        absent = None  # the symbol the name meant, when it is not in the asked release
        inh = self.lookup.inherited(q) if any(
            h.how in ("inherited", *CANDIDATE_MATCHES) for h in hits) else None
        for h in hits:
            sym = self.kb.symbol_by_id(h.id)
            d = self.describe(sym, ord_)
            if inh is not None and h.how in ("inherited", *CANDIDATE_MATCHES):
                if ord_ is not None and not inh.covers(ord_):
                    # The defining class has it in that release; the class asked about not.
                    if absent is None and not results:
                        absent = {"name": inh.query, "available": inh.available(self.kb.versions)}
                    continue
                if ord_ is not None and not d["present_in_release"]:
                    continue  # another name answers for that release
                if any(r.get("note") == h.note for r in results):
                    h.note = ""  # said once, on the first defining member
            elif ord_ is not None and not d["present_in_release"]:
                if absent is None and not results and h.how != "text":
                    absent = d
                continue
            d.update(score=round(h.score, 3), match=h.how)
            if h.note:
                d["note"] = h.note
            results.append(d)
            if len(results) >= limit:
                break
        return results, absent

    def _legacy(self, q: str, results: list[dict], out: Answer) -> None:
        """What the upgrade tables say of a TF1 name asked for (a note, or ``out.legacy``)."""
        legacy = self.lookup.renames.get(q) or self.lookup.renames.get("tf." + q)
        current = next((r for r in results if r["match"] == "exact" and r["last"] == self.kb.newest
                        and r["name"] in (q, "tf." + q)), None)
        if legacy and current is not None:
            # Still TF2 API (tf.strings.split): the upgrade note is about TF1 code using it.
            if legacy[1] and not current.get("note"):
                current["note"] = f"in TF1 code: {legacy[1]}"
        elif legacy and not any(r.get("match") == "legacy" for r in results):
            out.legacy = {"name": q, "new": legacy[0], "note": legacy[1]}
        elif not legacy and (pre := self.lookup.renamed_prefix(q)) and (pre[2] or not any(
                r.get("match") == "legacy" for r in results)):
            out.legacy = {"name": pre[0], "new": pre[1], "note": pre[2]}
        elif q.startswith("tf.contrib.") and not legacy:
            out.legacy = {"name": q, "new": None, "note": (
                "tf.contrib was removed in TF 2.0: its parts moved into TF core (tf.compat.v1 "
                "for TF1 behaviour), Keras, or separate packages such as TensorFlow Addons "
                "and tf-slim")}

    @staticmethod
    def unsure(score: float, conf: dict | None = None) -> str:
        """Said when a question's first answer scores as a guess (the threshold and its
        measured hit rates come from the ranker's fit, ranking.yaml; ``conf``: its
        confidence section, when the caller has it already)."""
        if conf is None:
            from knowledge_base.qa.questions import ranking  # NumPy: for questions in words
            conf = ranking().get("confidence") or {}
        if not conf or score >= conf["unsure_below"]:
            return ""
        below = conf["below"]
        return (f"no answer stands out: for questions scored this low, the first answer was "
                f"right {below['top1']:.0%} of the time and the right one among the first five "
                f"{below['top5']:.0%}; name the API, or say more of what you want to do")

    # -- history ----------------------------------------------------------------------------
    def find(self, name: str) -> tuple[dict, str]:
        """The symbol ``name`` means; a dotted name must be in some release (or be another
        spelling or the TF1 name of one), else :class:`UnknownSymbol` with the nearest names."""
        q = clean_query(name)
        if not q:
            raise KBError("give a symbol name, e.g. tf.keras.Model.fit")
        hit = self.questions.resolve(q)
        if hit is None:
            raise self.unknown(q, [])
        sym = self.kb.symbol_by_id(hit.id)
        if self._not_held(q, sym["name"], hit.how):
            raise self.unknown(q, [{"name": sym["name"]}])
        return sym, hit.note

    @property
    def releases(self) -> str:
        return f"{self.kb.versions[0]}–{self.kb.newest}"

    def _not_held(self, q: str, found: str, how: str, close: bool = False) -> bool:
        """Is ``q`` a dotted name that no release holds, ``found`` being only a look-alike?"""
        if (how in NAME_MATCHES or not DOTTED_PATH.fullmatch(q)
                or close and how in CANDIDATE_MATCHES):
            return False
        if close:
            from rapidfuzz import fuzz
            return fuzz.ratio(q.lower(), found.lower()) < CLOSE_SPELLING
        return True

    def unknown(self, q: str, found: list[dict]) -> UnknownSymbol:
        """The answer for a dotted name no release holds: the closest full names first (what
        the search found, then names spelt most like the whole path), then same last part."""
        from rapidfuzz import fuzz, process
        names, renames = self.lookup.names, self.lookup.renames
        scored = [(score, n) for n, score, _ in process.extract(
            q, names, scorer=fuzz.ratio, limit=3, score_cutoff=70)]
        # TF1 names (tf.Session) are not symbols of any release but resolve through the
        # rename table: one spelt like q suggests its TF2 home (tf.compat.v1.Session).
        for old, score, _ in process.extract(q, list(renames), scorer=fuzz.ratio, limit=3,
                                             score_cutoff=70):
            new = renames[old][0]
            if new and new in self.lookup.name_to_id:
                scored.append((score, new))
        close = [n for _score, n in sorted(scored, key=lambda x: -x[0])]
        picks = close + [f["name"] for f in found[:1]] + self.lookup.nearest_names(q)
        return UnknownSymbol(q, list(dict.fromkeys(picks))[:5], self.releases)

    def history(self, name: str) -> dict:
        sym, note = self.find(name)
        events = [{"release": e["release"], "kind": e["kind"], "detail": e["detail"],
                   **({"data": e["data"]} if e["data"] else {})} for e in self.kb.events(sym["id"])]
        out = {"symbol": self.describe(sym), "aliases": self.kb.aliases(sym), "events": events}
        if sym["name"] != clean_query(name):
            out["resolved_from"] = clean_query(name)
        if note:
            out["note"] = note
        return out

    # -- diff -------------------------------------------------------------------------------
    def diff(self, v1: str, v2: str, module: str | None = None) -> dict:
        o1, o2 = self.kb.ord_of(v1), self.kb.ord_of(v2)
        if o1 == o2:
            raise KBError(f"{v1} and {v2} are the same release")
        # Asked newer first: answered older -> newer (and said so), so that moves are moves
        # and the release page linked is the newer one's, as in the usual order.
        swapped = o1 > o2
        if swapped:
            o1, o2 = o2, o1
        if module:
            module = clean_query(module).rstrip(".")
            if not module.startswith("tf"):
                module = "tf." + module
            sym = self.kb.symbol(module)
            if sym is None:
                raise UnknownSymbol(module, self.lookup.nearest_names(module))
            if not (self.kb.span_at(sym["id"], o1) or self.kb.span_at(sym["id"], o2)):
                # Otherwise the answer is "0 changes", which reads as "nothing changed".
                raise KBError(f"{module} is in neither {self.kb.versions[o1]} nor "
                              f"{self.kb.versions[o2]}; it is in {self.kb.availability(sym)}")
        old, new = self._state(o1, module), self._state(o2, module)
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        changed, deprecated, undeprecated = [], [], []
        for n in sorted(set(old) & set(new)):
            a, b = old[n], new[n]
            if a["signature"] != b["signature"] and (a["signature"] or b["signature"]):
                changed.append({"name": n, "from": a["signature"], "to": b["signature"]})
            was, now = _whole(a["deprecation"]), _whole(b["deprecation"])
            if not was and now:
                deprecated.append({"name": n, "deprecation": now})
            elif was and not now:
                undeprecated.append(n)
        # Moves: a removed name whose defining object is public under an added/kept name.
        by_obj_new: dict[str, list[str]] = {}
        for n, s in new.items():
            if s["object"]:
                by_obj_new.setdefault(s["object"], []).append(n)
        moved = []
        # Moves recorded by the builder (same object, or an alias that survived).
        rows = self.kb.db.execute(
            "SELECT s.name, e.data FROM events e JOIN symbols s ON s.id = e.symbol_id "
            "WHERE e.kind = 'removed' AND e.data IS NOT NULL AND e.ord > ? AND e.ord <= ?",
            (o1, o2))
        recorded = {n: json.loads(d).get("to") for n, d in rows}
        for n in removed:
            # Members move with their class only (see the builder's recorded moves).
            member = old[n]["kind"] in ("method", "property")
            targets = [] if member else by_obj_new.get(old[n]["object"] or "", [])
            if targets:
                moved.append({"from": n, "to": sorted(targets, key=canonical_rank)[0]})
            elif recorded.get(n) in new:
                moved.append({"from": n, "to": recorded[n]})
        moved_from = {m["from"] for m in moved}
        gone = [n for n in removed if n not in moved_from]
        # Gone here but back in a later release: not what "removed" should make one believe.
        later = {r[0] for r in self.kb.db.execute(
            "SELECT DISTINCT s.name FROM spans p JOIN symbols s ON s.id = p.symbol_id "
            "WHERE p.first_ord > ?", (o2,))} & set(gone)
        return {
            "from": self.kb.versions[o1], "to": self.kb.versions[o2], "module": module,
            "swapped": swapped,
            "added": added, "removed": [n for n in gone if n not in later],
            "removed_back_later": sorted(later),
            "moved": moved, "changed": changed, "deprecated": deprecated,
            "undeprecated": undeprecated,
            "counts": {"added": len(added), "removed": len(gone) - len(later),
                       "back_later": len(later), "moved": len(moved), "changed": len(changed),
                       "deprecated": len(deprecated)},
            "url": links.url(self.site_url, links.release_page(self.kb.versions[o2])),
            # Facts of tf.keras depend on which Keras supplied it: said when that changed.
            "keras": (self.kb.keras_switch(o1, o2) if not module or module == "tf" or
                      module.startswith("tf.keras") else None),
            "unusable": sorted(n for n, s in new.items() if '"how": "raises"' in (
                s["deprecation"] or "") and '"how": "raises"' not in (
                (old.get(n) or {}).get("deprecation") or "")),
        }

    def _state(self, ord_: int, module: str | None) -> dict[str, dict]:
        sql = ("SELECT s.name, p.signature, p.object, p.deprecation, p.kind FROM spans p JOIN symbols s "
               "ON s.id = p.symbol_id WHERE p.first_ord <= ? AND p.last_ord >= ?")
        params: list = [ord_, ord_]
        if module:
            sql += " AND (s.name = ? OR s.name LIKE ? ESCAPE '\\')"
            params += [module, like_prefix(module)]
        return {r[0]: {"signature": r[1], "object": r[2], "deprecation": r[3], "kind": r[4]}
                for r in self.kb.db.execute(sql, params)}


def _whole(dep: str | None) -> str | None:
    """The instructions of a deprecation of the whole symbol (not of some arguments)."""
    if not dep:
        return None
    d = json.loads(dep)
    return None if d.get("args") else (d.get("instructions") or "deprecated")
