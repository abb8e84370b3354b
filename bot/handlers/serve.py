"""serve: run tfdesk for Slack (Socket Mode or the HTTP endpoint), or the local console."""
from __future__ import annotations

import logging

from bot.config import Config
from bot.registry import arg, command
from bot.reply import Reply


class ServeError(Exception):
    user_facing = True


def _unreachable_errors() -> tuple:
    # imported here: every command loads this module, only serve needs Slack's libraries
    from urllib.error import URLError

    from slack_bolt.error import BoltError
    from slack_sdk.errors import SlackApiError
    return (URLError, BoltError, SlackApiError)


def _reason(e: Exception) -> str:
    return str(getattr(e, "reason", None) or e).strip() or type(e).__name__


def choose_mode(config: Config) -> str:
    """'socket' with an app token, 'http' with a signing secret, 'console' with no Slack at all."""
    any_slack = (config.slack_bot_token or config.slack_app_token
                 or config.slack_signing_secret)
    if not any_slack:
        return "console"
    if not config.slack_bot_token:
        raise ServeError("SLACK_APP_TOKEN or SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN "
                         "is not; set the bot token (xoxb-...) from the app's OAuth page.")
    if config.slack_app_token:
        if not config.slack_app_token.startswith("xapp-"):
            raise ServeError("SLACK_APP_TOKEN must be an app-level token (xapp-...) with the "
                             "connections:write scope.")
        return "socket"
    if config.slack_signing_secret:
        return "http"
    raise ServeError("SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode) nor "
                     "SLACK_SIGNING_SECRET (HTTP endpoint) is.")


@command("serve", "run the Slack bot (Socket Mode or HTTP endpoint); the local console "
         "without Slack credentials",
         args=[arg("--port", type=int, default=3000, help="HTTP port (default 3000)"),
               arg("--host", default=None,
                   help="HTTP address to listen on (default: [slack] bind, else 0.0.0.0)")],
         description="Runs tfdesk for Slack: Socket Mode when SLACK_APP_TOKEN is set, otherwise "
                     "the HTTP endpoint /slack/events (and /healthz) verified with "
                     "SLACK_SIGNING_SECRET. With no Slack credentials, the local console.",
         examples=["tfdesk serve", "tfdesk serve --port 8080"], permission="terminal")
def serve(ctx, port: int, host: str | None):
    if ctx.console:
        return Reply.error("already in the tfdesk console: type a command here, or 'quit' to "
                           "leave it; `tfdesk serve` with Slack credentials runs the Slack bot")
    mode = choose_mode(ctx.config)
    if mode == "console":
        from bot.console import console_loop
        console_loop(ctx.config, services=ctx.services)
        return Reply(text="", data={"mode": "console"})
    if not 0 < port < 65536:
        raise ServeError(f"--port must be between 1 and 65535, not {port}")
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from bot.slack.runtime import run_forever
    try:
        run_forever(ctx.config, mode, host, port, services=ctx.services)
    except _unreachable_errors() as e:
        # Bolt checks the bot token with auth.test before serving: a network failure or a
        # rejected token is a set-up problem to state plainly, not a crash with a traceback.
        raise ServeError(f"could not start the Slack {mode} app: Slack did not accept or answer "
                         f"the bot token check (auth.test): {_reason(e)}. Check the network "
                         "access to slack.com and SLACK_BOT_TOKEN.") from None
    return Reply(text="tfdesk stopped.", data={"mode": mode})
