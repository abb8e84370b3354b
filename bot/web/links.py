"""Links to the web view: the one place where an answer's named objects become URLs.

An answer (a :class:`bot.reply.Reply`, or a Slack job message) names objects: a run (a job),
a model version, a dataset, a project, a pipeline, a pipeline run, or a list of them. When
``[web] url`` is set, each gets a link to the web view's page for it (``ROUTES``, which
bot/web/pages.py serves); when it is not, there are no links at all (never a link to an
address nobody configured). Slack blocks (rich-text links) and terminal text both render
the :class:`Link` objects made here.

Which objects an answer names is read from the answer itself, by rules as data
(:data:`FIELDS`): the job it is about, and what its ``data`` holds under known keys. This
module imports nothing heavy: the terminal loads it for every answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import quote, urlencode, urlsplit

# kind -> the web view's path for one object of that kind ("" for a list page; its key is
# the query string).
ROUTES: dict[str, str] = {
    "run": "runs/{key}", "model": "models/{key}", "dataset": "datasets/{key}",
    "project": "projects/{key}", "pipeline": "pipelines/{key}",
    "pipeline-run": "pipeline-runs/{key}",
    # list pages; the key is a query string (may be empty)
    "runs": "runs", "compare": "compare", "models": "models", "datasets": "datasets",
    "projects": "projects", "pipelines": "pipelines",
}
LISTS = ("runs", "compare", "models", "datasets", "projects", "pipelines")

# What an answer's data names, by key: data[key] is one object (a dict) of that kind, and
# its fields name further objects (field -> kind). A list under a plural key is linked as
# its list page.
FIELDS: dict[str, tuple[str, str, dict[str, str]]] = {
    # data key: (kind, the field holding its key, {other field: kind}); another field may hold
    # one key, a list of keys, or a list of {"id": ...}; "*" marks "KIND NAME" texts
    # ("pipeline nightly", "job j-1a2b3c4d": what uses an entry).
    "model": ("model", "ref", {"parent": "model", "derived": "model", "dataset": "dataset",
                                "project": "project", "job_id": "run", "run_id": "pipeline-run",
                                "used_by": "*"}),
    "dataset": ("dataset", "name", {"project": "project", "models": "model", "used_by": "*"}),
    "project": ("project", "name", {"jobs": "run", "members": "*"}),
    "pipeline": ("pipeline", "name", {"project": "project", "uses": "*",
                                      "runs": "pipeline-run"}),
    "run": ("pipeline-run", "id", {"pipeline": "pipeline", "models": "model"}),  # a pipeline run
    "job": ("run", "id", {"project": "project"}),
}
# What "KIND NAME" texts call each kind.
WORDS = {"job": "run", "run": "pipeline-run", "model": "model", "dataset": "dataset",
         "project": "project", "pipeline": "pipeline"}
# data key holding a list -> the FIELDS rule for each item ("runs": tracked runs, whose rows
# are jobs, or pipeline runs, whose rows have a "pipeline")
PLURALS: dict[str, str] = {"jobs": "job", "runs": "job", "models": "model",
                           "datasets": "dataset", "projects": "project", "pipelines": "pipeline"}
MAX_LINKS = 10  # Slack's context block takes ten elements; more objects link their list


@dataclass(frozen=True)
class Ref:
    """An object an answer names: its kind (a key of ROUTES) and its key (id, name, ref)."""
    kind: str
    key: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ROUTES:
            raise ValueError(f"no web page for {self.kind!r}")

    @property
    def label(self) -> str:
        if self.kind in LISTS:
            return {"runs": "runs", "compare": "comparison"}.get(self.kind, self.kind)
        return f"{self.kind.replace('-', ' ')} {self.key}"


@dataclass(frozen=True)
class Link:
    ref: Ref
    url: str

    @property
    def label(self) -> str:
        return self.ref.label


class WebLinks:
    """URLs under one base (``[web] url``)."""

    def __init__(self, base: str):
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"[web] url must be an http(s) URL, not {base!r}")
        self.base = base.rstrip("/") + "/"

    def url(self, ref: Ref) -> str:
        path = ROUTES[ref.kind]
        if ref.kind in LISTS:
            return self.base + path + (f"?{ref.key}" if ref.key else "")
        # One path segment: '/', '?', '#', '%' and the rest are escaped, so a name can never
        # reach another page.
        key = quote(ref.key, safe=":@")
        if key in (".", ".."):  # a dot segment would be resolved away by the browser
            key = key.replace(".", "%2E")
        return self.base + path.format(key=key)

    def links(self, refs: Iterable[Ref]) -> list[Link]:
        return [Link(r, self.url(r)) for r in dict.fromkeys(refs)]

    def for_reply(self, reply) -> list[Link]:
        return self.links(named(reply))


def from_config(config) -> WebLinks | None:
    """The links of this tfdesk, or None when ``[web] url`` is not set (a malformed one is
    refused where the web view starts, bot/web/settings.py; answers then carry no links)."""
    url = str(config.section("web").get("url") or "").strip()
    try:
        return WebLinks(url) if url else None
    except ValueError:
        return None


def attach(config, reply) -> None:
    """Give ``reply`` the links to what it names (none without ``[web] url``, none for a
    refusal: it names nothing the asker may see)."""
    web = from_config(config)
    reply.links = web.for_reply(reply) if web is not None and not reply.refused else []


def query(**params: Any) -> str:
    """A list page's query string (repeated keys from lists; empty values left out)."""
    pairs = [(k, v) for k, vs in params.items()
             for v in (vs if isinstance(vs, (list, tuple)) else [vs]) if v not in (None, "")]
    return urlencode(pairs)


