"""The catalog: datasets, models, environments, components, projects and pipelines.

Everything lives in the state SQLite database (``Config.state_path``), in tables prefixed
``catalog_``. Open it with :func:`catalog.store.open_db`; each module holds one kind of entry.
"""
from catalog.errors import CatalogError, Duplicate, HasDependants, InvalidInput, NotFound
from catalog.store import open_db, transaction
from catalog.outputs import register_job_outputs

__all__ = ["CatalogError", "Duplicate", "HasDependants", "InvalidInput", "NotFound",
           "open_db", "transaction", "register_job_outputs"]
