"""``hdq explain --prelude`` prints SQL that runs as it is in a plain DuckDB session: the
fts extension's ``LOAD`` first, then the statement, which finds what ``hdq search`` finds."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from click.testing import CliRunner

from hotdata_retrieval.cli import main

EXPLAIN = ["explain", "--text-column", "body", "--engine"]
ROWS = [
    {"id": 1, "body": "disk full on the build server"},
    {"id": 2, "body": "the disk was replaced"},
    {"id": 3, "body": "login page is slow"},
    {"id": 4, "body": "full text search returns nothing"},
]


def test_the_explained_sql_runs_in_a_plain_duckdb_session(tmp_path: Path) -> None:
    source = tmp_path / "tickets.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    database = str(tmp_path / "d.duckdb")
    runner = CliRunner()
    store = ["--engine", "duckdb", "--database", database]
    loaded = runner.invoke(main, ["load", str(source), *store, "--no-embed"])
    assert loaded.exit_code == 0, loaded.output
    searched = runner.invoke(
        main, ["search", "disk full", "--table", "tickets", *store, "--format", "json"]
    )
    assert searched.exit_code == 0, searched.output
    expected = [hit["key"] for hit in json.loads(searched.stdout)["hits"]]
    assert expected
    explained = runner.invoke(
        main,
        [
            "explain",
            "--engine",
            "duckdb",
            "--table",
            "tickets",
            "--text-column",
            "body",
            "--query",
            "disk full",
            "--prelude",
            "-q",
        ],
    )
    assert explained.exit_code == 0, explained.output
    script = explained.stdout
    assert script.startswith("LOAD '") and script.rstrip().endswith(";")
    with duckdb.connect(database) as plain:  # a session that loaded no extension
        rows = plain.execute(script).fetchall()
    assert [row[0] for row in rows] == expected


def test_without_prelude_a_note_says_how_to_get_it() -> None:
    explained = CliRunner().invoke(
        main,
        [
            "explain",
            "--engine",
            "duckdb",
            "--table",
            "t",
            "--text-column",
            "body",
            "--query",
            "disk",
        ],
    )
    assert explained.exit_code == 0, explained.output
    assert "LOAD" not in explained.stdout
    assert "--prelude prints the LOAD statement" in explained.stderr


def test_other_dialects_need_no_prelude() -> None:
    explained = CliRunner().invoke(
        main,
        [
            "explain",
            "--engine",
            "sqlite",
            "--table",
            "t",
            "--text-column",
            "body",
            "--query",
            "disk",
            "--prelude",
            "--format",
            "json",
            "-q",
        ],
    )
    assert explained.exit_code == 0, explained.output
    assert json.loads(explained.stdout)["prelude"] == []
