"""``hdq explain`` takes the query as ``hdq search`` does (``QUERY``, with ``--query`` kept as
its alias), and when the options leave out a column the mode needs, it reads the table's
indexes from ``--database`` and prints the statement ``hdq search`` runs for the same words
(docs/cli.md, ``hdq explain``)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.plan.document import plan_from_document
from hotdata_retrieval.plan.search import NearestNeighborSearch

QUERY = "the app crashes on start"
NOTES = [
    {"id": 1, "body": "The desktop app crashes on start with error E4012"},
    {"id": 2, "body": "Sync stopped working between my devices"},
    {"id": 3, "body": "I was charged twice this month"},
]


def hdq(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local database with table ``notes``: BM25 on ``body``, ``body`` embedded by the
    hashing embedder; the current directory is an empty one beside it."""
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps(note) + "\n" for note in NOTES), encoding="utf-8")
    directory = tmp_path / "db"
    loaded = hdq("load", str(source), "--database", str(directory), "--embedder", "hashing")
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return directory


def explained(*args: str) -> dict[str, Any]:
    result = hdq("explain", *args, "--format", "json")
    assert result.exit_code == EXIT_OK, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def searched_sql(database: Path, *args: str) -> str:
    result = hdq("search", *args, "--database", str(database), "--explain", "--format", "json")
    assert result.exit_code == EXIT_OK, result.stderr
    sql: str = json.loads(result.stdout)["sql"]
    return sql


def test_the_query_is_an_argument_and_query_its_alias(tmp_path: Path) -> None:
    columns = ["--table", "docs", "--text-column", "body"]
    as_argument = hdq("explain", QUERY, *columns)
    as_option = hdq("explain", "--query", QUERY, *columns)
    assert as_argument.exit_code == as_option.exit_code == EXIT_OK, as_argument.stderr
    assert as_argument.stdout == as_option.stdout
    assert f"bm25_search('default.public.docs', 'body', '{QUERY}', 10)" in as_argument.stdout


def test_the_query_given_twice_is_a_usage_error() -> None:
    result = hdq("explain", "one", "--query", "two", "--table", "docs", "--text-column", "body")
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == (
        "hdq explain: error: the query is given twice, as QUERY and as --query: give it once"
    )


def test_the_query_argument_cannot_join_a_plan_document(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"table": "docs", "branches": [{"kind": "text", "column": "body", "query_text": "x"}]}
        )
    )
    result = hdq("explain", "x", "--plan", str(plan))
    assert result.exit_code == EXIT_USAGE
    assert "--plan cannot be combined with QUERY" in result.stderr


@pytest.mark.parametrize("mode", ["auto", "text", "semantic", "nearest", "hybrid"])
def test_columns_left_out_are_read_from_the_table_as_search_reads_them(
    database: Path, mode: str
) -> None:
    """The statement is the one ``hdq search`` runs for the same words (the search runs its
    fused branches' ranks too, which ``--include-branch-scores`` asks explain for)."""
    search = [QUERY, "--table", "notes", "--limit", "2"]
    ran = searched_sql(database, *search, *([] if mode == "auto" else ["--mode", mode]))
    fused = mode in ("auto", "hybrid")
    document = explained(
        *search,
        "--database",
        str(database),
        *([] if mode == "auto" else ["--mode", mode]),
        *(["--include-branch-scores"] if fused else []),
    )
    assert document["sql"] == ran
    plan = plan_from_document(document["plan"])
    vectors = [b for b in plan.branches if isinstance(b, NearestNeighborSearch)]
    # semantic: the query embedded here by the table's model, as the tools' semantic search
    # plans it (so their cursors continue each other's), not by the engine
    assert [b.column for b in vectors] == ([] if mode == "text" else ["body_embedding"])
    for branch in vectors:  # the query embedded by the model that embedded the table
        expected = HashingEmbedder().embed_query(QUERY)
        assert list(branch.query_vector) == pytest.approx(list(expected), abs=1e-6)


