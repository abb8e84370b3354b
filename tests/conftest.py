"""Fixtures shared by several test modules."""
import pytest

from bot import commands

from knowledge_base.qa.answers import Answers
from knowledge_base.qa.semantic import Vectors
from knowledge_base.pipeline import SHIPPED_EXTRACT, load_shipped

commands.load()  # the command table, filled once as a process's edge (bot.cli.main) does


@pytest.fixture(scope="session")
def shipped_kb(tmp_path_factory):
    """The real KB, built once per test run from the shipped extract (read-only in tests)."""
    if not SHIPPED_EXTRACT.is_file():
        pytest.skip("no shipped extract")
    path = tmp_path_factory.mktemp("kb") / "kb.sqlite"
    load_shipped(path, indexes=[Vectors()])
    return Answers.open(path, "http://docs.test/")
