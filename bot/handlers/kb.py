"""ask, history, diff and the kb maintenance commands."""
from __future__ import annotations

from bot.context import Context
from bot.registry import arg, command, count, group
from bot.reply import Reply

MAX_LISTED = 40


def answers(ctx: Context):
    return ctx.services.answers


def _symbol_lines(d: dict) -> list[str]:
    sig = d["signature"] if d.get("signature") is not None else ""
    head = f"{d['name']}{sig}"
    lines = [f"{head}   [{d['kind']} · {d['available']}]"]
    if d.get("summary"):
        lines.append(f"    {d['summary']}")
    if d.get("note"):
        lines.append(f"    note: {d['note']}")
    if d.get("unusable"):
        lines.append(f"    present but unusable: raises {d['unusable'][:300]}")
    if d.get("inherited_from"):
        lines.append(f"    inherited from {d['inherited_from']}")
    if d.get("provided_by"):
        lines.append(f"    provided by {d['provided_by']}, not by TensorFlow itself"
                     + (f"; {d['keras']} in {d.get('in_release') or d['last']}"
                        if d.get("keras") else ""))
    if d.get("deprecated_in"):
        text = (d.get("deprecation") or "").strip().replace("\n", " ")
        lines.append(f"    deprecated in {d['deprecated_in']}" + (f": {text[:300]}" if text else ""))
    if d.get("removed_in"):
        lines.append(f"    removed in {d['removed_in']}" +
                     (f"; use {d['replacement']}" if d.get("replacement") else ""))
    elif d.get("replacement") and d.get("deprecated_in"):
        lines.append(f"    use instead: {d['replacement']}")
    if d.get("tf2_way"):
        lines.append(f"    native TF 2 way: {d['tf2_way']} (TensorFlow's migration note)")
    if d.get("canonical") and d["canonical"] != d["name"]:
        lines.append(f"    also public as {d['canonical']}")
    lines.append(f"    {d['url']}")
    return lines


@command("ask", "find TensorFlow API by name, misspelling, TF1 name or question",
         args=[arg("query", nargs="+", help="a symbol name or a question"),
               arg("--version", "-v", help="show signatures in this release (default: newest)"),
               arg("--limit", "-k", type=count(50), default=5,
                   help="how many results, 1 to 50 (default 5)")],
         examples=["tfdesk ask tf.nn.softmax", "tfdesk ask pad a tensor with zeros",
                   "tfdesk ask tf.Session --version 2.15", "tfdesk ask tf.nn.softmx"], permission="read")
def ask(ctx: Context, query: list[str], version: str | None, limit: int) -> Reply:
    data = answers(ctx).ask(" ".join(query), version=version, limit=limit).to_dict()
    if not data["query"]:  # nothing to look up is bad input, not an answer
        return Reply.error(data["message"], data)
    legacy = ""
    if data.get("legacy"):
        lg = data["legacy"]
        legacy = (f"{lg['name']} is TF1 API" + (f"; TF2 name: {lg['new']}" if lg["new"] else "")
                  + (f". {lg['note']}" if lg["note"] else ""))
    warning = data.get("warning", "")
    if not data["results"]:
        text = "\n".join(filter(None, [data.get("fix") and f"Fix: {data['fix']}", warning,
                                        legacy, data.get("message", "")]))
        if data.get("suggestions") and data.get("match") != "none":
            text += "\nnearest names: " + ", ".join(data["suggestions"])
        if data.get("match") == "none":  # a dotted name no release holds: "not found" is the answer
            return Reply.error(text, data)
        return Reply(text=text, data=data, ok=True)
    lines = [f"Results for {data['query']!r} (signatures in {data['version']}):"]
    if data.get("fix"):  # a pasted error: what to do comes first
        lines = [f"Fix: {data['fix']}", "", f"Symbols for {data['query']!r} (signatures in "
                 f"{data['version']}):"]
    lines += [f"note: {n}" for n in (data.get("unsure"), warning) if n]
    lines += [legacy] if legacy else []
    lines.append("")
    for i, d in enumerate(data["results"], 1):
        sub = _symbol_lines(d)
        lines.append(f"{i}. {sub[0]}")
        lines += sub[1:]
    return Reply(text="\n".join(lines), data=data)


