"""tfdesk's faces: command parsing, handlers, the terminal CLI and (later) Slack."""
