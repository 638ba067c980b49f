"""The table the every-door value tests share (test_binary_values_every_door.py,
test_non_finite_json_every_door.py): a module's ``ROWS`` loaded as table ``docs`` (key
``id``, text column ``body``) in a local database directory of its own, an engine opened on
it per test, each door's rows by key, and ``hdq search`` over the directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.engines.local import LocalEngine


@pytest.fixture(scope="module")
def door_database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database directory holding the test module's ``ROWS`` (a mapping of column to
    values, with ``id`` and ``body``) as table ``docs``."""
    directory = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with LocalEngine(directory) as engine:
        engine.load_table("docs", pa.table(request.module.ROWS), text_columns=["body"])
    return directory


@pytest.fixture
def door_engine(door_database: Path) -> Iterator[LocalEngine]:
    """A local engine opened on :func:`door_database`, closed after the test."""
    engine = LocalEngine(door_database)
    yield engine
    engine.close()


def rows_by_key(rows: list[dict[str, Any]], column: str) -> dict[int, Any]:
    """``column`` of each of a door's ``rows``, by the row's ``id``."""
    return {row["id"]: row[column] for row in rows}


def hdq_search(database: Path, columns: str, output: str) -> Result:
    """``hdq search red`` over table ``docs`` of ``database``, showing ``columns``
    (comma-separated) in ``output`` (``json`` or ``table``); checked to exit 0."""
    arguments = ["search", "red", "--table", "docs", "--database", str(database)]
    found = CliRunner().invoke(main, [*arguments, "--columns", columns, "--format", output])
    assert found.exit_code == 0, found.output
    return found
