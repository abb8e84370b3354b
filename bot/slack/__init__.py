"""tfdesk in Slack (Bolt for Python): the app factory, thin listeners, Block Kit rendering,
file intake, job progress, dedupe and the outbox. No command logic lives here: every request
becomes a command line run by bot.parser/bot.dispatch, exactly as in the terminal."""
from bot.slack.app import build, create_app  # noqa: F401
