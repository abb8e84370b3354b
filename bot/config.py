"""Configuration, read once at the edge and passed down as a plain object.

Sources, later ones winning: built-in defaults, ``$TFDESK_HOME/tfdesk.toml`` (or the file
named by ``TFDESK_CONFIG``), then environment variables. Library packages never read the
environment themselves; they get what they need from this object. Every key tfdesk reads is
in the table of ``bot/config_keys.py`` (documented in site_docs/admin/configuration.md).
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from bot.config_keys import unknown_key_warnings

DEFAULT_SITE_URL = "http://127.0.0.1:8000/"


class ConfigError(Exception):
    user_facing = True


@dataclass(frozen=True)
class Config:
    home: Path
    kb_path: Path
    state_path: Path
    wheel_dir: Path
    site_url: str
    slack_bot_token: str | None = None
    slack_app_token: str | None = None
    slack_signing_secret: str | None = None
    slack_api_url: str | None = None
    # Whole sections of tfdesk.toml for the packages that own them ([jobs], [kubernetes], ...).
    sections: Mapping[str, Any] = field(default_factory=dict)
    # Settings in tfdesk.toml that tfdesk does not read (the edge prints them once).
    warnings: tuple[str, ...] = ()

    def section(self, name: str) -> dict[str, Any]:
        return dict(self.sections.get(name, {}))

    @property
    def has_slack(self) -> bool:
        return bool(self.slack_bot_token and (self.slack_app_token or self.slack_signing_secret))


def load_config(env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    home = Path(env.get("TFDESK_HOME") or Path.home() / ".tfdesk").expanduser()
    cfg_file = Path(env.get("TFDESK_CONFIG") or home / "tfdesk.toml").expanduser()
    data: dict[str, Any] = {}
    if cfg_file.is_file():
        try:
            data = tomllib.loads(cfg_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{cfg_file}: not valid TOML: {exc}") from None
    kb = data.get("kb", {})
    site = data.get("site", {})
    slack = data.get("slack", {})

    def pick(env_name: str, section: dict, key: str, default=None):
        return env.get(env_name) or section.get(key) or default

    def path(value) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else home / p

    site_url = pick("TFDESK_SITE_URL", site, "url", DEFAULT_SITE_URL)
    if not site_url.endswith("/"):
        site_url += "/"
    return Config(
        home=home,
        kb_path=path(pick("TFDESK_KB", kb, "path", "kb.sqlite")),
        state_path=path(pick("TFDESK_STATE", data.get("state", {}), "path", "state.sqlite")),
        wheel_dir=path(pick("TFDESK_WHEEL_DIR", kb, "wheel_dir", "wheels")),
        site_url=site_url,
        slack_bot_token=pick("SLACK_BOT_TOKEN", slack, "bot_token"),
        slack_app_token=pick("SLACK_APP_TOKEN", slack, "app_token"),
        slack_signing_secret=pick("SLACK_SIGNING_SECRET", slack, "signing_secret"),
        slack_api_url=pick("SLACK_API_URL", slack, "api_url"),
        sections=data,
        warnings=tuple(unknown_key_warnings(data)),
    )
