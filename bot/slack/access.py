"""Who may run what from Slack.

Read-only commands are for everyone in the workspace. Compute commands start real work
(training, model conversion, inference, deletion), so they are allowed only for the users,
user groups or channels configured in ``[slack]`` of tfdesk.toml, within a per-user limit on
running jobs; every request for one is written to the audit table, allowed or refused.

    [slack]
    compute_users = ["U012ABC"]        # or ["*"] for everyone
    compute_groups = ["S0ML"]          # Slack user group ids
    compute_channels = ["C0TRAIN"]     # anyone in these channels
    max_running_jobs_per_user = 2
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from slack_sdk.errors import SlackApiError

from bot.slack.store import SlackStore

log = logging.getLogger(__name__)

COMPUTE_COMMANDS = frozenset({"convert-model", "train", "infer", "evaluate", "delete"})
GROUP_CACHE_S = 300.0


@dataclass(frozen=True)
class Policy:
    users: frozenset[str] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)
    channels: frozenset[str] = field(default_factory=frozenset)
    max_running_per_user: int = 2

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "Policy":
        def ids(key: str) -> frozenset[str]:
            value = section.get(key, [])
            if isinstance(value, str):
                value = [value]
            return frozenset(str(v) for v in value)
        return cls(ids("compute_users"), ids("compute_groups"), ids("compute_channels"),
                   int(section.get("max_running_jobs_per_user", 2)))


class Gate:
    def __init__(self, policy: Policy, store: SlackStore, client=None,
                 running_jobs: Callable[[str], int] | None = None):
        self.policy = policy
        self.store = store
        self.client = client
        self.running_jobs = running_jobs
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

    def allowed_by_policy(self, user: str, channel: str | None) -> bool:
        p = self.policy
        if "*" in p.users or user in p.users or (channel and channel in p.channels):
            return True
        return any(user in self._members(g) for g in p.groups) if self.client else False

    def check(self, user: str, channel: str | None, command: str, line: str) -> str | None:
        """None when ``user`` may run ``command`` here; otherwise the reason, in words."""
        if command not in COMPUTE_COMMANDS:
            return None
        reason = None
        if not self.allowed_by_policy(user, channel):
            reason = (f"`{command}` starts compute work and is only for configured users, "
                      "groups or channels; ask a tfdesk admin to add you (`[slack] "
                      "compute_users` / `compute_groups` / `compute_channels` in tfdesk.toml).")
        elif command != "delete" and self.running_jobs is not None:
            running = self.running_jobs(user)
            limit = self.policy.max_running_per_user
            if running >= limit:
                reason = (f"you already have {running} running job(s), the limit is {limit}; "
                          "wait for one to finish or cancel one (`/tf jobs --mine`).")
        self.store.audit(user, channel, command, line, reason is None, reason or "")
        return reason
