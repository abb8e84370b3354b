"""What an asker may give a job to read (runners/inputs.py Grant), for every face: the local
paths of catalog datasets and models (shared; a member names them by catalog name), and from
the terminal, any path the operator names. tfdesk's own folders never, whoever asks: its home
(state, config, uploads, private copies) and the job folders; only the files catalog entries
point at inside it (the catalog's stores), one entry at a time; an entry of a job's folder is
given as a private copy (runners/inputs.py)."""
from __future__ import annotations

from pathlib import Path

from bot.paths import Areas, PathRefused
from catalog import inputs as catalog_inputs
from catalog.errors import NotFound
from runners.inputs import Grant


def catalog_grant(conn, areas: Areas) -> Grant:
    """Catalog entries only: a Slack member's grant, and every pipeline step's."""
    # The catalog's stores in the home: kept copies (bot/paths.py Areas.kept) and the models
    # `models add` copies (bot/handlers/catalog_owners.py model_store).
    stores = (areas.kept, areas.home / "catalog" / "models")
    return Grant(roots=catalog_inputs.readable_paths(conn),
                 forbidden=(areas.home, areas.jobs), shareable=stores)


def grant(ctx) -> Grant:
    """The asker's grant: catalog entries; from the terminal, any path too."""
    g = catalog_grant(ctx.services.catalog, Areas.of(ctx.config))
    return Grant(g.roots, not ctx.actor.remote, g.forbidden, g.shareable)


def named(ctx, values) -> tuple[str, ...]:
    """``--input`` values -> paths: a catalog dataset or model name first; from the terminal,
    else a path on this machine (checked with the rest at submit, runners/inputs.py)."""
    out = []
    for value in values or ():
        try:
            out.append(catalog_inputs.entry_path(ctx.services.catalog, str(value)))
        except NotFound as exc:
            if ctx.actor.remote:
                raise PathRefused(f"{exc}: from Slack a job's inputs are catalog entries, "
                                  "named so, never a path on the tfdesk machine") from None
            if not ("/" in str(value) or Path(value).exists()):
                raise PathRefused(str(exc)) from None
            out.append(str(Path(value).expanduser().absolute()))
    return tuple(out)
