"""`tfdesk site build` end to end with real MkDocs: every link the commands print resolves,
broken input does not break pages, nothing is loaded from other hosts."""
from __future__ import annotations

import re
import urllib.parse
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.registry import COMMANDS
from knowledge_base import links
from knowledge_base.store import KB
from tests.site_kb import ODD_NAME, make_kb

REPO = Path(__file__).resolve().parents[2]
SITE_URL = "https://docs.example.test/tfdesk/"


def nav_pages(nav) -> list[str]:
    out = []
    for item in nav:
        value = list(item.values())[0] if isinstance(item, dict) else item
        out += nav_pages(value) if isinstance(value, list) else [value]
    return out


GENERATED = ("api/", "releases/", "migration/")


def test_every_hand_written_nav_page_exists():
    cfg = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    missing = [p for p in nav_pages(cfg["nav"]) if not p.startswith(GENERATED)
               and not (REPO / "site_docs" / p).is_file()]
    assert not missing, f"nav pages missing from site_docs/: {missing}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A site built by `tfdesk site build` from the small KB, as a user would."""
    home = tmp_path_factory.mktemp("home")
    make_kb(home / "kb.sqlite")
    project = tmp_path_factory.mktemp("project")
    (project / "mkdocs.yml").write_text((REPO / "mkdocs.yml").read_text())
    import shutil
    shutil.copytree(REPO / "site_docs", project / "site_docs")
    # Guides other parts of tfdesk own may not be written yet; the test above reports them.
    cfg = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    for p in nav_pages(cfg["nav"]):
        f = project / "site_docs" / p
        if not p.startswith(GENERATED) and not f.exists():
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"# {p}\n")
    (home / "tfdesk.toml").write_text(f'[site]\nurl = "{SITE_URL}"\nproject_dir = "{project}"\n')
    config = load_config({"TFDESK_HOME": str(home)})
    ctx = Context(config=config)
    cmd, reply = run_line(ctx, ["site", "build"])
    assert reply.ok, reply.text
    return ctx, Path(reply.data["site_dir"]), reply


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.refs, self.headings = set(), [], []
        self._h = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        # What the browser fetches (a canonical <link> names the page; nothing is loaded).
        for key in ("src", "href"):
            if a.get(key) and tag in ("script", "link", "img", "iframe", "source") and \
                    a.get("rel") not in ("canonical", "alternate"):
                self.refs.append((tag, a[key]))
        if tag in ("h2", "h3") and a.get("id"):
            self._h = a["id"]
            self.headings.append(a["id"])


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def resolve(site: Path, url: str) -> tuple[Path, str]:
    assert url.startswith(SITE_URL), url
    path, _, frag = url[len(SITE_URL):].partition("#")
    path = urllib.parse.unquote(path)
    f = site / path / "index.html" if path.endswith("/") or not path else site / path
    return f, urllib.parse.unquote(frag)


def assert_resolves(site: Path, url: str) -> None:
    f, frag = resolve(site, url)
    assert f.is_file(), f"{url}: no page {f}"
    if frag:
        assert frag in parse(f).ids, f"{url}: page has no element with id {frag!r}"


def test_build_reports_what_it_built(built):
    _, site, reply = built
    d = reply.data
    assert d["pages"] >= 15 and d["symbols"] == 26 and d["newest"] == "2.6"
    assert d["search_index_bytes"] > 0 and d["largest_bytes"] < 1_000_000
    assert (site / "index.html").is_file() and (site / "search" / "tfd-index.json").is_file()


def test_every_symbol_link_resolves(built):
    ctx, site, _ = built
    kb = KB(ctx.config.kb_path)
    for (name,) in kb.db.execute("SELECT name FROM symbols"):
        assert_resolves(site, links.url(SITE_URL, kb.site_path(kb.symbol(name))))
    for v in kb.versions:
        assert_resolves(site, links.url(SITE_URL, links.release_page(v)))
    assert_resolves(site, links.url(SITE_URL, links.MIGRATION_PAGE))
    assert_resolves(site, links.url(SITE_URL, links.RELEASES_PAGE))


@pytest.mark.parametrize("line", [
    "ask tf.nn.softmax", "ask tf.keras.Model.fit", "ask tf.estimator.Estimator",
    "ask tf.Session", "ask softmax", "history tf.nn.softmax", "history tf.nn.old_fn",
    "history tf.experimental.thing", "diff 2.4 2.6", "diff 2.5 2.6 --module tf.nn",
])
def test_links_printed_by_commands_resolve(built, line):
    ctx, site, _ = built
    if line.split()[0] not in COMMANDS:
        pytest.fail(f"command {line.split()[0]!r} is not registered")
    _, reply = run_line(ctx, line + " --json")
    found = set(re.findall(re.escape(SITE_URL) + r"[^\s\"'<>)\]]*", reply.text + "\n" + reply.to_json()))
    assert found, f"{line}: printed no link into the site"
    for url in found:
        assert_resolves(site, url.rstrip(".,;"))