@command("history", "every change to a symbol, release by release",
         args=[arg("symbol", help="e.g. tf.keras.Model.fit")],
         examples=["tfdesk history tf.estimator.Estimator",
                   "tfdesk history tf.keras.layers.experimental.preprocessing.RandomFlip"], permission="read")
def history(ctx: Context, symbol: str) -> Reply:
    from knowledge_base.qa.answers import UnknownSymbol
    try:
        data = answers(ctx).history(symbol)
    except UnknownSymbol as missing:
        return Reply.error(str(missing), missing.to_dict())
    s = data["symbol"]
    lines = []
    if data.get("resolved_from"):
        lines.append(f"({data['resolved_from']} → {s['name']}"
                     + (f": {data['note']}" if data.get("note") else "") + ")")
    lines += _symbol_lines(s)
    if data["aliases"]:
        lines.append("    aliases: " + ", ".join(data["aliases"][:10]))
    lines.append("")
    for e in data["events"]:
        lines.append(f"  {e['release']:>6}  {e['kind']:<18} {e['detail'] or ''}".rstrip())
    return Reply(text="\n".join(lines), data=data)


@command("diff", "what changed between two releases",
         args=[arg("v1", help="older release, e.g. 2.15"), arg("v2", help="newer release"),
               arg("--module", "-m", help="only this module and below, e.g. tf.keras")],
         examples=["tfdesk diff 2.15 2.16 --module tf.keras", "tfdesk diff 2.10 2.11 -m tf.data"], permission="read")
def diff(ctx: Context, v1: str, v2: str, module: str | None) -> Reply:
    data = answers(ctx).diff(v1, v2, module)
    c = data["counts"]
    scope = f" in {data['module']}" if data["module"] else ""
    lines = [f"{data['from']} → {data['to']}{scope}: {c['added']} added, {c['removed']} removed, "
             f"{c['moved']} moved, {c['changed']} signatures changed, "
             f"{c['deprecated']} newly deprecated", data["url"]]
    if data.get("swapped"):
        lines.insert(0, f"(newer release given first: showing what changed from {data['from']} "
                        f"to {data['to']})")
    if data.get("keras"):
        lines.append(f"Keras: {data['keras']['text']}")

    def section(title, items, fmt):
        if not items:
            return
        lines.append(f"\n{title} ({len(items)}):")
        lines.extend("  " + fmt(x) for x in items[:MAX_LISTED])
        if len(items) > MAX_LISTED:
            lines.append(f"  … and {len(items) - MAX_LISTED} more (--json for all)")

    section("Added", data["added"], str)
    section("Present but unusable (raise on use)", data.get("unusable", []), str)
    section("Removed", data["removed"], str)
    section("Removed here, back in a later release", data.get("removed_back_later", []), str)
    section("Moved", data["moved"], lambda m: f"{m['from']} → {m['to']}")
    section("Signature changed", data["changed"],
            lambda m: f"{m['name']}: {m['from']} → {m['to']}")
    section("Deprecated", data["deprecated"],
            lambda m: f"{m['name']}: {(m['deprecation'] or '')[:120]}")
    return Reply(text="\n".join(lines), data=data)


group("kb", "build, load and inspect the knowledge base")


@command("kb load", "build the KB from the compact extract shipped with tfdesk (no downloads)",
         args=[arg("--force", action="store_true", help="rebuild even if up to date"),
               arg("--extract", help="a compact extract file other than the shipped one")],
         permission="terminal")
def kb_load(ctx: Context, force: bool, extract: str | None) -> Reply:
    from pathlib import Path

    from knowledge_base.pipeline import SHIPPED_EXTRACT, load_shipped
    from knowledge_base.qa.semantic import Vectors
    source = Path(extract) if extract else SHIPPED_EXTRACT
    stats = load_shipped(ctx.config.kb_path, source, force=force, progress=ctx.report,
                         indexes=[Vectors.beside(source)])
    ctx.services.reopen_kb()
    ctx.services.warm()  # prepared beside the KB now, not on the next shell's first question
    if stats.get("skipped"):
        return Reply(text=f"KB is up to date: {stats['path']}", data=stats)
    return Reply(text=f"KB built at {stats['path']}: {stats['releases']} releases, "
                      f"{stats['symbols']} symbols, {stats['events']} history events "
                      f"in {stats['seconds']} s", data=stats)


