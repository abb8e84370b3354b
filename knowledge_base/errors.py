class KBError(Exception):
    """A knowledge-base problem worth showing to the user as it is."""

    user_facing = True


class WheelError(KBError):
    """A wheel that is corrupt or not the package we expected; the message names the file."""
