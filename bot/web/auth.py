"""Who is looking: sessions, the operator's one-time sign-in link, and sign-in with Slack
(OpenID Connect, authorization-code flow).

Every secret handed to a browser (session, one-time link, OIDC state) is a random token of
which only the SHA-256 is stored, with an expiry; a one-time link is spent by the same UPDATE
that checks it, so it opens one session however many times it is replayed. Slack's ID token
is checked against Slack's published keys (RS256), this app's client id, Slack as issuer, the
nonce of this sign-in and, when ``[web] team_id`` is set, the workspace.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import httpx
import jwt

from bot.permissions import Actor, member
from bot.web.settings import WebSettings
from core import statedb

COOKIE = "tfdesk_session"
STATE_TTL_S = 600.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS web_sessions (
    token_hash TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    roles TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS web_login_links (
    token_hash TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    roles TEXT NOT NULL,
    expires REAL NOT NULL,
    used REAL
);
CREATE TABLE IF NOT EXISTS web_oidc_states (
    state_hash TEXT PRIMARY KEY,
    nonce TEXT NOT NULL,
    next TEXT NOT NULL DEFAULT '/',
    expires REAL NOT NULL
);
"""
MIGRATIONS = statedb.Migrations("web")
MIGRATIONS(name="0001-sessions-login-links-oidc-states")(statedb.create(SCHEMA))


class SignInError(Exception):
    """Sign-in failed; the message is safe to show."""
    user_facing = True


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _actor(user: str, name: str, roles: list[str]) -> "Viewer":
    base = Actor(user) if "operator" in roles else replace(member(user), face="web")
    return Viewer(replace(base, roles=frozenset(roles), face="web"), name or user)


@dataclass(frozen=True)
class Viewer:
    """A signed-in person: their Actor (the same roles as in Slack) and a name to show."""
    actor: Actor
    name: str


