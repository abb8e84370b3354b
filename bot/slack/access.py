"""Which roles a Slack member holds (bot.permissions), from ``[slack]`` in tfdesk.toml.

Every member may ask and read, and own what they add. Compute (training, model conversion,
inference, pipeline runs) is for the users, user groups or channels configured here, within a
per-user limit on running jobs; admins may also change or delete what others own and change
shared settings. The checks themselves happen in ``bot.dispatch``, for every face; every
request that changes something, or is refused, is written to the audit table.

    [slack]
    compute_users = ["U012ABC"]        # or ["*"] for everyone
    compute_groups = ["S0ML"]          # Slack user group ids
    compute_channels = ["C0TRAIN"]     # anyone, in these channels
    admin_users = ["U0BOSS"]
    admin_groups = ["S0PLATFORM"]
    max_running_jobs_per_user = 2
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.permissions import Actor, member
from bot.slack.store import SlackStore

log = logging.getLogger(__name__)

GROUP_CACHE_S = 300.0


@dataclass(frozen=True)
class Policy:
    users: frozenset[str] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)
    channels: frozenset[str] = field(default_factory=frozenset)
    max_running_per_user: int = 2
    admin_users: frozenset[str] = field(default_factory=frozenset)
    admin_groups: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "Policy":
        def ids(key: str) -> frozenset[str]:
            value = section.get(key, [])
            if isinstance(value, str):
                value = [value]
            return frozenset(str(v) for v in value)
        return cls(ids("compute_users"), ids("compute_groups"), ids("compute_channels"),
                   int(section.get("max_running_jobs_per_user", 2)),
                   ids("admin_users"), ids("admin_groups"))


class Gate:
    """Turns a Slack user (in a channel) into an Actor, and keeps the audit."""

    def __init__(self, policy: Policy, store: SlackStore, client=None):
        self.policy = policy
        self.store = store
        self.client = client
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def _members(self, group: str) -> frozenset[str]:
        with self._lock:
            cached = self._groups.get(group)
            if cached and time.monotonic() - cached[0] < GROUP_CACHE_S:
                return cached[1]
        try:
            users = frozenset(self.client.usergroups_users_list(usergroup=group).get("users", []))
        except SlackApiError as exc:
            log.warning("could not read user group %s: %s", group, exc.response.get("error"))
            users = frozenset()
        with self._lock:
            self._groups[group] = (time.monotonic(), users)
        return users

    def _in_groups(self, user: str, groups: frozenset[str]) -> bool:
        return bool(self.client) and any(user in self._members(g) for g in groups)

    def is_admin(self, user: str) -> bool:
        p = self.policy
        return user in p.admin_users or self._in_groups(user, p.admin_groups)

    def allowed_by_policy(self, user: str, channel: str | None) -> bool:
        p = self.policy
        if "*" in p.users or user in p.users or (channel and channel in p.channels):
            return True
        return self._in_groups(user, p.groups)

    def actor(self, user: str, channel: str | None) -> Actor:
        roles = []
        if self.is_admin(user):
            roles.append("admin")
        elif self.allowed_by_policy(user, channel):
            roles.append("compute")
        return member(user, *roles, max_running=self.policy.max_running_per_user)

    def auditor(self, user: str, channel: str | None):
        def audit(command: str, line: str, allowed: bool, reason: str) -> None:
            self.store.audit(user, channel, command, line, allowed, reason)
        return audit
