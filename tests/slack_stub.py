"""A local stand-in for Slack, over real HTTP, for tests and benchmarks.

- ``SlackStub``: the Web API methods tfdesk calls (auth.test, chat.*, files.*, the upload URL,
  file downloads, views.publish, usergroups.users.list), recording every call; failures
  (429 with Retry-After, 5xx) can be queued per method. The app's ``WebClient`` points at it
  through ``SLACK_API_URL`` (``stub.api_url``).
- ``send_*``: requests to the app's ``/slack/events`` signed exactly as Slack signs them
  (v0 HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the signing secret).
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import uuid
from typing import Any, Callable
from urllib.parse import parse_qs, urlencode, urlparse

import httpx

from tests.http_stub import LocalHTTPStub

BOT_TOKEN = "xoxb-test-123456-abcdef"
APP_TOKEN = "xapp-1-test-654321-fedcba"
SIGNING_SECRET = "test-signing-secret"
JSON_FIELDS = {"blocks", "attachments", "view", "files"}


class SlackStub(LocalHTTPStub):
    def __init__(self, token: str = BOT_TOKEN):
        self.token = token
        self.calls: list[dict[str, Any]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        self.usergroups: dict[str, list[str]] = {}
        self.failures: dict[str, list[tuple[int, dict[str, str], dict]]] = {}
        self.responses: list[dict[str, Any]] = []  # posts to response_url
        self.chunked: set[str] = set()
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.socket: "SocketModeStub | None" = None  # set by SocketModeStub(stub)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return self.base + "/api/"

    def add_file(self, name: str, content: bytes, size: int | None = None,
                 filetype: str | None = None, full: bool = True,
                 chunked: bool = False) -> dict[str, Any]:
        """A file users shared; returns the file object as events carry it (``full=False``:
        only the id, as with ``file_access: check_file_info``)."""
        fid = "F" + uuid.uuid4().hex[:10].upper()
        info = {"id": fid, "name": name, "title": name, "size": len(content) if size is None
                else size, "filetype": filetype or name.rsplit(".", 1)[-1],
                "mimetype": "application/octet-stream",
                "url_private": f"{self.base}/files-pri/{fid}/{name}",
                "url_private_download": f"{self.base}/files-pri/{fid}/download/{name}"}
        self.files[fid] = info
        self.contents[fid] = content
        if chunked:  # sent without Content-Length, so only counting can catch a liar
            self.chunked.add(fid)
        return dict(info) if full else {"id": fid, "file_access": "check_file_info"}

    def fail(self, method: str, status: int = 429, times: int = 1,
             headers: dict[str, str] | None = None, body: dict | None = None) -> None:
        if status == 429 and headers is None:
            headers = {"Retry-After": "1"}
        with self._lock:
            self.failures.setdefault(method, []).extend(
                [(status, headers or {}, body or {"ok": False, "error": "ratelimited"
                                                  if status == 429 else "fatal_error"})] * times)

    # -- reading what happened ----------------------------------------------------------------
    def calls_to(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c for c in self.calls if c["method"] == method]

    def wait_for(self, method: str, predicate: Callable[[dict], bool] = lambda c: True,
                 timeout: float = 30.0, count: int = 1) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [c for c in self.calls if c["method"] == method and c["status"] == 200
                         and predicate(c)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    methods = [(c["method"], c["status"]) for c in self.calls]
                    raise AssertionError(f"no {count} x {method} matching within {timeout}s; "
                                         f"calls so far: {methods}")
                self._cond.wait(left)

    def texts(self, method: str = "chat.postMessage") -> list[str]:
        return [message_text(c["args"]) for c in self.calls_to(method) if c["status"] == 200]

    # -- HTTP ---------------------------------------------------------------------------------
    def _send(self, h, status: int, body: bytes, headers: dict[str, str] | None = None,
              ctype: str = "application/json; charset=utf-8") -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _json(self, h, status: int, data: dict, headers: dict[str, str] | None = None) -> None:
        self._send(h, status, json.dumps(data).encode(), headers)

    def _record(self, method: str, args: dict, status: int, auth: str | None,
                result: dict | None = None) -> None:
        with self._cond:
            self.calls.append({"method": method, "args": args, "status": status, "auth": auth,
                               "at": time.monotonic(), "result": result or {}})
            self._cond.notify_all()

    def _get(self, h) -> None:
        path = urlparse(h.path).path
        parts = path.strip("/").split("/")
        if parts[0] == "files-pri" and len(parts) >= 3:
            fid = parts[1]
            auth = h.headers.get("Authorization")
            self._record("file.download", {"file": fid}, 200, auth)
            if auth != f"Bearer {self.token}":
                # What Slack does without a valid token: a sign-in page, with 200.
                self._send(h, 200, b"<!DOCTYPE html><html><body>Sign in</body></html>",
                           ctype="text/html")
                return
            if fid not in self.contents:
                self._send(h, 404, b"not found", ctype="text/plain")
                return
            if fid in self.chunked:
                h.send_response(200)
                h.send_header("Content-Type", "application/octet-stream")
                h.send_header("Transfer-Encoding", "chunked")
                h.end_headers()
                data = self.contents[fid]
                try:
                    for i in range(0, len(data), 65536):
                        piece = data[i:i + 65536]
                        h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    h.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the reader stopped early, as it should for an oversize file
                return
            try:
                self._send(h, 200, self.contents[fid], ctype="application/octet-stream")
            except OSError:
                pass
            return
        self._send(h, 404, b"not found", ctype="text/plain")

    def _post(self, h) -> None:
        url = urlparse(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        parts = url.path.strip("/").split("/")
        auth = h.headers.get("Authorization")
        if parts[0] == "upload":
            fid = parts[1]
            self.uploads[fid]["content"] = raw
            self._record("upload", {"file_id": fid, "bytes": len(raw)}, 200, auth)
            self._send(h, 200, b"OK - " + str(len(raw)).encode(), ctype="text/plain")
            return
        if parts[0] == "response_url":
            args = json.loads(raw or b"{}")
            self.responses.append(args)
            self._record("response_url", args, 200, auth)
            self._send(h, 200, b"ok", ctype="text/plain")
            return
        if parts[0] != "api" or len(parts) != 2:
            self._send(h, 404, b"not found", ctype="text/plain")
            return
        method = parts[1]
        args = parse_args(raw, h.headers.get("Content-Type", ""))
        args.update({k: v[0] for k, v in parse_qs(url.query).items()})
        with self._lock:
            queued = self.failures.get(method)
            failure = queued.pop(0) if queued else None
        if failure:
            status, headers, body = failure
            self._record(method, args, status, auth)
            self._json(h, status, body, headers)
            return
        token = (auth or "").removeprefix("Bearer ") or args.get("token")
        if method == "apps.connections.open":  # the one method that takes the app token
            ok = token == APP_TOKEN and self.socket is not None
            result = ({"ok": True, "url": self.socket.url} if ok else
                      {"ok": False, "error": "invalid_auth" if self.socket else "not_allowed"})
            self._record(method, args, 200, auth, result)
            self._json(h, 200, result)
            return
        if token != self.token:
            self._record(method, args, 200, auth)
            self._json(h, 200, {"ok": False, "error": "invalid_auth"})
            return
        result = self._method(method, args)
        self._record(method, args, 200, auth, result)
        self._json(h, 200, result)

    def _method(self, method: str, args: dict) -> dict:
        if method == "auth.test":
            return {"ok": True, "url": "https://test.slack.com/", "team": "Test",
                    "user": "tfdesk", "team_id": "T1", "user_id": "UBOT", "bot_id": "BBOT"}
        if method == "chat.postMessage":
            ts = f"{1700000000 + next(self._ts)}.000100"
            return {"ok": True, "channel": args.get("channel"), "ts": ts,
                    "message": {"text": args.get("text"), "ts": ts}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{1700000000 + next(self._ts)}.000200"}
        if method == "chat.update":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts"),
                    "text": args.get("text")}
        if method == "files.info":
            info = self.files.get(args.get("file"))
            return {"ok": True, "file": info} if info else {"ok": False, "error": "file_not_found"}
        if method == "files.getUploadURLExternal":
            fid = "F" + uuid.uuid4().hex[:10].upper()
            self.uploads[fid] = {"filename": args.get("filename"),
                                 "length": int(args.get("length", 0))}
            return {"ok": True, "upload_url": f"{self.base}/upload/{fid}", "file_id": fid}
        if method == "files.completeUploadExternal":
            files = args.get("files") or []
            for f in files:
                if f["id"] in self.uploads:
                    self.uploads[f["id"]].update(channel=args.get("channel_id"),
                                                 thread_ts=args.get("thread_ts"),
                                                 title=f.get("title"))
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title"),
                                           "name": self.uploads.get(f["id"], {}).get("filename")}
                                          for f in files]}
        if method == "views.publish":
            return {"ok": True, "view": args.get("view")}
        if method == "usergroups.users.list":
            group = args.get("usergroup")
            if group not in self.usergroups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.usergroups[group]}
        return {"ok": False, "error": "unknown_method"}


class SocketModeStub:
    """Slack's Socket Mode end, on a local WebSocket server (the ``websockets`` library):
    ``apps.connections.open`` on the Web API stub hands out its URL; on connect it says hello,
    then sends the envelopes a test asks for and records the acks the app sends back."""

    def __init__(self, stub: SlackStub):
        from websockets.sync.server import serve

        self.stub = stub
        self.acks: dict[str, dict[str, Any]] = {}
        self.connections: list[Any] = []
        self._cond = threading.Condition()
        self.server = serve(self._handle, "127.0.0.1", 0)
        self.port = self.server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/link/?ticket=test"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        stub.socket = self

    def _handle(self, conn) -> None:
        with self._cond:
            self.connections.append(conn)
            self._cond.notify_all()
        conn.send(json.dumps({"type": "hello", "num_connections": 1,
                              "connection_info": {"app_id": "A1"}}))
        try:
            for raw in conn:
                msg = json.loads(raw)
                if "envelope_id" in msg:
                    with self._cond:
                        self.acks[msg["envelope_id"]] = {**msg, "at": time.monotonic()}
                        self._cond.notify_all()
        except Exception:  # noqa: BLE001 - the app closed the socket
            pass

    def send(self, kind: str, payload: dict[str, Any], retry_attempt: int = 0,
             timeout: float = 10.0) -> dict[str, Any]:
        """Send one envelope (``slash_commands``, ``events_api``, ``interactive``) and wait for
        the app's ack; returns it with ``latency_ms``."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.connections, timeout):
                raise AssertionError("the app never connected over Socket Mode")
            conn = self.connections[-1]
        envelope_id = uuid.uuid4().hex
        sent = time.monotonic()
        conn.send(json.dumps({"envelope_id": envelope_id, "type": kind, "payload": payload,
                              "accepts_response_payload": kind != "events_api",
                              "retry_attempt": retry_attempt, "retry_reason": ""}))
        with self._cond:
            if not self._cond.wait_for(lambda: envelope_id in self.acks, timeout):
                raise AssertionError(f"no ack for the {kind} envelope within {timeout}s")
            ack = self.acks[envelope_id]
        return {**ack, "latency_ms": (ack["at"] - sent) * 1000}

    def stop(self) -> None:
        self.server.shutdown()


