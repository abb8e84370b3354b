"""The command layer: one parser for every face, replies instead of exits, --json everywhere."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.parser import UsageError, parse
from bot.registry import COMMANDS
from knowledge_base.builder import build_kb
from knowledge_base.qa.semantic import Vectors
from tests.kbdata import history_releases

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path):
    build_kb(history_releases(), tmp_path / "kb.sqlite", indexes=[Vectors()])
    return tmp_path


@pytest.fixture
def ctx(home):
    return Context(load_config({"TFDESK_HOME": str(home)}))


def test_every_command_takes_json():
    from bot.parser import command_help
    for name in COMMANDS:
        assert "--json" in command_help(name), name
    assert parse("ask softmax --json").json


def test_an_unknown_option_shows_that_commands_usage():
    with pytest.raises(UsageError) as e:
        parse("convert train.py --target horovod")
    assert str(e.value) == "unrecognized arguments: --target horovod"
    assert e.value.usage.startswith("usage: tfdesk convert ")
    assert "--to {horovod,tf-distribute}" in e.value.usage


def test_slack_text_and_argv_parse_the_same():
    assert parse('ask "pad a tensor" --limit 3') == parse(["ask", "pad a tensor", "--limit", "3"])
    assert parse('ask --limit 3 "pad a tensor"') == parse(["ask", "pad a tensor", "--limit", "3"])


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"'),
               min_size=1, max_size=40).map(str.strip).filter(lambda t: t and not t.startswith("-")))
def test_a_question_in_quotes_is_the_words_inside(words):
    """Whatever a question holds, quoting it whole (as a shell needs) asks the same words."""
    cmd = parse(f'ask "{words}" --limit 3')
    assert cmd.args["query"] == [words] and cmd.args["limit"] == 3


def test_usage_error_carries_the_subcommands_help():
    with pytest.raises(UsageError) as e:
        parse("ask --limit many softmax")
    assert "usage:" in e.value.usage and "ask" in e.value.usage
    # A question's quotes and apostrophes are its text (pasted errors quote names), not syntax.
    assert parse("ask what's tf.where's default").args["query"] == ["what's tf.where's default"]
    assert parse('ask "unbalanced').args["query"] == ['"unbalanced']
    with pytest.raises(UsageError):
        parse('convert "unbalanced')


def test_group_without_subcommand_is_a_usage_error(ctx):
    cmd, reply = run_line(ctx, "kb")
    assert cmd is None and not reply.ok and reply.status == 2 and "sub-command" in reply.text


def test_ask_reply_has_text_and_data(ctx):
    cmd, reply = run_line(ctx, "ask tf.nn.softmx --json")
    assert cmd.json and reply.ok
    assert reply.data["results"][0]["name"] == "tf.nn.softmax"
    assert reply.data["results"][0]["url"].endswith("api/tf.nn.softmax/")
    assert "tf.nn.softmax(logits, axis=-1, name=None)" in reply.text


def test_ask_in_older_release_shows_that_signature(ctx):
    _, reply = run_line(ctx, "ask tf.nn.softmax --version 2.14")
    assert "axis=None" in reply.text
    _, reply = run_line(ctx, "ask tf.nn.relu --version 2.14 --json")
    assert all(r["name"] != "tf.nn.relu" for r in reply.data["results"])


@pytest.mark.parametrize("query", ['"', "*", "NEAR", "-", "AND", "a AND OR b", "x" * 10_000,
                                   "tf.nn.\udcff\udcfe", "(", "'; DROP TABLE symbols; --", "..."])
def test_hostile_queries_never_raise(ctx, query):
    _, reply = run_line(ctx, ["ask", query])
    # Punctuation alone leaves nothing to look up: that is said plainly, never a crash.
    assert reply.ok or reply.text.startswith("empty question"), reply.text


def test_unknown_symbol_offers_nearest_names(ctx):
    _, reply = run_line(ctx, "history tf.nn.softmaxx_zzz_qq")
    assert not reply.ok and "nearest names" in reply.text


def test_unknown_release_is_clear(ctx):
    _, reply = run_line(ctx, "diff 2.14 9.9")
    assert not reply.ok and "unknown release '9.9'" in reply.text


def test_missing_kb_says_how_to_get_one(tmp_path):
    ctx = Context(load_config({"TFDESK_HOME": str(tmp_path)}))
    _, reply = run_line(ctx, "ask softmax")
    assert not reply.ok and "tfdesk kb load" in reply.text


def test_config_file_and_env(tmp_path):
    (tmp_path / "tfdesk.toml").write_text('[site]\nurl = "https://docs.example/tf"\n[kb]\npath = "x.sqlite"\n')
    cfg = load_config({"TFDESK_HOME": str(tmp_path)})
    assert cfg.site_url == "https://docs.example/tf/" and cfg.kb_path == tmp_path / "x.sqlite"
    cfg = load_config({"TFDESK_HOME": str(tmp_path), "TFDESK_SITE_URL": "http://h/"})
    assert cfg.site_url == "http://h/"
    (tmp_path / "tfdesk.toml").write_text("[site\n")
    from bot.config import ConfigError
    with pytest.raises(ConfigError, match="tfdesk.toml"):
        load_config({"TFDESK_HOME": str(tmp_path)})


def _cli(home, *args, stdin=None):
    env = {**os.environ, "TFDESK_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=env,
                          input=stdin, capture_output=True, text=True, timeout=120)


def test_cli_exit_codes_and_json(home):
    r = _cli(home, "history", "tf.estimator.Estimator", "--json")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert [e["kind"] for e in data["events"]] == ["added", "deprecated", "removed"]
    assert _cli(home, "history", "tf.no_such_thing_at_all").returncode == 1
    assert _cli(home, "frobnicate").returncode == 2


def test_console_runs_the_same_commands(home):
    r = _cli(home, stdin="ask tf.pad\n/tf history tf.nn.softmax\nbogus\nquit\n")
    assert r.returncode == 0
    assert "tf.pad(tensor, paddings" in r.stdout
    assert "signature changed: default of `axis` None → -1" in r.stdout
    assert "invalid choice: 'bogus'" in r.stdout


def test_machine_commands_are_refused_from_slack(home):
    ctx = Context(load_config({"TFDESK_HOME": str(home)}),
                  reply_to={"kind": "slack", "channel": "C1", "thread_ts": "1.0"})
    target = home / "export.json"
    for line in (f"catalog export {target}", "kb load", "site serve", "serve"):
        _, reply = run_line(ctx, line)
        assert not reply.ok and "only in a terminal" in reply.text, line
    assert not target.exists()
    _, reply = run_line(ctx, "ask tf.pad")
    assert reply.ok


def test_convert_command_offers_the_converters_targets():
    from bot.handlers.convert import TARGETS
    from converters.script import TARGETS as CONVERTER_TARGETS
    assert tuple(TARGETS) == tuple(CONVERTER_TARGETS)


def test_start_up_does_not_import_heavy_stacks():
    """Every command starts by parsing; the parser must not drag in LibCST, numpy, TensorFlow."""
    code = ("import sys, bot.parser; heavy = [m for m in ('libcst', 'numpy', 'tensorflow', "
            "'matplotlib', 'slack_bolt', 'kubernetes') if m in sys.modules]; print(heavy)")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_slack_commands_cannot_name_files_on_the_server(home, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'xoxb-not-for-slack'\n")
    shared = home / "slack" / "uploads" / "F123"
    shared.mkdir(parents=True)
    ok = shared / "train.py"
    ok.write_text("print('hi')\n")
    (shared / "upload.json").write_text('{"name": "train.py", "user": "U1"}')
    ctx = Context(load_config({"TFDESK_HOME": str(home)}),
                  reply_to={"kind": "slack", "channel": "C1", "thread_ts": "1.0"},
                  owner="U1")
    for line in (f"convert {secret}", f"convert ../../../../{secret}", "models add m /etc",
                 f"datasets add d file://{tmp_path}", "convert nothing.py"):
        _, reply = run_line(ctx, line)
        assert not reply.ok and "not a file shared with tfdesk" in reply.text, line
        assert "xoxb" not in reply.text
    _, reply = run_line(ctx, f"convert {ok} -o {tmp_path / 'x.py'}")
    assert not reply.ok and "your own output folder" in reply.text
    assert not (tmp_path / "x.py").exists()
    for line in (f"convert {ok}", "convert train.py", "convert F123", "convert F123/train.py"):
        _, reply = run_line(ctx, line)
        assert "not a file shared" not in reply.text, line
    # Outputs land in the member's own folder, whatever the path asked for.
    _, reply = run_line(ctx, "convert train.py -o out.py")
    assert reply.ok and (home / "slack" / "outputs" / "U1" / "out.py").is_file()
    # Someone else's upload is not theirs to name.
    other = Context(load_config({"TFDESK_HOME": str(home)}), owner="U2",
                    reply_to={"kind": "slack", "channel": "C1", "thread_ts": "1.0"})
    _, reply = run_line(other, "convert train.py")
    assert not reply.ok and "not a file shared" in reply.text
    # The terminal names any path.
    _, reply = run_line(Context(load_config({"TFDESK_HOME": str(home)})), f"convert {secret}")
    assert "not a file shared" not in reply.text


def test_empty_ask_and_history_are_bad_input_not_answers(ctx):
    _, reply = run_line(ctx, ["ask", ""])
    assert not reply.ok and reply.status != 0 and "empty question" in reply.text
    assert json.loads(reply.to_json())["ok"] is False
    _, reply = run_line(ctx, ["history", " "])
    assert not reply.ok and reply.status != 0
    assert reply.text.startswith("give a symbol name") and "no such symbol" not in reply.text


@pytest.mark.parametrize("limit", ["0", "-3", "51", "many"])
def test_a_limit_out_of_range_is_a_usage_error(ctx, limit):
    _, reply = run_line(ctx, ["ask", "softmax", "--limit", limit])
    assert not reply.ok and reply.status == 2
    assert "--limit" in reply.text and "usage: tfdesk ask" in reply.text
    _, reply = run_line(ctx, ["datasets", "list", "--limit", "0"])
    assert not reply.ok and reply.status == 2 and "must be 1 or more, not 0" in reply.text


def test_read_only_job_commands_do_not_warn_who_jobs_run_as(home):
    # Said once where jobs are started (serve, the first job launched), not on every look.
    for args in (["jobs"], ["jobs", "--json"], ["job", "nosuch"], ["logs", "nosuch"],
                 ["cancel", "nosuch"]):
        r = _cli(home, *args)
        assert "local jobs run as" not in r.stderr + r.stdout, args


def test_serve_typed_in_the_console_does_not_open_a_second_one(home):
    import io

    from bot.console import BANNER, console_loop
    out = io.StringIO()
    rc = console_loop(load_config({"TFDESK_HOME": str(home)}), stdin=io.StringIO("serve\nquit\n"),
                      stdout=out)
    assert rc == 0
    assert out.getvalue().count(BANNER) == 1 and "already in the tfdesk console" in out.getvalue()
