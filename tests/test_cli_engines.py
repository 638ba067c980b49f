"""``hdq load``, ``hdq search`` and ``hdq explain`` with ``--engine``: the same file loaded
into every store, the same query answered by each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_USAGE

ROWS = [
    {"id": 1, "body": "the upgrade failed with error E1234", "lang": "en"},
    {"id": 2, "body": "login works after the upgrade", "lang": "en"},
    {"id": 3, "body": "billing page is slow", "lang": "fr"},
    {"id": 4, "body": "error on the billing page after login", "lang": "en"},
]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "tickets.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


def database_for(engine: str, tmp_path: Path, postgres_url: str | None) -> str:
    if engine == "postgres":
        assert postgres_url is not None
        return postgres_url
    return str(tmp_path / {"sqlite": "s.db", "duckdb": "d.duckdb", "lancedb": "lance"}[engine])


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "lancedb", "postgres"])
@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_load_then_search_on_each_store(
    engine: str, mode: str, source: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if engine == "postgres" else None
    database = database_for(engine, tmp_path, url)
    runner = CliRunner()
    common = ["--engine", engine, "--database", database]
    loaded = runner.invoke(
        main,
        ["load", str(source), *common, "--embedder", "hashing", "--replace", "--format", "json"],
    )
    assert loaded.exit_code == 0, loaded.output
    (table,) = json.loads(loaded.stdout)["tables"]
    assert table["bm25_columns"] == ["body"] and table["vector_columns"] == ["body_embedding"]
    found = runner.invoke(
        main,
        [
            "search",
            "error after the upgrade",
            "--table",
            "tickets",
            *common,
            "--mode",
            mode,
            "--filter",
            "lang = 'en'",
            "--format",
            "json",
        ],
    )
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    keys = [hit["key"] for hit in document["hits"]]
    assert keys and set(keys) <= {1, 2, 4}  # the filter holds on every engine
    assert (
        document["branches"]
        == {
            "text": ["text"],
            "nearest": ["nearest"],
            "hybrid": ["text", "nearest"],
        }[mode]
    )


def test_a_store_needs_a_database() -> None:
    result = CliRunner().invoke(main, ["search", "x", "--table", "t", "--engine", "sqlite"])
    assert result.exit_code == EXIT_USAGE  # a missing option (docs/cli.md, "Exit codes")
    assert result.stderr.startswith(
        "hdq search: error: --engine sqlite needs --database (a database file)"
    )


@pytest.mark.parametrize(
    ("engine", "name"),
    [("sqlite", "typo.sqlite"), ("duckdb", "typo.duckdb"), ("lancedb", "typo-lance")],
)
def test_search_on_a_missing_database_names_it_and_creates_nothing(
    engine: str, name: str, tmp_path: Path
) -> None:
    missing = tmp_path / name
    result = CliRunner().invoke(
        main, ["search", "x", "--table", "t", "--engine", engine, "--database", str(missing)]
    )
    # A missing database is a usage error on every engine, the local one's exit code.
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith(f"hdq search: error: no {engine} database at {missing}")
    assert not missing.exists()
    local = CliRunner().invoke(main, ["search", "x", "--table", "t", "--database", str(missing)])
    assert local.exit_code == EXIT_USAGE
    assert local.stderr.startswith(f"hdq search: error: no database at {missing}")


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_store_file_searched_without_its_engine_names_the_engine(
    engine: str, source: Path, tmp_path: Path
) -> None:
    """``--database`` naming a store's file, without ``--engine``: the local engine finds no
    database there, and says which ``--engine`` reads the file."""
    path = tmp_path / f"tickets.{engine}"
    loaded = CliRunner().invoke(
        main,
        ["load", str(source), "--engine", engine, "--database", str(path), "--no-embed", "-q"],
    )
    assert loaded.exit_code == 0, loaded.stderr
    result = CliRunner().invoke(
        main, ["search", "x", "--table", "tickets", "--database", str(path)]
    )
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == (
        f"hdq search: error: no database at {path}: it is a {engine} database file; give "
        f"--engine {engine} to search it"
    )
    # the file is recognised by its header, not its name
    renamed = path.rename(tmp_path / "tickets.data")
    result = CliRunner().invoke(
        main, ["search", "x", "--table", "tickets", "--database", str(renamed)]
    )
    assert f"it is a {engine} database file; give --engine {engine}" in result.stderr
    # a missing file is named by its suffix
    missing = tmp_path / f"typo.{engine}"
    result = CliRunner().invoke(
        main, ["search", "x", "--table", "tickets", "--database", str(missing)]
    )
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == (
        f"hdq search: error: no database at {missing}; --engine {engine} reads a {engine} "
        "database file; create a local database with 'hdq load' or 'hdq demo'"
    )


def test_a_loaded_table_is_not_replaced_silently(source: Path, tmp_path: Path) -> None:
    arguments = ["load", str(source), "--engine", "sqlite", "--database", str(tmp_path / "s.db")]
    runner = CliRunner()
    assert runner.invoke(main, [*arguments, "--no-embed"]).exit_code == 0
    again = runner.invoke(main, [*arguments, "--no-embed"])
    assert again.exit_code == 1 and "pass --replace" in again.stderr


@pytest.mark.parametrize(
    ("engine", "marker"),
    [
        ("local", "bm25_search('default.public.docs'"),
        ("sqlite", '"main"."docs__body__fts_terms" AS "postings"'),
        ("duckdb", '"fts_hdq_text_t4_main_4_docs_body"."terms"'),
        ("postgres", "OPERATOR(public.<=>)"),
    ],
)
def test_explain_compiles_for_the_engine(engine: str, marker: str) -> None:
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "--engine",
            engine,
            "--mode",
            "hybrid",
            "--table",
            "docs",
            "--text-column",
            "body",
            "--vector-column",
            "embedding",
            "--query",
            "error",
            "--vector",
            "[0.5, -1.0]",
            "--full-vectors",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert marker in result.stdout


def test_explain_refuses_lancedb_and_a_contradicting_dialect() -> None:
    runner = CliRunner()
    base = ["explain", "--table", "docs", "--text-column", "body", "--query", "x"]
    lance = runner.invoke(main, [*base, "--engine", "lancedb"])
    assert lance.exit_code == 2 and "runs no SQL" in lance.stderr
    both = runner.invoke(main, [*base, "--engine", "sqlite", "--dialect", "duckdb"])
    assert both.exit_code == 2 and "compiles for the sqlite dialect" in both.stderr


def test_search_reports_vectors_left_out(source: Path, tmp_path: Path) -> None:
    from hotdata_retrieval.engines.sqlite import SqliteEngine

    database = str(tmp_path / "s.db")
    runner = CliRunner()
    common = ["--engine", "sqlite", "--database", database]
    loaded = runner.invoke(main, ["load", str(source), *common, "--embedder", "hashing"])
    assert loaded.exit_code == 0, loaded.output
    with SqliteEngine(database) as engine:
        engine._execute("UPDATE tickets SET body_embedding = '[1.0, ' WHERE id = 3")
    arguments = ["search", "billing", "--table", "tickets", *common, "--mode", "nearest"]
    found = runner.invoke(main, [*arguments, "--format", "json"])
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    assert 3 not in [hit["key"] for hit in document["hits"]]
    assert document["vector_scans"] == [
        {
            "branch": "nearest",
            "column": "body_embedding",
            "scanned": 4,
            "without_vector": 0,
            "skipped": 1,
        }
    ]
    shown = runner.invoke(main, arguments)
    assert "note: nearest: 1 of 4 rows have a vector in 'body_embedding'" in shown.stderr


def test_a_postgres_password_is_never_echoed(source: Path, postgres_url: str) -> None:
    """``hdq load --format json`` reports the database, and a taken table and a connection
    error name it: with the URL's password replaced by ``***`` (the throwaway server trusts
    loopback, so the password is accepted and ignored)."""
    scheme, _, rest = postgres_url.partition("://")
    user, _, host = rest.partition("@")
    with_password = f"{scheme}://{user}:hunter2@{host}"
    runner = CliRunner()
    loaded = runner.invoke(
        main,
        [
            "load",
            str(source),
            "--engine",
            "postgres",
            "--database",
            with_password,
            "--embedder",
            "hashing",
            "--replace",
            "--format",
            "json",
        ],
    )
    assert loaded.exit_code == 0, loaded.output
    assert "hunter2" not in loaded.stdout + loaded.stderr
    assert json.loads(loaded.stdout)["database"] == f"{scheme}://{user}:***@{host}"
    # loading it again without --replace: the table is taken, and the message names where
    taken = runner.invoke(
        main,
        ["load", str(source), "--engine", "postgres", "--database", with_password, "--no-embed"],
    )
    assert taken.exit_code != 0
    assert "already exists in" in taken.stderr
    assert "hunter2" not in taken.stdout + taken.stderr
    assert f"{scheme}://{user}:***@{host}" in taken.stderr
    refused = f"{scheme}://{user}:hunter2@127.0.0.1:1/postgres"
    failed = runner.invoke(
        main, ["search", "error", "--engine", "postgres", "--database", refused, "--table", "t"]
    )
    assert failed.exit_code != 0
    assert "hunter2" not in failed.stdout + failed.stderr
    assert ":***@127.0.0.1:1" in failed.stderr


def test_an_embedder_that_contradicts_the_recorded_model_is_refused(
    source: Path, tmp_path: Path
) -> None:
    """The table was embedded by the hashing embedder's 64-dimension variant (recorded at
    load); ``--embedder hashing`` embeds with 256 dimensions: an error naming both models, where
    leaving it out embeds with the recorded one."""
    import pyarrow as pa

    from hotdata_retrieval.embed import HashingEmbedder
    from hotdata_retrieval.engines.sqlite import SqliteEngine

    embedder = HashingEmbedder(dimensions=64)
    bodies = [row["body"] for row in ROWS]
    data = pa.table(
        {
            "id": [row["id"] for row in ROWS],
            "body": bodies,
            "body_embedding": pa.array(embedder.embed_documents(bodies), pa.list_(pa.float32())),
        }
    )
    database = tmp_path / "s.db"
    with SqliteEngine(database) as engine:
        engine.load_table("tickets", data, text_columns=["body"], vector_model=embedder.name)
    common = ["search", "upgrade", "--table", "tickets", "--engine", "sqlite"]
    common += ["--database", str(database), "--mode", "nearest", "--format", "json"]
    refused = CliRunner().invoke(main, [*common, "--embedder", "hashing"])
    assert refused.exit_code == 1
    assert (
        f"--embedder hashing embeds with {HashingEmbedder().name!r}, but the vectors of table "
        f"'default.public.tickets' were made by {embedder.name!r}" in refused.stderr
    )
    found = CliRunner().invoke(main, common)
    assert found.exit_code == 0, found.output
    assert len(json.loads(found.stdout)["hits"]) == len(ROWS)
