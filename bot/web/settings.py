"""``[web]`` settings, read once and checked: a bad value stops ``web``/``serve`` with the key's
name, never a traceback or a silently open server."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from bot.config import Config

DEFAULT_BIND = "127.0.0.1"
DEFAULT_PORT = 8765
SLACK_OIDC = "https://slack.com/"


class WebConfigError(Exception):
    user_facing = True


@dataclass(frozen=True)
class WebSettings:
    bind: str = DEFAULT_BIND
    port: int = DEFAULT_PORT
    url: str = ""                     # the public base URL (links, the sign-in redirect)
    client_id: str = ""
    client_secret: str = ""
    oidc_url: str = SLACK_OIDC        # where Slack's OpenID Connect pages and keys are
    api_url: str = "https://slack.com/api/"  # openid.connect.token is a Web API method
    team_id: str = ""                 # only members of this workspace may sign in
    session_hours: float = 12.0
    login_link_minutes: float = 10.0
    serve: bool = True                # `tfdesk serve` also serves the web view

    @property
    def base_url(self) -> str:
        return (self.url or f"http://{self.bind}:{self.port}/").rstrip("/") + "/"

    @property
    def slack_sign_in(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @property
    def issuer(self) -> str:
        return self.oidc_url.rstrip("/")


def _number(key: str, value, kind=float, low: float = 0.0):
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise WebConfigError(f"[web] {key} must be a number, not {value!r}") from None
    if out <= low:
        raise WebConfigError(f"[web] {key} must be more than {low:g}, not {value!r}")
    if isinstance(value, bool) or (kind is int and float(value) != out):
        raise WebConfigError(f"[web] {key} must be a whole number, not {value!r}")
    return out


def _url(key: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WebConfigError(f"[web] {key} must be an http(s) URL, not {value!r}")
    return value if value.endswith("/") else value + "/"


def load(config: Config, env: dict[str, str] | None = None) -> WebSettings:
    """The ``[web]`` section as settings; the client id and secret may come from
    ``SLACK_CLIENT_ID`` / ``SLACK_CLIENT_SECRET`` (``env``, read at the edge)."""
    env = env or {}
    bind = str(config.section("web").get("bind", DEFAULT_BIND))
    try:
        ipaddress.ip_address(bind)
    except ValueError:
        if bind != "localhost":
            raise WebConfigError(f"[web] bind must be an IP address (127.0.0.1, ::1, 0.0.0.0) "
                                 f"or localhost, not {bind!r}") from None
    port = _number("port", config.section("web").get("port", DEFAULT_PORT), int, low=-1e9)
    if not 0 <= port <= 65535:
        raise WebConfigError(f"[web] port must be from 0 (any free port) to 65535, not {port}")
    url = config.section("web").get("url", "")
    oidc = config.section("web").get("oidc_url", SLACK_OIDC)
    serve = config.section("web").get("serve", True)
    if not isinstance(serve, bool):
        raise WebConfigError(f"[web] serve must be true or false, not {serve!r}")
    client_id = env.get("SLACK_CLIENT_ID") or config.section("web").get("client_id", "")
    secret = env.get("SLACK_CLIENT_SECRET") or config.section("web").get("client_secret", "")
    if bool(client_id) != bool(secret):
        raise WebConfigError("[web] client_id and client_secret go together (the Slack app's "
                             "OpenID Connect credentials); set both or neither")
    return WebSettings(
        bind=bind, port=port, url=_url("url", url) if url else "",
        client_id=str(client_id), client_secret=str(secret), oidc_url=_url("oidc_url", oidc),
        api_url=_url("slack.api_url", config.slack_api_url or "https://slack.com/api/"),
        team_id=str(config.section("web").get("team_id", "")),
        session_hours=_number("session_hours", config.section("web").get("session_hours", 12)),
        login_link_minutes=_number("login_link_minutes",
                                   config.section("web").get("login_link_minutes", 10)),
        serve=serve)
