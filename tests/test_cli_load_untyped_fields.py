"""``hdq load`` of a JSON lines field that holds no typed value on any line reads it as the
same field would read with text in it, on every engine: ``null`` on every line as text
(before), ``[]`` on every line (``list<null>`` to Arrow) as a list of strings, ``{"a": null}``
as an object of text. A field that is ``{}`` on every line (an object of no key, ``struct<>``)
is a column of no field no engine stores: an error naming the file and the column, on every
engine. Before, the local engine and LanceDB loaded ``[]`` as ``list<null>`` where SQLite and
DuckDB refused it, and ``{}`` failed on the local engine in Parquet's words ("Cannot write
struct type ... with no child field") where LanceDB loaded it.

The reference for each untyped file is its *typed twin*: the same file with one value written
in the field (``["a"]``, ``{"a": "x"}``), which each engine loads or refuses by its own rule
(SQLite stores no list, the SQL stores no struct). The untyped file loads exactly where its
twin does, its column of the twin's type, and refused, it is refused in the words the twin's
is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from tests.parity.engines import open_engine, store_location

ENGINES = ["local", "sqlite", "duckdb", "lancedb", "postgres"]
"""The engines ``hdq load`` is run on here (turbopuffer needs its service)."""

FIELDS: dict[str, tuple[Any, Any]] = {
    "empty lists": ([], ["a"]),
    "lists of null": ([None], ["a"]),
    "lists of empty lists": ([[]], [["a"]]),
    "objects of null": ({"a": None}, {"a": "x"}),
    "objects of empty lists": ({"a": []}, {"a": ["x"]}),
}
"""Each case's field ``tags`` on every line of the untyped file, and on the first line of its
typed twin."""


def _database(engine: str, directory: Path, request: pytest.FixtureRequest) -> str:
    if engine == "local":
        return str(directory / "local")
    return store_location(engine, directory, request)


def _write(path: Path, values: list[Any]) -> Path:
    rows = [{"id": row, "body": f"red fox {row}", "tags": tags} for row, tags in enumerate(values)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _load(source: Path, engine: str, database: str) -> Result:
    arguments = ["load", str(source), "--engine", engine, "--database", database]
    return CliRunner().invoke(
        main, [*arguments, "--embedder", "hashing", "--no-embed", "--replace"]
    )


def _read(engine: str, directory: Path, request: pytest.FixtureRequest, table: str) -> Any:
    opened = open_engine(engine, directory, request)
    try:
        return opened.read_table(table, ["id", "tags"]).sort_by("id")
    finally:
        opened.close()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(FIELDS))
def test_a_field_of_no_typed_value_loads_as_its_typed_twin_does(
    engine: str, case: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    untyped, typed = FIELDS[case]
    database = _database(engine, tmp_path, request)
    twin = _load(_write(tmp_path / "twin.jsonl", [typed, untyped, untyped]), engine, database)
    loaded = _load(_write(tmp_path / "untyped.jsonl", [untyped] * 3), engine, database)
    if twin.exit_code != EXIT_OK:  # the engine stores no such column: refused alike
        assert loaded.exit_code == twin.exit_code, loaded.output
        assert loaded.stderr.splitlines()[-1] == twin.stderr.splitlines()[-1]
        return
    assert loaded.exit_code == EXIT_OK, loaded.output
    reference = _read(engine, tmp_path, request, "twin")
    read = _read(engine, tmp_path, request, "untyped")
    assert read.schema.field("tags").type == reference.schema.field("tags").type
    # the twin's rows 1 and 2 hold the untyped value, read as the twin's type
    assert read.column("tags").to_pylist() == [reference.column("tags")[1].as_py()] * 3


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [{}, {"a": {}}, [{}]])
def test_a_field_of_objects_of_no_key_is_refused_naming_it(
    engine: str, value: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = _write(tmp_path / "objects.jsonl", [value, value])
    refused = _load(source, engine, _database(engine, tmp_path, request))
    assert refused.exit_code == EXIT_INVALID_PLAN, refused.output
    assert f"{source}: column 'tags'" in refused.stderr
    assert "only objects of no key ({}) or nulls" in refused.stderr
    assert "no engine stores" in refused.stderr
    assert "Parquet" not in refused.output and "Traceback" not in refused.output
