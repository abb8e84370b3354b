"""The web view as a Starlette app: sign-in routes, then read-only pages (bot/web/pages.py).

Every page is behind one check (:func:`viewer_or_redirect`): a signed-in viewer whose roles
hold ``read`` (bot.permissions, the table Slack and the terminal use). What more a page shows
(a job's log, server paths) is decided per item with the same Actor methods
(``may_change``, ``remote``).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot.services import Services
from bot.web import auth
from bot.web.settings import WebSettings

TEMPLATES = Path(__file__).with_name("templates")
SECURITY_HEADERS = {
    # No scripts, no frames, nothing from elsewhere: the pages are HTML, CSS and PNGs.
    "content-security-policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline';"
                               " form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


class Web:
    """What every request needs: settings, services, sessions, templates, the role gate."""

    def __init__(self, settings: WebSettings, services: Services, gate=None):
        self.settings = settings
        self.services = services
        self.gate = gate
        import jinja2
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                                 autoescape=True)
        self.templates = Jinja2Templates(env=env)
        self.templates.env.filters["num"] = _num
        self.templates.env.filters["when"] = _when
        self.templates.env.filters["size"] = _size
        self.templates.env.filters["seconds"] = _seconds
        self.templates.env.filters["count"] = _count

    def sessions(self) -> auth.Sessions:
        return auth.Sessions(self.services.catalog, self.settings)

    def render(self, request: Request, name: str, viewer=None, status: int = 200, **ctx):
        resp = self.templates.TemplateResponse(request, name, {"viewer": viewer, **ctx},
                                               status_code=status)
        resp.headers.update(SECURITY_HEADERS)
        return resp

    def viewer(self, request: Request):
        return self.sessions().viewer(request.cookies.get(auth.COOKIE))

    def viewer_or_redirect(self, request: Request):
        """(viewer, None) or (None, the response to send instead)."""
        viewer = self.viewer(request)
        if viewer is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return None, RedirectResponse(f"/login?next={quote(target)}", status_code=303)
        if not viewer.actor.has("read"):
            return None, self.render(request, "error.html", viewer, 403,
                                     message="your roles do not include reading tfdesk")
        return viewer, None

    def signed_in(self, token: str, to: str = "/runs") -> Response:
        resp = RedirectResponse(to, status_code=303)
        resp.set_cookie(auth.COOKIE, token, max_age=int(self.settings.session_hours * 3600),
                        httponly=True, samesite="lax", path="/",
                        secure=self.settings.base_url.startswith("https:"))
        return resp


def make_app(settings: WebSettings, services: Services, gate=None) -> Starlette:
    from bot.web import pages
    web = Web(settings, services, gate)

    def login(request: Request):
        nxt = auth.safe_next(request.query_params.get("next"))
        if web.viewer(request) is not None:
            return RedirectResponse(nxt, status_code=303)
        return web.render(request, "login.html", None, slack=settings.slack_sign_in, next=nxt)

    def login_slack(request: Request):
        try:
            url = web.sessions().slack_redirect(request.query_params.get("next") or "/runs")
        except auth.SignInError as exc:
            return web.render(request, "error.html", None, 400, message=str(exc))
        return RedirectResponse(url, status_code=303)

    def slack_callback(request: Request):
        q = request.query_params
        if q.get("error"):
            return web.render(request, "error.html", None, 400,
                              message=f"Slack did not sign you in: {q.get('error')}")
        try:
            token, nxt = web.sessions().slack_callback(q.get("code"), q.get("state"),
                                                       web.gate)
        except auth.SignInError as exc:
            return web.render(request, "error.html", None, 400, message=str(exc))
        return web.signed_in(token, nxt)

    def login_once(request: Request):
        try:
            token = web.sessions().spend_link(request.query_params.get("token"))
        except auth.SignInError as exc:
            return web.render(request, "error.html", None, 400, message=str(exc))
        return web.signed_in(token)

    def logout(request: Request):
        web.sessions().close(request.cookies.get(auth.COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(auth.COOKIE, path="/")
        return resp

    def health(request: Request):
        return JSONResponse({"ok": True})

    routes = [Route("/healthz", health), Route("/login", login),
              Route("/login/slack", login_slack), Route("/auth/slack/callback", slack_callback),
              Route("/login/once", login_once), Route("/logout", logout, methods=["POST"]),
              *pages.routes(web)]
    return Starlette(routes=routes)


def gate_for(config):
    """The Slack role gate (bot.slack.access.Gate) for signed-in members; user groups are read
    with the bot token when there is one."""
    from bot.slack.access import Gate, Policy
    client = None
    if config.slack_bot_token:
        from slack_sdk import WebClient
        client = WebClient(token=config.slack_bot_token,
                           base_url=config.slack_api_url or "https://slack.com/api/")
    return Gate(Policy.from_section(config.section("slack")), store=None, client=client)


def client_env() -> dict[str, str]:
    """The environment variables the web view reads (read here, at the edge)."""
    return {k: os.environ[k] for k in ("SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET")
            if os.environ.get(k)}


def _num(value) -> str:
    if value is None:
        return "–"
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


def _when(ts) -> str:
    import time
    if not ts:
        return "–"
    if isinstance(ts, str):
        return ts.replace("T", " ")[:19]
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ts)))


def _count(value) -> str:
    """A rate or a count as people read it: 26,899 rather than 2.69e+04."""
    if value is None:
        return "–"
    return f"{float(value):,.0f}" if abs(float(value)) >= 100 else _num(value)


def _seconds(s) -> str:
    """A duration as people say it: 42 s, 3 min 5 s, 2 h 10 min."""
    s = max(0, int(round(float(s))))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _size(n) -> str:
    if n is None:
        return "–"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
