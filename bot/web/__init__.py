"""The browser view: a read-only, server-rendered face of tfdesk (runs, models, datasets,
projects, pipelines), served by ``tfdesk serve`` beside the Slack endpoint and by ``tfdesk web``
alone.

It is a face, like Slack and the terminal, so it lives in ``bot`` and uses the same plumbing:
the permission table (bot.permissions), the Slack roles (bot.slack.access), configuration and
services. Nothing outside ``bot`` imports it. Pages are Jinja2 templates rendered on the
server and charts are PNGs drawn on the server: there is no front-end build.
"""
