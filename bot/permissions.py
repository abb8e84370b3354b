"""Who may do what: the permissions commands declare, the roles people hold, and who may
change what someone owns.

Every command in the registry declares one permission; ``bot.dispatch`` checks it once, for
every face. A person is an :class:`Actor`: the terminal is the machine's operator (every
right); a Slack member's roles come from ``[slack]`` in tfdesk.toml (``bot.slack.access``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

# permission -> (who holds it, what it means). Order = the order of the docs table.
PERMISSIONS: dict[str, tuple[str, str]] = {
    "read": ("everyone", "answers and shows what exists; changes nothing"),
    "own": ("everyone, on what they own",
            "creates things the asker then owns, or changes and deletes them; someone else's "
            "things only with admin"),
    "compute": ("compute users, admins, the operator",
                "starts work (jobs, pipeline runs) on the tfdesk machine or cluster; counts "
                "against the per-user limit of running jobs"),
    "admin": ("admins, the operator", "changes what everyone shares (runtimes, defaults)"),
    "terminal": ("the operator only",
                 "acts on the tfdesk machine itself; only in a terminal there"),
}
# role -> the permissions it holds. Roles add up: an admin is also a compute user.
ROLE_GRANTS: dict[str, frozenset[str]] = {
    "member": frozenset({"read", "own"}),
    "compute": frozenset({"read", "own", "compute"}),
    "admin": frozenset({"read", "own", "compute", "admin"}),
    "operator": frozenset(PERMISSIONS),
}
# Where the Slack roles come from, for answers and the docs.
ROLE_SOURCES = {
    "member": "every member of the Slack workspace",
    "compute": "`[slack] compute_users`, `compute_groups`, `compute_channels` (in that channel)",
    "admin": "`[slack] admin_users`, `admin_groups`",
    "operator": "whoever runs `tfdesk` in a terminal on the tfdesk machine",
}


class Forbidden(Exception):
    """The asker may not do this; the message says why and who may."""
    user_facing = True


@dataclass(frozen=True)
class Actor:
    """Who asked: an id (the owner recorded on what they create), the face they came through
    and their roles. ``max_running``: their limit of running jobs (None: no limit)."""
    id: str
    face: str = "terminal"
    roles: frozenset[str] = field(default_factory=lambda: frozenset({"operator"}))
    max_running: int | None = None

    @property
    def permissions(self) -> frozenset[str]:
        out: set[str] = set()
        for role in self.roles:
            out |= ROLE_GRANTS.get(role, frozenset())
        return frozenset(out)

    def has(self, permission: str | None) -> bool:
        return permission is not None and permission in self.permissions

    @property
    def is_admin(self) -> bool:
        return "admin" in self.permissions

    @property
    def remote(self) -> bool:
        """Not at the machine: names no server paths and sees none."""
        return "operator" not in self.roles

    def may_change(self, owner: str | None) -> bool:
        return self.is_admin or (owner is not None and owner == self.id)


OPERATOR = Actor("local")


def member(user: str, *roles: str, max_running: int | None = None) -> Actor:
    return Actor(user, "slack", frozenset({"member", *roles}), max_running)


def check_owner(actor: Actor, owner: str | None, what: str, action: str = "change") -> None:
    """Raise Forbidden unless ``actor`` owns ``what`` or is an admin."""
    if not actor.may_change(owner):
        raise Forbidden(f"{what} belongs to {owner or 'nobody'}; only its owner or a tfdesk "
                        f"admin may {action} it")


def refusal(actor: Actor, name: str, permission: str | None) -> str | None:
    """Why ``actor`` may not run command ``name`` (None: they may)."""
    if permission not in PERMISSIONS:
        return (f"'{name}' declares no permission, so tfdesk refuses it (tell the tfdesk "
                "admins: every command must declare one)")
    if actor.has(permission):
        return None
    if permission == "terminal":
        return (f"'{name}' works only in a terminal on the tfdesk machine "
                f"(tfdesk {name} ...)")
    if permission == "compute":
        return (f"`{name}` starts compute work and is only for configured users, groups or "
                "channels; ask a tfdesk admin to add you (`[slack] compute_users` / "
                "`compute_groups` / `compute_channels` in tfdesk.toml).")
    if permission == "admin":
        return (f"`{name}` changes what everyone shares and is for tfdesk admins only "
                "(`[slack] admin_users` / `admin_groups` in tfdesk.toml).")
    return f"`{name}` needs the {permission!r} permission, which you do not have."


def markdown_table(commands) -> str:
    """The permission of every command, as the Markdown table site_docs/admin/security.md
    shows (a test keeps the page equal to this)."""
    rows = ["| Permission | Who | Commands |", "| --- | --- | --- |"]
    for perm, (who, _) in PERMISSIONS.items():
        names = sorted(n for n, spec in commands.items() if spec.permission == perm)
        rows.append(f"| `{perm}` | {who} | " + ", ".join(f"`{n}`" for n in names) + " |")
    rows += ["", "| Permission | Meaning |", "| --- | --- |"]
    rows += [f"| `{perm}` | {meaning} |" for perm, (_, meaning) in PERMISSIONS.items()]
    rows += ["", "| Role | Holds | Given to |", "| --- | --- | --- |"]
    rows += [f"| {role} | " + ", ".join(f"`{p}`" for p in PERMISSIONS if p in grants)
             + f" | {ROLE_SOURCES[role]} |" for role, grants in ROLE_GRANTS.items()]
    return "\n".join(rows)
