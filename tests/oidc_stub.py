"""A local stand-in for Slack's OpenID Connect ("Sign in with Slack") over real HTTP: the
authorize page (which signs in ``user`` at once, as Slack does for a member already signed in
and consenting), the ``openid.connect.token`` Web API method, and the JSON Web Key Set.

ID tokens are RS256 JWTs signed with a key made per stub, with Slack's claim names. ``spoil``
makes the next tokens wrong in one way, for tests that the web view refuses them."""
from __future__ import annotations

import json
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.http_stub import LocalHTTPStub

CLIENT_ID = "1234.5678"
CLIENT_SECRET = "stub-client-secret"
TEAM = "T0TEAM"


class OidcStub(LocalHTTPStub):
    protocol_version = "HTTP/1.0"

    def __init__(self, user: str = "U0ANA", name: str = "Ana"):
        self.user, self.name = user, name
        self.spoil: str | None = None   # bad-signature, audience, issuer, expired, nonce, team
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "stub-key-1"
        self.codes: dict[str, dict] = {}
        self.token_calls: list[dict] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def api_url(self) -> str:
        return self.base + "api/"


    def _send(self, h, status: int, body: bytes, ctype="application/json", headers=None):
        h.send_response(status)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def _get(self, h) -> None:
        url = urlsplit(h.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/openid/connect/keys":
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            body = json.dumps({"keys": [{**public, "kid": self.kid, "alg": "RS256",
                                         "use": "sig"}]}).encode()
            return self._send(h, 200, body)
        if url.path == "/openid/connect/authorize":
            if q.get("client_id") != CLIENT_ID or q.get("response_type") != "code":
                return self._send(h, 400, b'{"error": "invalid_request"}')
            code = secrets.token_urlsafe(12)
            self.codes[code] = {"nonce": q.get("nonce"), "redirect_uri": q.get("redirect_uri")}
            where = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state")})
            return self._send(h, 302, b"", headers={"location": where})
        self._send(h, 404, b"{}")

    def _post(self, h) -> None:
        body = h.rfile.read(int(h.headers.get("content-length") or 0)).decode()
        args = {k: v[0] for k, v in parse_qs(body).items()}
        self.token_calls.append(args)
        if urlsplit(h.path).path != "/api/openid.connect.token":
            return self._send(h, 404, b"{}")
        grant = self.codes.pop(args.get("code", ""), None)
        if args.get("client_id") != CLIENT_ID or args.get("client_secret") != CLIENT_SECRET:
            return self._send(h, 200, b'{"ok": false, "error": "invalid_client_id"}')
        if grant is None or grant["redirect_uri"] != args.get("redirect_uri"):
            return self._send(h, 200, b'{"ok": false, "error": "invalid_code"}')
        self._send(h, 200, json.dumps({"ok": True, "access_token": "xoxp-stub",
                                       "token_type": "Bearer",
                                       "id_token": self.id_token(grant["nonce"])}).encode())

    def id_token(self, nonce: str | None) -> str:
        now = int(time.time())
        spoil = self.spoil
        claims = {"iss": self.base.rstrip("/") + ("/x" if spoil == "issuer" else ""),
                  "sub": self.user, "aud": "someone-else" if spoil == "audience" else CLIENT_ID,
                  "exp": now - 60 if spoil == "expired" else now + 300, "iat": now - 1,
                  "auth_time": now, "nonce": "not-this-one" if spoil == "nonce" else nonce,
                  "https://slack.com/user_id": self.user,
                  "https://slack.com/team_id": "T0OTHER" if spoil == "team" else TEAM,
                  "name": self.name}
        key = self.other_key if spoil == "bad-signature" else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})
