"""Command handlers, one module per command family. Importing this package registers them all.

Each handler takes (ctx: Context, **parsed_args) and returns a bot.reply.Reply.
"""
from bot.handlers import help  # noqa: F401
from bot.handlers import kb  # noqa: F401
from bot.handlers import serve  # noqa: F401
from bot.handlers import catalog_cmd  # noqa: F401
from bot.handlers import jobs  # noqa: F401
from bot.handlers import site  # noqa: F401
from bot.handlers import models_cmd  # noqa: F401
from bot.handlers import convert  # noqa: F401
from bot.handlers import runs_cmd  # noqa: F401
from bot.handlers import web_cmd  # noqa: F401
