"""What ``hdq load`` chooses and says: the longest text column by default (and how to choose
another), no silent replacement of a table (``--replace``), CSV keys kept as written, and
``hdq search`` saying what each mode needs when a table has no index for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.engines.local.loading import read_source

TITLES = ["Crash", "Login", "Sync", None]
BODIES = [
    "The desktop app crashes on start with error E4012 after the upgrade.",
    "I cannot sign in since the 4.2.1 upgrade; the page just reloads.",
    "Files stopped syncing between my laptop and my phone yesterday.",
    "Charged twice this month for one subscription.",
]


def invoke(*arguments: str) -> Result:
    return CliRunner().invoke(main, list(arguments))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def mean_characters(values: list[str | None]) -> float:
    return sum(len(value or "") for value in values) / len(values)


@pytest.mark.parametrize("body_first", [True, False])
def test_the_longest_text_column_is_indexed_whatever_its_position(
    tmp_path: Path, body_first: bool
) -> None:
    rows = [
        ({"id": i, "body": b, "title": t} if body_first else {"id": i, "title": t, "body": b})
        for i, (t, b) in enumerate(zip(TITLES, BODIES), start=1)
    ]
    source = write_jsonl(tmp_path / "tickets.jsonl", rows)
    result = invoke(
        "load", str(source), "--database", str(tmp_path / "db"), "--embedder", "hashing",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    (table,) = document["tables"]
    assert table["bm25_columns"] == ["body"]
    assert [vector["source_column"] for vector in table["vector_columns"]] == ["body"]
    chosen = document["default_text_column"]
    assert chosen["columns"] == ["body"]
    assert chosen["mean_characters"]["body"] == pytest.approx(mean_characters(BODIES))
    assert chosen["mean_characters"]["title"] == pytest.approx(mean_characters(TITLES))
    note = next(line for line in result.stderr.splitlines() if "longest" in line)
    assert "'body'" in note and "'title'" in note and "--text-column" in note


def test_a_mostly_empty_column_does_not_win_on_a_few_long_values(tmp_path: Path) -> None:
    rows = [{"id": 1, "body": "short text here", "note": "x" * 200}] + [
        {"id": i, "body": "short text here", "note": None} for i in range(2, 30)
    ]
    source = read_source(write_jsonl(tmp_path / "notes.jsonl", rows))
    assert source.text_columns == ("body",)
    assert source.text_lengths == {"body": 15.0, "note": pytest.approx(200 / 29)}


def test_a_tie_keeps_the_first_column(tmp_path: Path) -> None:
    rows = [{"id": 1, "a": "same", "b": "four"}]
    assert read_source(write_jsonl(tmp_path / "t.jsonl", rows)).text_columns == ("a",)


def test_text_column_chooses_and_silences_the_note(tmp_path: Path) -> None:
    rows = [{"id": i, "title": t, "body": b} for i, (t, b) in enumerate(zip(TITLES, BODIES), 1)]
    source = write_jsonl(tmp_path / "tickets.jsonl", rows)
    result = invoke(
        "load", str(source), "--database", str(tmp_path / "db"), "--no-embed",
        "--text-column", "title", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    assert document["tables"][0]["bm25_columns"] == ["title"]
    assert document["default_text_column"] is None
    assert "longest" not in result.stderr


def test_loading_over_a_table_needs_replace(tmp_path: Path) -> None:
    database = str(tmp_path / "db")
    first = write_jsonl(tmp_path / "notes.jsonl", [{"id": 1, "body": "red fox"}])
    assert invoke("load", str(first), "--database", database, "--no-embed").exit_code == EXIT_OK
    (tmp_path / "other").mkdir()
    second = write_jsonl(tmp_path / "other" / "notes.jsonl", [{"id": 2, "body": "red owl"}])
    refused = invoke("load", str(second), "--database", database, "--no-embed")
    assert refused.exit_code == EXIT_INVALID_PLAN
    (line,) = refused.stderr.splitlines()
    assert line == (
        f"hdq load: error: table 'default.public.notes' already exists in {tmp_path / 'db'}; "
        "pass --replace to replace it, or --table NAME to load the file as another table"
    )

    def keys() -> list[Any]:
        found = invoke(
            "search", "red", "--table", "notes", "--database", database, "--format", "json"
        )
        return [hit["key"] for hit in json.loads(found.stdout)["hits"]]

    assert keys() == [1]  # the table is as it was
    replaced = invoke(
        "load", str(second), "--database", database, "--no-embed", "--replace", "--format",
        "json",
    )  # fmt: skip
    assert replaced.exit_code == EXIT_OK, replaced.stderr
    assert json.loads(replaced.stdout)["replaced"] == ["default.public.notes"]
    assert keys() == [2]
    other = invoke("load", str(second), "--database", database, "--no-embed", "--table", "n2")
    assert other.exit_code == EXIT_OK, other.stderr


def test_a_beir_directory_over_its_tables_names_them_all(tmp_path: Path) -> None:
    directory = tmp_path / "beir"
    directory.mkdir()
    write_jsonl(directory / "corpus.jsonl", [{"_id": "d1", "title": "t", "text": "red fox"}])
    write_jsonl(directory / "queries.jsonl", [{"_id": "q1", "text": "fox"}])
    database = str(tmp_path / "db")
    assert invoke("load", str(directory), "--database", database, "--no-embed").exit_code == 0
    refused = invoke("load", str(directory), "--database", database, "--no-embed")
    assert refused.exit_code == EXIT_INVALID_PLAN
    assert "tables 'default.public.corpus', 'default.public.queries' already exist" in (
        refused.stderr
    )
    assert "--table" not in refused.stderr


def test_table_with_a_beir_directory_is_refused_not_ignored(tmp_path: Path) -> None:
    directory = tmp_path / "beir"
    directory.mkdir()
    write_jsonl(directory / "corpus.jsonl", [{"_id": "d1", "title": "t", "text": "red fox"}])
    database = tmp_path / "db"
    refused = invoke(
        "load", str(directory), "--database", str(database), "--no-embed", "--table", "docs"
    )
    assert refused.exit_code == EXIT_USAGE
    assert refused.stderr.splitlines()[0] == (
        "hdq load: error: Invalid value for '--table': 'docs' names the table of a single "
        "file; a BEIR directory loads the tables corpus, queries and qrels"
    )
    assert not database.exists()


def test_an_empty_table_name_is_refused_not_replaced_by_the_stem(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "tickets.jsonl", [{"id": 1, "body": "red fox"}])
    database = tmp_path / "db"
    refused = invoke("load", str(source), "--database", str(database), "--no-embed", "--table", "")
    assert refused.exit_code == EXIT_USAGE
    assert "Invalid value for '--table': must not be empty" in refused.stderr.splitlines()[0]
    assert not database.exists()


@pytest.mark.parametrize(
    ("header", "rows", "options", "expected"),
    [
        ("id,body", ["001,red fox", "010,red owl", "1e3,red cat"], [], ["001", "010", "1e3"]),
        ("ID,body", ["007,red fox"], [], ["007"]),
        ("doc_id,body", ["0042,red fox"], ["--key-column", "doc_id"], ["0042"]),
    ],
)
def test_csv_keys_stay_as_written(
    tmp_path: Path, header: str, rows: list[str], options: list[str], expected: list[str]
) -> None:
    source = tmp_path / "docs.csv"
    source.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    database = str(tmp_path / "db")
    loaded = invoke("load", str(source), "--database", database, "--no-embed", *options)
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    found = invoke(
        "search", "red", "--table", "docs", "--database", database, "--format", "json", "-k", "5"
    )
    assert sorted(hit["key"] for hit in json.loads(found.stdout)["hits"]) == sorted(expected)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("unindexed")
    path = str(directory / "db")
    numbers = directory / "numbers.csv"
    numbers.write_text("id,score\n1,5\n2,7\n", encoding="utf-8")
    texts = write_jsonl(directory / "texts.jsonl", [{"id": 1, "body": "red fox"}])
    for source in (numbers, texts):
        loaded = invoke("load", str(source), "--database", path, "--no-embed")
        assert loaded.exit_code == EXIT_OK, loaded.stderr
    return path


@pytest.mark.parametrize(
    ("table", "mode", "pieces"),
    [
        ("numbers", "auto", ["neither a BM25 index nor a vector column", "text search needs",
                             "--text-column", "semantic search needs", "--embed-column"]),
        ("numbers", "text", ["text search needs a BM25 index", "--text-column COLUMN"]),
        ("numbers", "nearest", ["nearest-neighbour search needs a vector column"]),
        ("texts", "semantic", ["no vector column (it has a BM25 index on body)",
                               "semantic search needs a vector column", "--no-embed"]),
        ("texts", "hybrid", ["hybrid search fuses text and semantic search",
                             "semantic search needs"]),
    ],
)  # fmt: skip
def test_search_says_what_each_mode_needs(
    database: str, table: str, mode: str, pieces: list[str]
) -> None:
    result = invoke("search", "fox", "--table", table, "--database", database, "--mode", mode)
    assert result.exit_code == EXIT_INVALID_PLAN
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"hdq search: error: table 'default.public.{table}' has ")
    for piece in pieces:
        assert piece in line
    if mode == "hybrid":
        assert "text search needs" not in line  # the table has its BM25 index


def test_a_file_without_text_says_so(tmp_path: Path) -> None:
    source = tmp_path / "numbers.csv"
    source.write_text("id,score\n1,5\n", encoding="utf-8")
    result = invoke("load", str(source), "--database", str(tmp_path / "db"), "--no-embed")
    assert result.exit_code == EXIT_OK
    assert "has no text column" in result.stderr


def _empty_column_files(directory: Path) -> list[Path]:
    """The same two rows with a column ``note`` that holds no value, in each file type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    csv = directory / "empty.csv"
    csv.write_text("id,body,note\n1,red fox,\n2,blue whale,\n", encoding="utf-8")
    jsonl = write_jsonl(
        directory / "empty.jsonl",
        [{"id": 1, "body": "red fox", "note": None}, {"id": 2, "body": "blue whale", "note": None}],
    )
    parquet = directory / "empty.parquet"
    pq.write_table(
        pa.table({"id": [1, 2], "body": ["red fox", "blue whale"], "note": pa.nulls(2)}), parquet
    )
    return [csv, jsonl, parquet]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_column_without_a_value_loads_as_text(tmp_path: Path, suffix: str) -> None:
    """A file's column with no value at all, which Arrow types ``null`` (and no engine
    stores), is read as a text column of NULLs, so the file loads and the column filters."""
    (source,) = [path for path in _empty_column_files(tmp_path) if path.suffix == suffix]
    read = read_source(source).tables[source.stem]
    assert read.schema.field("note").type == "string"
    assert read.column("note").null_count == read.num_rows == 2
    database = str(tmp_path / "db")
    loaded = invoke("load", str(source), "--database", database, "--no-embed")
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    found = invoke(
        "search", "fox", "--table", "empty", "--database", database, "--format", "json",
        "--filter", "note IS NULL",
    )  # fmt: skip
    assert found.exit_code == EXIT_OK, found.stderr
    assert [hit["columns"]["body"] for hit in json.loads(found.stdout)["hits"]] == ["red fox"]
