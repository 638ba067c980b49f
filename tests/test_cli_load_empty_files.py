"""``hdq load`` of a file holding nothing to load — no byte, or (JSON lines, CSV) only blank
lines, or a BEIR corpus of no document — is refused in the library's own words, naming the
file and what a file of its kind needs, alike for every format and every engine; nothing is
written. Before, each format failed in pyarrow's words (``Empty CSV file``, ``Empty JSON
file``, ``Parquet file size is 0 bytes``, ``CSV parse error: Empty CSV file or block``) and a
JSON lines file of blank lines loaded as a table of no column but the ``id`` added to it.
The reference for "nothing written" is the engine itself: a good file of the same name then
loads without ``--replace``, which refuses a table that exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from tests.parity.engines import store_location

ENGINES = ["local", "sqlite", "duckdb", "lancedb", "postgres"]
"""The engines ``hdq load`` is run on here (turbopuffer needs its service)."""

CONTENTS = {
    "no byte": b"",
    "blank lines": b"\n \n\r\n",
}

NEEDS = {
    "jsonl": "one JSON object a line",
    "json": "one JSON object a line",
    "ndjson": "one JSON object a line",
    "csv": "a header line naming the columns",
    "parquet": "a Parquet file's schema and footer",
}
"""What the refusal says each kind of file needs."""

GOOD = {
    "jsonl": b'{"id": 1, "body": "red fox"}\n',
    "json": b'{"id": 1, "body": "red fox"}\n',
    "ndjson": b'{"id": 1, "body": "red fox"}\n',
    "csv": b"id,body\n1,red fox\n",
}


def _database(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "local":
        return str(tmp_path / "db")
    return store_location(engine, tmp_path, request)


def _load(source: Path, engine: str, database: str, *more: str) -> object:
    arguments = ["load", str(source), "--engine", engine, "--database", database]
    return CliRunner().invoke(main, [*arguments, "--embedder", "hashing", *more])


def _good_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1], "body": ["red fox"]}), path)


CASES = [
    (suffix, content)
    for suffix in NEEDS
    for content in CONTENTS
    if suffix != "parquet" or content == "no byte"  # Parquet is no text: no blank line
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("suffix", "content"), CASES)
def test_an_empty_file_is_refused_naming_it_and_nothing_is_written(
    engine: str, suffix: str, content: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = f"empty_{suffix}_{content.replace(' ', '_')}"
    source = tmp_path / f"{table}.{suffix}"
    source.write_bytes(CONTENTS[content])
    database = _database(engine, tmp_path, request)
    refused = _load(source, engine, database)
    assert refused.exit_code == EXIT_INVALID_PLAN, refused.output
    what = "is empty" if content == "no byte" else "holds only blank lines"
    assert f"{source}: the file {what}, so there is nothing to load" in refused.stderr
    assert NEEDS[suffix] in refused.stderr
    assert "Traceback" not in refused.output and "Empty" not in refused.output
    # nothing was written: a good file of the same name loads without --replace
    if suffix == "parquet":
        _good_parquet(source)
    else:
        source.write_bytes(GOOD[suffix])
    loaded = _load(source, engine, database)
    assert loaded.exit_code == EXIT_OK, loaded.output


@pytest.mark.parametrize("engine", ENGINES)
def test_a_beir_corpus_of_no_document_is_refused_naming_it(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    directory = tmp_path / "beir"
    directory.mkdir()
    corpus = directory / "corpus.jsonl"
    corpus.write_text("\n")
    database = _database(engine, tmp_path, request)
    refused = _load(directory, engine, database, "--format", "json")
    assert refused.exit_code == EXIT_INVALID_PLAN, refused.output
    assert f"{corpus}: the file holds only blank lines" in refused.stderr
    corpus.write_text(json.dumps({"_id": "d1", "title": "t", "text": "red fox"}) + "\n")
    loaded = _load(directory, engine, database, "--format", "json")
    assert loaded.exit_code == EXIT_OK, loaded.output
    assert [table["rows"] for table in json.loads(loaded.stdout)["tables"]] == [1]