def test_the_database_comes_from_its_environment_variable_too(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HDQ_DATABASE", str(database))
    document = explained(QUERY, "--table", "notes", "--mode", "text")
    assert "bm25_search('default.public.notes', 'body'" in document["sql"]


def test_a_vector_given_is_the_nearest_branchs_query(database: Path) -> None:
    vector = [0.0] * 255 + [1.0]
    document = explained(
        QUERY,
        "--table",
        "notes",
        "--mode",
        "hybrid",
        "--vector",
        json.dumps(vector),
        "--database",
        str(database),
    )
    plan = plan_from_document(document["plan"])
    (nearest,) = [b for b in plan.branches if isinstance(b, NearestNeighborSearch)]
    assert list(nearest.query_vector) == vector
    assert nearest.column == "body_embedding"


def test_given_columns_need_no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    result = hdq(
        "explain",
        QUERY,
        "--table",
        "notes",
        "--text-column",
        "body",
        "--vector-column",
        "e",
        "--vector",
        "[1, 0]",
    )
    assert result.exit_code == EXIT_OK, result.stderr
    assert "planned from the indexes" not in result.stderr


def test_a_column_left_out_without_a_database_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    result = hdq("explain", QUERY, "--table", "notes", "--mode", "hybrid")
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == (
        "hdq explain: error: --mode hybrid needs --text-column, or a database holding table "
        "'notes' to read it from (as hdq search does): there is no database at .hdq"
    )


def test_an_option_the_table_decides_is_refused_when_reading_it(database: Path) -> None:
    result = hdq(
        "explain", QUERY, "--table", "notes", "--mode", "nearest", "--metric", "l2",
        "--database", str(database),
    )  # fmt: skip
    assert result.exit_code == EXIT_USAGE
    assert "--metric does not apply when the table's columns are read from --database" in (
        result.stderr
    )


def test_a_table_without_the_index_is_a_bad_value(database: Path) -> None:
    result = hdq(
        "explain", QUERY, "--table", "notes", "--mode", "text", "--text-column", "body",
        "--vector-column", "body_embedding", "--database", str(database),
    )  # fmt: skip
    assert result.exit_code == EXIT_USAGE  # --vector-column does not apply to a text search
    missing = hdq("explain", QUERY, "--table", "nope", "--database", str(database))
    assert missing.exit_code == EXIT_INVALID_PLAN
    assert missing.stderr.startswith("hdq explain: error: ")
    assert "nope" in missing.stderr.splitlines()[0]


@pytest.mark.parametrize("verbosity", [[], ["-v"], ["-vv"]])
def test_both_streams_redirected_stay_sql_with_a_warning_logged(
    database: Path, tmp_path: Path, verbosity: list[str]
) -> None:
    """docs/cli.md: explain's notes go to standard error as SQL comments, "so redirecting
    both streams still gives valid SQL" (``> out.sql 2>&1``). A zero query vector makes the
    router answer the hybrid search by its text branch and log a warning: it is a comment
    too, as is every record ``-v`` shows."""
    zeros = json.dumps([0] * HashingEmbedder().dimensions)
    with (tmp_path / "out.sql").open("w+", encoding="utf-8") as out:
        process = subprocess.run(
            [sys.executable, "-m", "hotdata_retrieval", "explain", QUERY, "--table", "notes",
             "--database", str(database), "--vector", zeros, *verbosity],
            stdout=out, stderr=subprocess.STDOUT, text=True, check=False,
        )  # fmt: skip
        out.seek(0)
        written = out.read()
    assert process.returncode == EXIT_OK, written
    assert (
        "-- WARNING: hybrid search over 'default.public.notes' answered by its text " in (written)
        or "-- hotdata_retrieval.routing: WARNING: hybrid search" in written
    )
    statement = [line for line in written.splitlines() if not line.startswith("-- ")]
    assert statement[0] == "SELECT", written  # every line before the statement is a comment
    assert [tree.sql(comments=False) for tree in sqlglot.parse(written, read="postgres")] == [
        sqlglot.parse_one("\n".join(statement), read="postgres").sql(comments=False)
    ]


def _search_refusal(database: Path, plan_args: list[str]) -> str:
    """What the engine's own search says of the plan ``hdq explain`` builds from
    ``plan_args`` (without a database), the message ``hdq search`` would print."""
    from hotdata_retrieval.engines.local import LocalEngine

    document = explained(*plan_args)
    with LocalEngine(database) as engine, pytest.raises(HotdataRetrievalError) as refused:
        engine.search(plan_from_document(document["plan"]))
    return str(refused.value)


@pytest.mark.parametrize("vector", [[1, 2], [0, 0], [0.5] * 257])
def test_a_vector_of_another_length_is_refused_with_a_database(
    database: Path, vector: list[float]
) -> None:
    """With a database, ``--vector`` is checked against the table's vector column as the
    engine checks it before a search (not fused and printed: on SQLite such SQL quietly
    returns the text branch's rows). Also an all-zero vector, which the router would leave
    out of a hybrid plan."""
    dimensions = HashingEmbedder().dimensions
    # l2: a plan with an all-zero vector exists (cosine distance to it is undefined)
    given = ["--table", "notes", "--vector-column", "body_embedding", "--metric", "l2",
             "--vector", json.dumps(vector)]  # fmt: skip
    expected = _search_refusal(database, given)
    assert expected == (
        f"query vector has {len(vector)} dimensions; column 'body_embedding' holds {dimensions}"
    )
    for args in (
        [QUERY, "--table", "notes", "--vector", json.dumps(vector)],  # columns read
        [QUERY, "--table", "notes", "--mode", "nearest", "--vector", json.dumps(vector)],
        given,  # columns given, and the database to check them
    ):
        result = hdq("explain", *args, "--database", str(database))
        assert result.exit_code == EXIT_INVALID_PLAN, (args, result.stdout)
        assert result.stdout == ""
        assert result.stderr.splitlines() == [f"hdq explain: error: {expected}"]


def test_a_vector_of_another_length_is_refused_on_sqlite(tmp_path: Path) -> None:
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps(note) + "\n" for note in NOTES), encoding="utf-8")
    store = tmp_path / "notes.sqlite"
    loaded = hdq(
        "load", str(source), "--engine", "sqlite", "--database", str(store),
        "--embedder", "hashing", "-q",
    )  # fmt: skip
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    result = hdq(
        "explain", QUERY, "--table", "notes", "--engine", "sqlite", "--database", str(store),
        "--vector", "[1, 2]",
    )  # fmt: skip
    assert result.exit_code == EXIT_INVALID_PLAN, result.stdout
    assert result.stderr.splitlines() == [
        "hdq explain: error: query vector has 2 dimensions; column 'body_embedding' holds "
        f"{HashingEmbedder().dimensions}"
    ]
    fits = json.dumps([0.5] * HashingEmbedder().dimensions)
    result = hdq(
        "explain", QUERY, "--table", "notes", "--engine", "sqlite", "--database", str(store),
        "--vector", fits, "--format", "json",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    assert "nearest" in json.loads(result.stdout)["plan"]["branches"][1]["kind"]


def test_an_unknown_column_is_refused_with_a_database(database: Path) -> None:
    given = ["--table", "notes", "--text-column", "nosuch"]
    expected = _search_refusal(database, [QUERY, *given])
    assert "'nosuch'" in expected and "columns: id, body, body_embedding" in expected
    result = hdq("explain", QUERY, *given, "--database", str(database))
    assert result.exit_code == EXIT_INVALID_PLAN, result.stdout
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"hdq explain: error: {expected}"]
    # the column given and no database named: the SQL alone, as for any table elsewhere
    assert hdq("explain", QUERY, *given).exit_code == EXIT_OK
    # a column the table has: the SQL, checked
    checked = hdq("explain", QUERY, "--table", "notes", "--text-column", "body",
                  "--database", str(database))  # fmt: skip
    assert checked.exit_code == EXIT_OK, checked.stderr
    assert "bm25_search('default.public.notes', 'body'" in checked.stdout


def test_quiet_leaves_standard_error_to_errors(database: Path) -> None:
    """docs/cli.md, "Quiet and verbose": ``--quiet`` writes no notes, summaries or warnings;
    explain's own ``--quiet`` silences a logged warning too, and keeps an error."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    zeros = json.dumps([0] * HashingEmbedder().dimensions)
    args = [QUERY, "--table", "notes", "--database", str(database), "--vector", zeros]
    loud = hdq("explain", *args)
    assert loud.exit_code == EXIT_OK and "-- WARNING: hybrid search" in loud.stderr
    quiet = hdq("explain", *args, "--quiet")
    assert quiet.exit_code == EXIT_OK
    assert quiet.stderr == ""
    assert quiet.stdout == loud.stdout
    refused = hdq("explain", QUERY, "--table", "nope", "--database", str(database), "-q")
    assert refused.exit_code == EXIT_INVALID_PLAN
    assert refused.stderr.startswith("hdq explain: error: ")
    assert root.handlers == handlers  # the handler each run adds is removed
