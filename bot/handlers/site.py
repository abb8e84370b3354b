"""site build / site serve: the KB as a browsable, searchable MkDocs site."""
from __future__ import annotations

import functools
import json
import shlex
import tempfile
import time
from pathlib import Path

from bot.registry import COMMANDS, GROUP_HELP, arg, command, group
from bot.reply import Reply

group("site", "the docs site: API reference, release changes, guides")

# Commands whose examples only read (the KB, the command table): the reference page shows
# their real output. Everything else is shown with its usage and examples only.
READ_ONLY = ("help", "ask", "history", "diff", "kb status")
EXAMPLE_OUTPUT_LINES = 30


def _project_dir(ctx) -> Path:
    configured = ctx.config.section("site").get("project_dir")
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parents[2]


def _out_dir(ctx, out: str | None) -> Path:
    if out:
        return Path(out).expanduser().resolve()
    configured = ctx.config.section("site").get("dir")
    return Path(configured).expanduser() if configured else ctx.config.home / "site"


def _fence(text: str, info: str = "text") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def _example_output(ctx, example: str) -> str | None:
    from bot.dispatch import run_line
    from bot.parser import split
    argv = split(example)
    if argv and argv[0] in ("tfdesk", "/tf"):
        argv = argv[1:]
    try:
        _, reply = run_line(ctx, argv)
    except Exception:  # noqa: BLE001 - the page shows usage instead
        return None
    lines = reply.text.splitlines()
    if len(lines) > EXAMPLE_OUTPUT_LINES:
        lines = lines[:EXAMPLE_OUTPUT_LINES] + [f"… ({len(lines) - EXAMPLE_OUTPUT_LINES} more lines)"]
    return "\n".join(lines)


def commands_reference(ctx, run_examples: bool = True) -> str:
    """Markdown for every registered command: usage, examples and (read-only ones) output."""
    from bot.parser import command_help
    out = []
    groups = sorted({n.split(" ")[0] for n in COMMANDS})
    for g in groups:
        names = sorted(n for n in COMMANDS if n == g or n.startswith(g + " "))
        out.append(f"## {g}\n")
        if g in GROUP_HELP:
            out.append(GROUP_HELP[g] + "\n")
        for name in names:
            spec = COMMANDS[name]
            if name != g:
                out.append(f"### {name}\n")
            out.append(f"{spec.help}\n")
            out.append(f"Permission: `{spec.permission}` "
                       "([who may run it](admin/security.md#who-may-do-what))\n")
            out.append(_fence(command_help(name)) + "\n")
            for ex in spec.examples:
                out.append(f"Example: `{ex}`" if "`" not in ex else f"Example: <code>{ex}</code>")
                out.append("")
                if run_examples and name in READ_ONLY:
                    text = _example_output(ctx, ex)
                    if text:
                        out.append(_fence(text) + "\n")
    return "\n".join(out)


@command("site build", "generate the docs site from the KB and build it (mkdocs --strict)",
         args=[arg("--out", help="folder for the built site (default: $TFDESK_HOME/site)"),
               arg("--no-examples", action="store_true",
                   help="skip running the read-only command examples for the reference")],
         examples=["tfdesk site build", "tfdesk site build --out ./site"], slow=True,
         permission="terminal")
def site_build(ctx, out=None, no_examples=False):
    t0 = time.perf_counter()
    from knowledge_base.site import generate
    from knowledge_base.site.build import check_site_dir, run_mkdocs, stage
    kb = ctx.services.kb
    site_dir = _out_dir(ctx, out)
    check_site_dir(site_dir)  # before any work: never empty a folder that is not a site
    ctx.config.home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ctx.config.home, prefix="site-build-") as tmp:
        ctx.report("site: writing the command reference")
        reference = commands_reference(ctx, run_examples=not no_examples)
        docs, cfg = stage(_project_dir(ctx), Path(tmp), ctx.config.site_url, site_dir,
                          inserts={"commands.md": reference},
                          web_url=str(ctx.config.section("web").get("url") or ""))
        gen = generate(kb, docs, progress=lambda m: ctx.report(f"site: {m}"))
        ctx.report("site: mkdocs build --strict")
        built = run_mkdocs(cfg, site_dir)
    stats = site_stats(site_dir)
    stats.update(generate_seconds=round(gen.seconds, 1), mkdocs_seconds=round(built.seconds, 1),
                 seconds=round(time.perf_counter() - t0, 1), site_dir=str(site_dir),
                 symbols=gen.symbols, modules=gen.modules, newest=kb.newest)
    text = (f"Built the site in {stats['seconds']} s: {stats['pages']} pages, "
            f"{_mb(stats['bytes'])} in {site_dir}\n"
            f"  API: {gen.modules} modules, {gen.symbols} symbols (TF {kb.versions[0]}–{kb.newest})\n"
            f"  largest page: {stats['largest_page']} ({_mb(stats['largest_bytes'])}); "
            f"search index {_mb(stats['search_index_bytes'])}\n"
            f"Serve it with: {serve_hint(ctx, site_dir)}")
    return Reply(text=text, data=stats)


def serve_hint(ctx, site_dir: Path) -> str:
    """The serve command for this build: a site built elsewhere (--out) is served with --dir,
    or 'site serve' would look in the default folder and find nothing."""
    if Path(site_dir).resolve() == Path(_out_dir(ctx, None)).resolve():
        return "tfdesk site serve"
    return f"tfdesk site serve --dir {shlex.quote(str(site_dir))}"


def site_stats(site_dir: Path) -> dict:
    pages = list(Path(site_dir).rglob("*.html"))
    largest = max(pages, key=lambda p: p.stat().st_size, default=None)
    from knowledge_base.site.search import INDEX_FILE
    index = Path(site_dir) / INDEX_FILE
    total = sum(p.stat().st_size for p in Path(site_dir).rglob("*") if p.is_file())
    entries = len(json.loads(index.read_text())["entries"]) if index.is_file() else 0
    return {"pages": len(pages), "bytes": total,
            "largest_page": str(largest.relative_to(site_dir)) if largest else None,
            "largest_bytes": largest.stat().st_size if largest else 0,
            "search_index_bytes": index.stat().st_size if index.is_file() else 0,
            "search_entries": entries}


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


def make_server(site_dir: Path, host: str, port: int):
    """A ThreadingHTTPServer for ``site_dir`` (http.server is imported here: every CLI
    start imports this module with the command table, 44 ms of CPU it rarely needs)."""
    import http.server

    class _QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the terminal stays readable
            pass
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        from knowledge_base.site.build import SiteBuildError
        raise SiteBuildError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                             "try another --port") from None


@command("site serve", "serve the built docs site on this machine (Ctrl-C stops it)",
         args=[arg("--port", type=int, default=8000, help="port (default 8000)"),
               arg("--host", default="127.0.0.1", help="address to listen on"),
               arg("--dir", dest="site_dir", help="built site folder (default: $TFDESK_HOME/site)")],
         examples=["tfdesk site serve", "tfdesk site serve --port 8080"], permission="terminal")
def site_serve(ctx, port=8000, host="127.0.0.1", site_dir=None):
    if not 0 < port < 65536:
        return Reply.error(f"--port must be between 1 and 65535, not {port}", status=2)
    root = _out_dir(ctx, site_dir)
    if not (root / "index.html").is_file():
        return Reply.error(f"no built site in {root}; run 'tfdesk site build' first")
    server = make_server(root, host, port)
    url = f"http://{host}:{server.server_address[1]}/"
    ctx.report(f"site: serving {root} at {url} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return Reply(text=f"Stopped serving {root} at {url}", data={"url": url, "site_dir": str(root)})
