"""``hdq load``, ``hdq search`` and ``hdq demo`` on the local engine."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.plan.search import DEFAULT_DEPTH


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    directory = tmp_path / "beir"
    (directory / "qrels").mkdir(parents=True)
    documents = [
        ("d1", "Crash on start", "The desktop app crashes on startup with error E4012."),
        ("d2", "Login", "I cannot sign in after the 4.2.1 upgrade."),
        ("d3", "Sync", "Files are not syncing between devices."),
        ("d4", "Billing", "I was charged twice this month."),
    ]
    (directory / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in documents)
    )
    (directory / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "app crash"}) + "\n")
    (directory / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return directory


def run(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(arguments), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_load_beir_then_search_every_mode(beir: Path, tmp_path: Path) -> None:
    database = str(tmp_path / "db")
    code, out, _ = run(
        "load", str(beir), "--database", database, "--embedder", "hashing", "--format", "json"
    )
    assert code == EXIT_OK
    tables = {item["table"]: item for item in json.loads(out)["tables"]}
    assert tables["default.public.corpus"]["rows"] == 4
    assert tables["default.public.corpus"]["bm25_columns"] == ["body"]
    assert tables["default.public.qrels"]["rows"] == 1
    for mode in ("auto", "text", "semantic", "nearest", "hybrid"):
        code, out, err = run(
            "search",
            "E4012 crash",
            "--table",
            "corpus",
            "--database",
            database,
            "--mode",
            mode,
            "-k",
            "2",
            "--format",
            "json",
        )
        assert code == EXIT_OK, err
        document = json.loads(out)
        assert len(document["hits"]) <= 2
        assert document["hits"][0]["key"] == "d1"
    code, out, _ = run(
        "search",
        "E4012",
        "--table",
        "corpus",
        "--database",
        database,
        "--format",
        "json",
        "--explain",
    )
    document = json.loads(out)
    assert document["branches"] == ["text", "nearest"]
    assert (
        f"bm25_search('default.public.corpus', 'body', 'E4012', {DEFAULT_DEPTH})" in document["sql"]
    )


def test_load_is_idempotent(beir: Path, tmp_path: Path) -> None:
    database = str(tmp_path / "db")
    for replace in ([], ["--replace"]):
        code, _, _ = run(
            "load", str(beir), "--database", database, "--embedder", "hashing", *replace
        )
        assert code == EXIT_OK
    code, out, _ = run(
        "search",
        "crash",
        "--table",
        "corpus",
        "--database",
        database,
        "--mode",
        "text",
        "--format",
        "json",
    )
    keys = [hit["key"] for hit in json.loads(out)["hits"]]
    assert keys == sorted(set(keys), key=keys.index)


def test_load_a_parquet_file_and_filter(tmp_path: Path) -> None:
    path = tmp_path / "tickets.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [1, 2, 3],
                "body": ["fox one", "fox two", "fox three"],
                "lang": ["en", "de", "en"],
            }
        ),
        path,
    )
    database = str(tmp_path / "db")
    code, _, err = run("load", str(path), "--database", database, "--no-embed")
    assert code == EXIT_OK, err
    code, out, err = run(
        "search",
        "fox",
        "--table",
        "tickets",
        "--database",
        database,
        "--filter",
        "lang = 'en'",
        "--format",
        "json",
        "--columns",
        "id,lang",
    )
    assert code == EXIT_OK, err
    hits = json.loads(out)["hits"]
    assert sorted(hit["key"] for hit in hits) == [1, 3]
    assert {hit["columns"]["lang"] for hit in hits} == {"en"}


def _strict_json(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON, which has no NaN or Infinity (Python's reader takes
    them unless told otherwise)."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_search_json_writes_a_nan_or_infinite_value_as_null(tmp_path: Path) -> None:
    path = tmp_path / "ratings.parquet"
    ratings = [float("nan"), float("inf"), -float("inf"), 2.5]
    pq.write_table(
        pa.table({"id": [1, 2, 3, 4], "body": ["fox one", "fox two", "fox three", "fox four"],
                  "rating": ratings}),
        path,
    )  # fmt: skip
    database = str(tmp_path / "db")
    code, _, err = run("load", str(path), "--database", database, "--no-embed")
    assert code == EXIT_OK, err
    code, out, err = run(
        "search", "fox", "--table", "ratings", "--database", database, "--format", "json",
        "--columns", "id,rating", "--facet", "rating",
    )  # fmt: skip
    assert code == EXIT_OK, err
    document = _strict_json(out)
    by_key = {hit["key"]: hit["columns"]["rating"] for hit in document["hits"]}
    assert by_key == {1: None, 2: None, 3: None, 4: 2.5}
    assert {entry["value"] for entry in document["facets"]["rating"]} <= {None, 2.5}


def test_table_output_is_readable(beir: Path, tmp_path: Path) -> None:
    database = str(tmp_path / "db")
    run("load", str(beir), "--database", database, "--embedder", "hashing")
    code, out, _ = run("search", "crash", "--table", "corpus", "--database", database, "--explain")
    assert code == EXIT_OK
    assert "bm25_search(" in out
    assert "text rank" in out


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (
            ["search", "x", "--table", "nope"],
            EXIT_INVALID_PLAN,
            "table 'default.public.nope' not found",
        ),
        (
            ["search", "x", "--table", "corpus", "--mode", "text", "--text-column", "title"],
            EXIT_INVALID_PLAN,
            "has no BM25 index",
        ),
        (["search", "x", "--table", "corpus", "-k", "0"], EXIT_INVALID_PLAN, "limit must be >= 1"),
        (["search", "x", "--table", "corpus", "--filter", "lower(x) = 'a'"], EXIT_INVALID_PLAN, ""),
        (["search", "\x00", "--table", "corpus"], EXIT_INVALID_PLAN, "NUL"),
        (["search", "x", "--table", "a.b.c.d"], EXIT_INVALID_PLAN, "4 parts"),
        (["search", "x", "--table", "corpus", "--mode", "fuzzy"], EXIT_USAGE, ""),
    ],
)
def test_search_errors_are_one_line(
    beir: Path, tmp_path: Path, arguments: list[str], code: int, message: str
) -> None:
    database = str(tmp_path / "db")
    run("load", str(beir), "--database", database, "--embedder", "hashing")
    exit_code, _, err = run(*arguments, "--database", database)
    assert exit_code == code
    assert message in err
    assert "Traceback" not in err


def test_search_without_a_database_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run("search", "x", "--table", "t", "--database", str(tmp_path / "missing"))
    assert code == EXIT_USAGE
    assert "hdq load" in err


def test_load_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "body": "x"}\nnot json\n')
    code, _, err = run("load", str(bad), "--database", str(tmp_path / "db"), "--no-embed")
    assert code == EXIT_INVALID_PLAN
    assert "bad.jsonl" in err
    other = tmp_path / "data.txt"
    other.write_text("x")
    code, _, err = run("load", str(other), "--database", str(tmp_path / "db"))
    assert code == EXIT_INVALID_PLAN
    assert "unknown file type" in err


def test_demo_with_the_hashing_embedder(tmp_path: Path) -> None:
    code, out, _ = run(
        "demo", "--database", str(tmp_path / "db"), "--embedder", "hashing", "--format", "json"
    )
    assert code == EXIT_OK
    queries = json.loads(out)["queries"]
    assert len(queries) == 3
    for query in queries:
        assert set(query["modes"]) == {"text", "semantic", "hybrid"}
        assert all(len(hits) == 5 for hits in query["modes"].values())


def test_demo_with_the_default_model_shows_branches_disagreeing(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    code, out, _ = run("demo", "--database", str(tmp_path / "db"), "--format", "json")
    assert code == EXIT_OK
    queries = {query["query"]: query["modes"] for query in json.loads(out)["queries"]}
    exact = queries["E6004"]
    assert all(hit["title"].startswith("PDF export") for hit in exact["text"])
    differs = [
        modes
        for modes in queries.values()
        if [h["key"] for h in modes["text"]] != [h["key"] for h in modes["semantic"]]
    ]
    assert differs


def test_a_file_without_an_id_gets_one(tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    path.write_text("body\nred fox\nblue fox\n")
    database = str(tmp_path / "db")
    code, _, err = run("load", str(path), "--database", database, "--no-embed")
    assert code == EXIT_OK
    assert "added one" in err
    code, out, _ = run(
        "search", "fox", "--table", "notes", "--database", database, "--format", "json"
    )
    assert code == EXIT_OK
    assert sorted(hit["key"] for hit in json.loads(out)["hits"]) == [1, 2]


def test_text_search_works_when_the_embedding_model_is_unknown(tmp_path: Path) -> None:
    from hotdata_retrieval.embed import HashingEmbedder
    from hotdata_retrieval.engines.local import LocalEngine

    class Custom(HashingEmbedder):
        @property
        def name(self) -> str:
            return "my-model-v1"

    database = tmp_path / "db"
    with LocalEngine(database, embedder=Custom(dimensions=8)) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1], "body": ["red fox"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )
    code, out, err = run(
        "search",
        "fox",
        "--table",
        "docs",
        "--database",
        str(database),
        "--mode",
        "text",
        "--format",
        "json",
    )
    assert code == EXIT_OK, err
    assert json.loads(out)["hits"][0]["key"] == 1
    code, _, err = run(
        "search", "fox", "--table", "docs", "--database", str(database), "--mode", "hybrid"
    )
    assert code == EXIT_INVALID_PLAN
    assert "my-model-v1" in err


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_a_search_that_finds_nothing_exits_0(beir: Path, tmp_path: Path, mode: str) -> None:
    """No hits is an answer, not an error (docs/cli.md, ``hdq search``): exit 0; the table
    format prints nothing on standard output and ``no results`` on standard error, the JSON
    format its whole document with ``"hits": []``."""
    database = str(tmp_path / "db")
    code, _, _ = run("load", str(beir), "--database", database, "--embedder", "hashing")
    assert code == EXIT_OK
    search = ["search", "zebra", "--table", "corpus", "--database", database, "--mode", mode]
    search += ["--filter", "id = 'no such id'"]  # also empties the nearest branch
    code, out, err = run(*search)
    assert (code, out, err) == (EXIT_OK, "", "no results\n")
    code, out, err = run(*search, "--format", "json")
    assert code == EXIT_OK, err
    document = json.loads(out)
    assert document["hits"] == []
    assert document["table"] == "default.public.corpus"


def test_the_readmes_progress_line_is_the_one_a_beir_load_writes(
    beir: Path, tmp_path: Path
) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"`(embedding [\w.]+): \d+/\d+ \(\d+%\), \d+ s`", readme)
    assert shown is not None
    code, _, err = run(
        "load", str(beir), "--database", str(tmp_path / "db"), "--embedder", "hashing"
    )
    assert code == EXIT_OK, err
    assert re.search(re.escape(shown.group(1)) + r": \d+/\d+ \(\d+%\), \d+ s$", err, re.M), err