@command("kb build", "build the KB from TensorFlow wheels (downloaded through pip, cached)",
         args=[arg("--versions", help="e.g. 2.10-2.21 or 2.15,2.16 (default: all 2.x the "
                                      "registry serves)"),
               arg("--wheel-dir", help="where wheels are (and are downloaded to)"),
               arg("--no-download", action="store_true", help="use only wheels already there"),
               arg("--export", help="also write the compact extract to this file")],
         examples=["tfdesk kb build --versions 2.15-2.16", "tfdesk kb build --wheel-dir /data/wheels"],
         slow=True, permission="terminal")
def kb_build(ctx: Context, versions: str | None, wheel_dir: str | None, no_download: bool,
             export: str | None) -> Reply:
    from pathlib import Path

    from knowledge_base import wheels as wheelmod
    from knowledge_base.pipeline import build_from_wheels, parse_versions
    from knowledge_base.qa.semantic import Vectors
    wdir = Path(wheel_dir).expanduser() if wheel_dir else ctx.config.wheel_dir
    if no_download:
        available = wheelmod.local_versions(wdir)
    else:
        available = wheelmod.available_versions()
    chosen = parse_versions(versions, available)
    stats = build_from_wheels(chosen, wdir, ctx.config.home / "extracts", ctx.config.kb_path,
                              download=not no_download,
                              export=Path(export) if export else None, progress=ctx.report,
                              indexes=[Vectors()])
    ctx.services.reopen_kb()
    ctx.services.warm()  # prepared beside the KB now, not on the next shell's first question
    fresh = sum(1 for r in stats["per_release"] if r["extracted"] == "now")
    text = (f"KB built at {ctx.config.kb_path}: {stats['releases']} releases ({fresh} extracted "
            f"now, the rest from earlier extracts), {stats['symbols']} symbols, "
            f"{stats['events']} history events in {stats['seconds']} s")
    if stats.get("exported"):
        text += f"\ncompact extract written to {stats['exported']}"
    return Reply(text=text, data=stats)


BOOK_WORDS = {"asked": "questions asked before", "guide": "guide sentences"}


@command("kb status", "which releases the KB holds and where they came from", permission="read")
def kb_status(ctx: Context) -> Reply:
    a = answers(ctx)
    rows = a.kb.release_rows
    meta = a.kb.meta()
    lines = [f"KB {ctx.config.kb_path} (built {meta.get('built_at')}, from {meta.get('source')})",
             f"{'release':<8} {'wheel':<10} {'tf.keras from':<26} {'estimator':<10} symbols"]
    for r in rows:
        keras = f"{r['keras_source'] or '?'} {r['keras_version'] or ''}".strip()
        lines.append(f"{r['version']:<8} {r['tf_version']:<10} {keras:<26} "
                     f"{r['estimator_version'] or '-':<10} {r['symbols']}")
    index = a.questions.semantic
    if index is None:
        search = {"meaning": False, "why": a.questions.semantic_error}
        lines.append(f"question search by meaning is off: {a.questions.semantic_error}")
    else:
        from knowledge_base.qa import questions, semantic
        fit = questions.ranking()
        search = {"meaning": True, "model": semantic.MODEL, "symbols": len(index.ids),
                  "views": list(index.matrices), "ranker_fitted": fit.get("fitted"),
                  "ranker_questions": fit.get("questions")}
        books = {name: len(b) for name, b in a.questions.phrasebooks.items()}
        search["phrasebooks"] = books
        lines.append(f"question search: {semantic.MODEL} over {len(index.ids)} symbols "
                     f"({' and '.join(index.matrices)} views); ranker fitted "
                     f"{fit.get('fitted')} on {fit.get('questions')} questions")
        lines.append("phrasebooks: " + (", ".join(
            f"{BOOK_WORDS.get(n, n)} {k}" for n, k in books.items()) or
            "none (their files are missing or from another model: answers use the symbols' "
            "own text only)"))
    return Reply(text="\n".join(lines), data={"meta": meta, "releases": rows, "search": search})