def parse_args(raw: bytes, ctype: str) -> dict[str, Any]:
    if not raw:
        return {}
    if "json" in ctype:
        args = json.loads(raw)
    else:
        args = {k: v[0] for k, v in parse_qs(raw.decode("utf-8")).items()}
    for key in JSON_FIELDS:
        if isinstance(args.get(key), str):
            try:
                args[key] = json.loads(args[key])
            except ValueError:
                pass
    return args


def message_text(args: dict[str, Any]) -> str:
    """All visible text of a message: the fallback and every block's text."""
    out = [str(args.get("text") or "")]

    def walk(node):
        if isinstance(node, dict) and node.get("type") == "rich_text_section":
            out.append("".join(_rich(e) for e in node.get("elements") or []))
        elif isinstance(node, dict):
            for k, v in node.items():
                if k == "text" and isinstance(v, str):
                    out.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(args.get("blocks") or [])
    return "\n".join(out)


def _rich(element: dict[str, Any]) -> str:
    """A rich-text element as Slack's text form writes it (a user element: ``<@U1>``)."""
    if element.get("type") == "user":
        return f"<@{element.get('user_id')}>"
    text = str(element.get("text") or "")
    return f"`{text}`" if (element.get("style") or {}).get("code") else text


# -- requests to the app, signed as Slack signs them --------------------------------------------
def sign(body: str, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    base = f"v0:{ts}:{body}".encode()
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig}


