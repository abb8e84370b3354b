"""web: the browser view alone (``tfdesk serve`` serves it too), and the operator's one-time
sign-in link."""
from __future__ import annotations

from bot.registry import arg, command
from bot.reply import Reply


@command("web", "serve the read-only browser view (runs, models, datasets, projects, "
         "pipelines); --login prints a one-time sign-in link",
         args=[arg("--host", help="address to listen on (default: [web] bind, 127.0.0.1)"),
               arg("--port", type=int, help="port (default: [web] port, 8765)"),
               arg("--login", action="store_true",
                   help="only print a one-time sign-in link for this machine's operator (for "
                        "a web view already served by 'tfdesk serve' or 'tfdesk web')")],
         description="Serves the web view on [web] bind:port (127.0.0.1:8765 by default), with "
                     "sign-in with Slack when [web] client_id and client_secret are set. The "
                     "operator signs in with the one-time link printed at start or by --login.",
         examples=["tfdesk web", "tfdesk web --login", "tfdesk web --port 9000"],
         permission="terminal")
def web(ctx, host, port, login):
    from bot.web.app import client_env
    from bot.web.auth import Sessions
    from bot.web.settings import load
    settings = load(ctx.config, client_env())
    if port is not None and not 0 <= port < 65536:
        return Reply.error(f"--port must be from 0 to 65535, not {port}", status=2)
    if login:
        link = Sessions(ctx.services.catalog, settings).login_link(ctx.actor)
        return Reply(text=f"sign in (once, within {settings.login_link_minutes:g} min): {link}",
                     data={"url": link})
    if ctx.console:
        return Reply.error("the web view runs in its own process: 'tfdesk web' in a terminal")
    import logging
    from bot.web.server import WebServer
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = WebServer(ctx.config, ctx.services, settings, host=host, port=port)
    link = Sessions(ctx.services.catalog, server.settings).login_link(ctx.actor)
    # Handlers never print: the link reaches the operator's terminal through the log.
    logging.getLogger("tfdesk.web").info("tfdesk web view on %s; sign in (once): %s",
                                         server.url, link)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return Reply(text="tfdesk web stopped.", data={"url": server.url})