def test_every_page_is_titled_by_its_symbol(built):
    """One h1 per page and it is the page's own title: nothing in a docstring becomes it."""
    ctx, site, _ = built
    kb = KB(ctx.config.kb_path)
    for (name,) in kb.db.execute("SELECT name FROM symbols"):
        path = kb.site_path(kb.symbol(name))
        if "#" in path:
            continue
        html = (site / path / "index.html").read_text()
        h1 = re.findall(r"<h1[^>]*>(.*?)</h1>", html, re.S)
        assert len(h1) == 1 and html_unescape(re.sub(r"<[^>]+>", "", h1[0]).strip()) == \
            name, (name, h1)
    relu = (site / "api" / "tf.nn.relu" / "index.html").read_text()
    assert '<a href="https://example.test/relu">the paper</a>' in relu
    assert '<a href="https://example.test/notes">notes</a>' in relu
    assert "pylint" not in relu and not re.search(r'<img[^>]+src="(https?:)?//', relu)
    assert '<a class="tfd-image" href="https://images.example.test/relu.png">' in relu


def test_nasty_input_does_not_break_the_page(built):
    _, site, _ = built
    page = site / "api" / links.anchor(ODD_NAME) / "index.html"
    html = page.read_text()
    assert "pwned" not in re.sub(r"<pre.*?</pre>", "", html, flags=re.S)
    assert '<div class="oops">' not in html
    assert "<script>document" not in html and "&lt;/</span><span class=\"n\">script" in html
    # The module page's rows after the odd one are intact.
    nn = parse(site / "api" / "tf.nn" / "index.html")
    assert {links.anchor(ODD_NAME), "tf.nn.old_fn", "tf.nn.softmax"} <= nn.ids


def test_site_loads_nothing_from_other_hosts(built):
    _, site, _ = built
    for f in site.rglob("*.html"):
        for tag, ref in parse(f).refs:
            assert not re.match(r"(https?:)?//", ref), f"{f}: {tag} loads {ref}"
    for css in site.rglob("*.css"):
        assert not re.search(r"@import\s+url\(\s*['\"]?(https?:)?//", css.read_text()), css


def test_command_reference_lists_every_command(built):
    _, site, _ = built
    text = (site / "commands" / "index.html").read_text()
    for name in COMMANDS:
        assert f"tfdesk {name}" in text or name in text, name
    assert "tf.nn.softmax" in text  # a read-only example ran and its output is shown


def test_old_module_anchors_name_the_new_pages_after_mkdocs(built):
    """Old addresses (every symbol on its module page) land on a row naming the symbol's page."""
    _, site, _ = built
    html = (site / "api" / "tf.nn" / "index.html").read_text()
    for name in ("tf.nn.softmax", "tf.nn.old_fn", ODD_NAME):
        a = links.anchor(name)
        moved = re.search(rf'id="{re.escape(a)}" data-tfd-moved="([^"]+)"', html).group(1)
        target = (site / "api" / "tf.nn" / moved / "index.html").resolve()
        assert target.is_file(), name


def test_build_refuses_a_folder_that_is_not_a_site(built, tmp_path):
    ctx, _, _ = built
    keep = tmp_path / "precious.txt"
    keep.write_text("do not delete")
    _, reply = run_line(ctx, ["site", "build", "--out", str(tmp_path)])
    assert not reply.ok and "not empty" in reply.text
    assert keep.read_text() == "do not delete"


def test_build_without_a_kb_says_how_to_get_one(tmp_path):
    ctx = Context(config=load_config({"TFDESK_HOME": str(tmp_path)}))
    _, reply = run_line(ctx, ["site", "build"])
    assert not reply.ok and "tfdesk kb load" in reply.text


def test_serve_without_a_built_site_is_a_clear_error(tmp_path):
    ctx = Context(config=load_config({"TFDESK_HOME": str(tmp_path)}))
    _, reply = run_line(ctx, ["site", "serve", "--port", "0"])
    assert not reply.ok


def test_serve_refuses_in_slack(built):
    ctx, _, _ = built
    slack = Context(config=ctx.config, reply_to={"kind": "slack", "channel": "C1"})
    _, reply = run_line(slack, ["site", "serve"])
    assert not reply.ok and "terminal" in reply.text


def test_the_serve_hint_names_a_site_built_elsewhere(tmp_path):
    from bot.handlers.site import serve_hint
    ctx = Context(config=load_config({"TFDESK_HOME": str(tmp_path / "home")}))
    assert serve_hint(ctx, tmp_path / "home" / "site") == "tfdesk site serve"
    assert serve_hint(ctx, tmp_path / "my site") == f"tfdesk site serve --dir '{tmp_path}/my site'"