class Sessions:
    def __init__(self, conn: sqlite3.Connection, settings: WebSettings):
        self.conn = conn
        self.settings = settings
        statedb.migrate(conn, MIGRATIONS)

    # -- sessions -------------------------------------------------------------------------
    def open(self, actor: Actor, name: str = "") -> str:
        token = secrets.token_urlsafe(32)
        now = time.time()
        with statedb.transaction(self.conn):
            self.conn.execute("DELETE FROM web_sessions WHERE expires < ?", (now,))
            self.conn.execute("INSERT INTO web_sessions VALUES (?,?,?,?,?,?)",
                              (_hash(token), actor.id, name, json.dumps(sorted(actor.roles)),
                               now, now + self.settings.session_hours * 3600))
        return token

    def viewer(self, token: str | None) -> Viewer | None:
        if not token or len(token) > 200:
            return None
        row = self.conn.execute("SELECT * FROM web_sessions WHERE token_hash = ? AND "
                                "expires > ?", (_hash(token), time.time())).fetchone()
        if row is None:
            return None
        return _actor(row["user"], row["name"], json.loads(row["roles"]))

    def close(self, token: str | None) -> None:
        if token:
            with statedb.transaction(self.conn):
                self.conn.execute("DELETE FROM web_sessions WHERE token_hash = ?",
                                  (_hash(token),))

    # -- the operator's one-time link -------------------------------------------------------
    def login_link(self, actor: Actor) -> str:
        """A URL that signs its first visitor in as ``actor`` (the operator, from the
        terminal), valid for ``login_link_minutes``."""
        token = secrets.token_urlsafe(32)
        with statedb.transaction(self.conn):
            self.conn.execute("INSERT INTO web_login_links VALUES (?,?,?,?,NULL)",
                              (_hash(token), actor.id, json.dumps(sorted(actor.roles)),
                               time.time() + self.settings.login_link_minutes * 60))
        return f"{self.settings.base_url}login/once?{urlencode({'token': token})}"

    def spend_link(self, token: str | None) -> str:
        """A session token for a valid, unused link; the link is spent by the same update."""
        if not token or len(token) > 200:
            raise SignInError("this sign-in link is not valid")
        now = time.time()
        with statedb.transaction(self.conn):
            row = self.conn.execute("SELECT * FROM web_login_links WHERE token_hash = ?",
                                    (_hash(token),)).fetchone()
            spent = self.conn.execute(
                "UPDATE web_login_links SET used = ? WHERE token_hash = ? AND used IS NULL AND "
                "expires > ?", (now, _hash(token), now)).rowcount
        if row is None:
            raise SignInError("this sign-in link is not valid")
        if not spent:
            raise SignInError("this sign-in link was used already or has expired; ask for a "
                              "new one with: tfdesk web --login")
        return self.open(_actor(row["user"], "", json.loads(row["roles"])).actor)

    # -- Slack (OpenID Connect) ---------------------------------------------------------------
    def slack_redirect(self, next_path: str = "/") -> str:
        """The Slack authorize URL for a new sign-in (its state and nonce are kept here)."""
        if not self.settings.slack_sign_in:
            raise SignInError("sign-in with Slack is not set up ([web] client_id and "
                              "client_secret); the operator can sign in with: tfdesk web --login")
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        with statedb.transaction(self.conn):
            self.conn.execute("DELETE FROM web_oidc_states WHERE expires < ?", (time.time(),))
            self.conn.execute("INSERT INTO web_oidc_states VALUES (?,?,?,?)",
                              (_hash(state), nonce, safe_next(next_path),
                               time.time() + STATE_TTL_S))
        query = urlencode({"response_type": "code", "scope": "openid profile",
                           "client_id": self.settings.client_id, "state": state,
                           "nonce": nonce, "redirect_uri": self.redirect_uri})
        return f"{self.settings.oidc_url}openid/connect/authorize?{query}"

    @property
    def redirect_uri(self) -> str:
        return f"{self.settings.base_url}auth/slack/callback"

    def slack_callback(self, code: str | None, state: str | None, gate) -> tuple[str, str]:
        """(session token, where to go) for Slack's answer; ``gate`` gives the member's roles
        (bot.slack.access.Gate)."""
        if not code or not state:
            raise SignInError("Slack did not send back a sign-in code; start again")
        with statedb.transaction(self.conn):
            row = self.conn.execute("SELECT * FROM web_oidc_states WHERE state_hash = ? AND "
                                    "expires > ?", (_hash(state), time.time())).fetchone()
            self.conn.execute("DELETE FROM web_oidc_states WHERE state_hash = ?", (_hash(state),))
        if row is None:
            raise SignInError("this sign-in was not started here or has expired; start again")
        claims = self._id_token(code, row["nonce"])
        user = claims.get("https://slack.com/user_id") or claims.get("sub")
        if not user:
            raise SignInError("Slack's answer names no user")
        viewer = gate.actor(str(user), None)
        return self.open(replace(viewer, face="web"), str(claims.get("name") or user)), row["next"]

    def _id_token(self, code: str, nonce: str) -> dict:
        s = self.settings
        try:
            resp = httpx.post(f"{s.api_url}openid.connect.token", timeout=10, data={
                "client_id": s.client_id, "client_secret": s.client_secret, "code": code,
                "redirect_uri": self.redirect_uri, "grant_type": "authorization_code"})
            answer = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInError(f"could not reach Slack to finish signing in: {exc}") from None
        if not answer.get("ok") or not answer.get("id_token"):
            raise SignInError(f"Slack refused the sign-in: {answer.get('error', 'no id_token')}")
        try:
            key = jwt.PyJWKClient(f"{s.oidc_url}openid/connect/keys", timeout=10) \
                .get_signing_key_from_jwt(answer["id_token"])
            claims = jwt.decode(answer["id_token"], key.key, algorithms=["RS256"],
                                audience=s.client_id, issuer=s.issuer,
                                options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError as exc:
            raise SignInError(f"Slack's identity token did not check out: {exc}") from None
        if claims.get("nonce") != nonce:
            raise SignInError("Slack's identity token is not for this sign-in (nonce)")
        if s.team_id and claims.get("https://slack.com/team_id") != s.team_id:
            raise SignInError("you are signed in to another Slack workspace than this tfdesk's")
        return claims


def safe_next(path: str | None) -> str:
    """Only a path on this site: never an open redirect."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path[:500]