def post_signed(url: str, body: str, content_type: str, secret: str = SIGNING_SECRET,
                timestamp: int | None = None, headers: dict[str, str] | None = None,
                client: httpx.Client | None = None) -> httpx.Response:
    h = {"Content-Type": content_type, **sign(body, secret, timestamp), **(headers or {})}
    if client is not None:
        return client.post(url, content=body.encode(), headers=h)
    return httpx.post(url, content=body.encode(), headers=h, timeout=30)


def command_body(text: str, user: str = "U1", channel: str = "C1",
                 response_url: str | None = None) -> str:
    return urlencode({"token": "legacy", "team_id": "T1", "team_domain": "test",
                      "channel_id": channel, "channel_name": "ml", "user_id": user,
                      "user_name": user.lower(), "command": "/tf", "text": text,
                      "api_app_id": "A1", "is_enterprise_install": "false",
                      "response_url": response_url or "https://hooks.invalid/x",
                      "trigger_id": f"{uuid.uuid4().int % 10**12}.1.{uuid.uuid4().hex}"})


def send_command(endpoint: str, text: str, **kw) -> httpx.Response:
    signed = {k: kw.pop(k) for k in ("secret", "timestamp", "headers", "client") if k in kw}
    return post_signed(endpoint, command_body(text, **kw), "application/x-www-form-urlencoded",
                       **signed)