def named(reply) -> list[Ref]:
    """Every object ``reply`` names, in order, once: what it declares (``reply.refs``), the
    job it is about, and what its data holds (FIELDS, PLURALS)."""
    refs: list[Ref] = list(getattr(reply, "refs", None) or [])
    if getattr(reply, "job", None) is not None:
        refs.append(Ref("run", reply.job.id))
    data = reply.data if isinstance(getattr(reply, "data", None), dict) else {}
    refs += from_data(data)
    refs = list(dict.fromkeys(refs))
    singles = [r for r in refs if r.kind not in LISTS]
    if len(singles) > MAX_LINKS:  # a long answer links its lists, not each object
        lists = [r for r in refs if r.kind in LISTS]
        have = {r.kind for r in lists}
        kinds = dict.fromkeys(PLURAL_OF[r.kind] for r in singles)
        refs = lists + [Ref(k) for k in kinds if k not in have]
    return refs


PLURAL_OF = {"run": "runs", "model": "models", "dataset": "datasets", "project": "projects",
             "pipeline": "pipelines", "pipeline-run": "pipelines"}


def from_data(data: dict) -> list[Ref]:
    refs: list[Ref] = []
    for key in FIELDS:
        refs += _object(data.get(key), key)
    if _key(data.get("id")) and data.get("state") and ("backend" in data or "log" in data):
        refs.append(Ref("run", data["id"]))  # a job's own record, or its log
    for key, item_key in PLURALS.items():
        items = data.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                pipeline_run = key == "runs" and _key(item.get("pipeline"))
                refs += _object(item, "run" if pipeline_run else item_key)
    return refs


def _object(obj: Any, key: str) -> list[Ref]:
    """The refs one object of data key ``key`` holds (FIELDS)."""
    kind, field, others = FIELDS[key]
    if not isinstance(obj, dict) or not _key(obj.get(field)):
        return []
    if key == "run" and "pipeline" not in obj:
        return []  # a pipeline run has its pipeline; anything else under "run" is not one
    refs = [Ref(kind, _key(obj[field]))]
    for f, k in others.items():
        refs += _refs(obj.get(f), k)
    if key == "run":
        refs += [Ref("run", _key(s["job_id"])) for s in obj.get("steps") or []
                 if isinstance(s, dict) and _key(s.get("job_id"))
                 and not s["job_id"].startswith("inline-")]
    return refs


def _refs(value: Any, kind: str) -> list[Ref]:
    """The refs one field holds: a key, a list of keys, or a list of {"id": key}."""
    values = value if isinstance(value, list) else [value]
    out = []
    for v in values:
        v = _key(v.get("id")) if isinstance(v, dict) else _key(v)
        if not v:
            continue
        if kind == "*":
            word, _, name = v.partition(" ")
            if word in WORDS and _key(name):
                out.append(Ref(WORDS[word], _key(name)))
        else:
            out.append(Ref(kind, v))
    return out


def _key(value: Any) -> str:
    return value.strip() if isinstance(value, str) and value.strip() else ""


def as_text(links: list[Link]) -> str:
    """The links as terminal lines ("" when there are none)."""
    if not links:
        return ""
    if len(links) == 1:
        return f"in the browser: {links[0].url}"
    width = max(len(lk.label) for lk in links)
    return "in the browser:\n" + "\n".join(f"  {lk.label:<{width}}  {lk.url}" for lk in links)
