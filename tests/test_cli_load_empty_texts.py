"""``hdq load`` of a text column whose every value is empty or NULL loads on every engine, as
on the local engine: each row's vector is NULL (no such text is embedded:
:func:`~hotdata_retrieval.embed.is_embeddable`) and the column keeps the embedder's length,
so a nearest-neighbour search of it runs and finds nothing. Before, the store load received
a variable-length list column of NULLs only, whose length DuckDB, PostgreSQL and LanceDB
refused as unknown ("holds no vector") where the local engine and SQLite loaded it; and
LanceDB refused any NULL vector of 10 floats or more ("variable length vectors"), so a file
with one empty text failed there. The reference is the file itself and the hashing
embedder: the rows read back with the texts written, NULL vectors where a text is empty, and
the embedder's own vector of each other text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder, is_embeddable
from tests.parity.engines import open_engine, store_location

ENGINES = ["local", "sqlite", "duckdb", "lancedb", "postgres"]
"""The engines ``hdq load`` is run on here (turbopuffer needs its service)."""

FILES = {
    "all empty": ["", None, "   "],
    "one text": ["red fox", "", None],
}
"""Each file's ``body`` values (row ``id`` 1, 2, 3)."""


def _database(engine: str, directory: Path, request: pytest.FixtureRequest) -> str:
    """Where :func:`~tests.parity.engines.open_engine` opens ``engine`` under ``directory``."""
    if engine == "local":
        return str(directory / "local")
    return store_location(engine, directory, request)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("file", list(FILES))
def test_a_text_column_of_empty_texts_loads_alike_on_every_engine(
    engine: str, file: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    bodies = FILES[file]
    table = f"texts_{file.replace(' ', '_')}"
    source = tmp_path / f"{table}.jsonl"
    rows = [{"id": row, "body": body, "tag": "x"} for row, body in enumerate(bodies, start=1)]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    database = _database(engine, tmp_path, request)
    common = ["--engine", engine, "--database", database, "--embedder", "hashing"]
    loaded = CliRunner().invoke(main, ["load", str(source), *common, "--text-column", "body"])
    assert loaded.exit_code == EXIT_OK, loaded.output
    embedder = HashingEmbedder()
    opened: Any = open_engine(engine, tmp_path, request)
    try:
        read = opened.read_table(table, ["id", "body", "body_embedding"]).sort_by("id")
    finally:
        opened.close()
    assert read.column("body").to_pylist() == bodies
    for body, vector in zip(bodies, read.column("body_embedding").to_pylist()):
        if not is_embeddable(body):
            assert vector is None
        else:
            expected = np.asarray(embedder.embed_query(body), dtype=np.float32)
            assert np.array_equal(np.asarray(vector, dtype=np.float32), expected)
    found = CliRunner().invoke(
        main,
        ["search", "red fox", "--table", table, *common, "--mode", "nearest", "--format", "json"],
    )
    assert found.exit_code == EXIT_OK, found.output
    keys = [hit["key"] for hit in json.loads(found.stdout)["hits"]]
    assert keys == [row for row, body in enumerate(bodies, start=1) if is_embeddable(body)]