def event_body(event: dict[str, Any], event_id: str | None = None) -> str:
    return json.dumps({"token": "legacy", "team_id": "T1", "api_app_id": "A1",
                       "type": "event_callback", "event": event,
                       "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(),
                       "event_time": int(time.time()),
                       "authorizations": [{"team_id": "T1", "user_id": "UBOT",
                                           "is_bot": True}]})


def send_event(endpoint: str, event: dict[str, Any], event_id: str | None = None,
               **signed) -> httpx.Response:
    return post_signed(endpoint, event_body(event, event_id), "application/json", **signed)


def action_body(action_id: str, value: str, user: str = "U1", channel: str = "C1",
                message_ts: str = "1700000001.000100", thread_ts: str | None = None) -> str:
    payload = {"type": "block_actions", "team": {"id": "T1"}, "user": {"id": user},
               "api_app_id": "A1", "token": "legacy",
               "trigger_id": f"{uuid.uuid4().int % 10**12}.1.{uuid.uuid4().hex}",
               "channel": {"id": channel},
               "message": {"ts": message_ts, **({"thread_ts": thread_ts} if thread_ts else {})},
               "actions": [{"action_id": action_id, "block_id": "b", "value": value,
                            "type": "button", "action_ts": str(time.time())}]}
    return urlencode({"payload": json.dumps(payload)})


def send_action(endpoint: str, action_id: str, value: str, **kw) -> httpx.Response:
    return post_signed(endpoint, action_body(action_id, value, **kw),
                       "application/x-www-form-urlencoded")


def shortcut_body(message: dict[str, Any], user: str = "U1", channel: str = "C1") -> str:
    payload = {"type": "message_action", "callback_id": "tf_convert_file", "team": {"id": "T1"},
               "user": {"id": user}, "channel": {"id": channel}, "message": message,
               "trigger_id": f"{uuid.uuid4().int % 10**12}.1.{uuid.uuid4().hex}",
               "token": "legacy", "api_app_id": "A1", "message_ts": message.get("ts")}
    return urlencode({"payload": json.dumps(payload)})


# -- pytest fixtures (import them into a test module to use them) -----------------------------
import pytest  # noqa: E402


class SlackEnv:
    """A running tfdesk Slack endpoint wired to a running stub, with a temporary TFDESK_HOME."""

    def __init__(self, tmp_path, toml: str = "", engine_factory=None, home: str = "home",
                 stub: "SlackStub | None" = None, **runtime_kw):
        from bot.config import load_config
        from bot.slack.runtime import Runtime

        self.home = tmp_path / home
        self.home.mkdir(exist_ok=True)
        if toml:
            (self.home / "tfdesk.toml").write_text(toml, encoding="utf-8")
        self.own_stub = stub is None
        self.stub = stub or SlackStub().start()
        self.config = load_config({"TFDESK_HOME": str(self.home), "SLACK_BOT_TOKEN": BOT_TOKEN,
                                   "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                                   "SLACK_API_URL": self.stub.api_url})
        runtime_kw.setdefault("min_update_interval", 0.05)
        runtime_kw.setdefault("poll_interval", 0.2)
        if engine_factory is not None:
            runtime_kw["engine"] = engine_factory(self.config)
        self.runtime = Runtime(self.config, **runtime_kw)
        self.runtime.start_background()
        self.port = self.runtime.start_http()
        self.endpoint = f"http://127.0.0.1:{self.port}/slack/events"

    def command(self, text: str, **kw):
        return send_command(self.endpoint, text, **kw)

    def event(self, event: dict, event_id: str | None = None, **kw):
        return send_event(self.endpoint, event, event_id, **kw)

    def action(self, action_id: str, value: str, **kw):
        return send_action(self.endpoint, action_id, value, **kw)

    def close(self, stop_stub: bool = True):
        self.runtime.stop()
        if self.own_stub and stop_stub:
            self.stub.stop()


COMPUTE_TOML = ('[slack]\ncompute_users = ["UADMIN"]\nmax_running_jobs_per_user = 1\n'
                'retry_backoff_s = 0.01\n')


@pytest.fixture
def slack(tmp_path):
    env = SlackEnv(tmp_path, COMPUTE_TOML)
    yield env
    env.close()
