"""The permission table: every command declares one, dispatch refuses an undeclared one, the
docs page shows the table the registry holds, and answers to Slack carry no server paths."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.parser import parser
from bot.paths import Areas, public
from bot.commands import security_page_table
from bot.permissions import PERMISSIONS, Actor, member
from bot.registry import COMMANDS, command
from bot.reply import Reply

REPO = Path(__file__).resolve().parents[2]
parser()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_declares_a_permission(name):
    assert COMMANDS[name].permission in PERMISSIONS, name


def test_a_command_without_a_declaration_is_refused_everywhere(tmp_path):
    ran = []
    command("zz-undeclared", "a command someone forgot to declare")(
        lambda ctx: ran.append(1) or Reply(text="ran"))
    try:
        config = load_config({"TFDESK_HOME": str(tmp_path)})
        for ctx in (Context(config), Context(config, actor=member("U1", "admin"))):
            from bot.dispatch import run
            from bot.parser import Command
            reply = run(ctx, Command("zz-undeclared"))
            assert not reply.ok and "declares no permission" in reply.text
        assert ran == []
    finally:
        del COMMANDS["zz-undeclared"]


def test_unknown_permission_cannot_be_declared():
    with pytest.raises(RuntimeError, match="unknown permission"):
        command("zz-bad", "x", permission="superuser")


def test_security_page_shows_the_registry_table():
    page = (REPO / "site_docs" / "admin" / "security.md").read_text(encoding="utf-8")
    shown = page.split("<!-- permissions:begin -->\n", 1)[1].split("\n<!-- permissions:end -->")[0]
    assert shown == security_page_table(), "regenerate it: python -m bot.commands"


@pytest.mark.parametrize("roles,allowed", [
    ((), {"read", "own"}), (("compute",), {"read", "own", "compute"}),
    (("admin",), {"read", "own", "compute", "admin"})])
def test_slack_roles_grant_what_the_table_says(roles, allowed):
    actor = member("U1", *roles)
    assert {p for p in PERMISSIONS if actor.has(p)} == allowed
    assert actor.remote
    assert actor.may_change("U1") and actor.may_change("U2") == ("admin" in roles)
    assert not Actor("local").remote and Actor("local").may_change("U2")


def test_answers_show_no_server_paths(tmp_path):
    config = load_config({"TFDESK_HOME": str(tmp_path / "home")})
    areas = Areas.of(config)
    jobs, home = str(areas.jobs), str(areas.home)
    text = (f"workdir {jobs}/j-1a2b3c4d\nartifacts: {jobs}/j-1a2b3c4d/out/model.onnx, "
            f"{home}/slack/uploads/F1/train.py and {home}/slack/outputs/U1/x.py; "
            f"script {os.__file__}; see https://example.com/a/b, s3://b/k, /tf help, 1/2; "
            "code: np.load('/data/train.npz')")
    shown = public(text, areas)
    assert "j-1a2b3c4d/out/model.onnx" in shown and "F1/train.py" in shown
    assert "outputs/x.py" in shown and "script os.py" in shown
    assert "np.load('/data/train.npz')" in shown  # not a file here: the member's code as is
    assert "https://example.com/a/b" in shown and "s3://b/k" in shown and "/tf help" in shown
    assert not re.search(r"(?<![\w:/])/(tmp|usr|home|root|work)\b", shown), shown
    assert public({"a": [text]}, areas) == {"a": [shown]}


def test_terminal_operator_keeps_every_right(tmp_path):
    ctx = Context(load_config({"TFDESK_HOME": str(tmp_path)}))
    assert ctx.actor.has("terminal") and not ctx.actor.remote
    _, reply = run_line(ctx, "environments add local-env --python /usr/bin/python3")
    assert reply.ok, reply.text
