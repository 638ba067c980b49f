"""Identifiers that are keywords to any parser the SQL meets are quoted, so a plan over a
column, key or table of any such name compiles, runs on the local engine (DataFusion's
parser), parses in PostgreSQL's own grammar (``pglast``) and lints clean (sqlglot).

The candidates are every keyword of sqlparser-rs (DataFusion's parser, listed in
``tests/data/sqlparser_keywords.txt``), every PostgreSQL keyword (``pglast.keywords``) and
every word of sqlglot's Postgres tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pglast
import pglast.keywords
import pyarrow as pa
import pytest
from click.testing import CliRunner
from sqlglot.dialects.postgres import Postgres

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.cli import main
from hotdata_retrieval.compile.keywords import QUOTED_WORDS
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.lint import lint
from hotdata_retrieval.plan.filters import MAX_FILTER_TERMS, And
from hotdata_retrieval.spec.native import HOTDATA_NATIVE

DATA = Path(__file__).parent / "data" / "sqlparser_keywords.txt"
FIXED = {"id", "body", "emb", "score", "_distance"}


def _candidates() -> list[str]:
    words = {
        line.strip().lower()
        for line in DATA.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    postgres = pglast.keywords
    for group in (
        postgres.RESERVED_KEYWORDS,
        postgres.UNRESERVED_KEYWORDS,
        postgres.COL_NAME_KEYWORDS,
        postgres.TYPE_FUNC_NAME_KEYWORDS,
    ):
        words |= {word.lower() for word in group}
    words |= {word.lower() for word in Postgres.Tokenizer.KEYWORDS if word.isidentifier()}
    return sorted(word for word in words if word.isidentifier() and word not in FIXED)


WORDS = _candidates()


def test_the_sweep_covers_every_keyword_list() -> None:
    assert len(WORDS) > 1000
    assert {"top", "values", "view", "explain", "between", "drop", "insert"} <= set(WORDS)
    not_unreserved = {
        word.lower()
        for group in (
            pglast.keywords.RESERVED_KEYWORDS,
            pglast.keywords.COL_NAME_KEYWORDS,
            pglast.keywords.TYPE_FUNC_NAME_KEYWORDS,
        )
        for word in group
    }
    assert not_unreserved <= QUOTED_WORDS


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    columns: dict[str, object] = {
        "id": [1, 2, 3],
        "body": ["fox one", "fox two", "three"],
        "emb": pa.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], pa.list_(pa.float32())),
    }
    for word in WORDS:
        columns[word] = ["x", "y", "x"]
    with LocalEngine() as local:
        local.load_table("t", pa.table(columns), text_columns=["body"])
        yield local


def _check(engine: LocalEngine, sql: str) -> list[dict[str, object]]:
    rows = engine.sql(sql).to_pylist()
    pglast.parse_sql(sql)
    assert lint(sql) == []
    return rows


def _branches(table: str = "t") -> tuple[Bm25Search, NearestNeighborSearch]:
    return (
        Bm25Search(table=table, column="body", query_text="fox"),
        NearestNeighborSearch(table=table, column="emb", query_vector=[1.0, 0.5]),
    )


FILTER_CHUNKS = [
    WORDS[start : start + MAX_FILTER_TERMS] for start in range(0, len(WORDS), MAX_FILTER_TERMS)
]
"""The keywords in groups a filter may hold (at most MAX_FILTER_TERMS terms each)."""


@pytest.mark.parametrize("chunk", range(len(FILTER_CHUNKS)))
@pytest.mark.parametrize("shape", ["fusion", "native", "nearest", "text"])
def test_every_keyword_as_a_column_and_in_the_filter(
    engine: LocalEngine, shape: str, chunk: int
) -> None:
    words = FILTER_CHUNKS[chunk]
    text, nearest = _branches()
    source = {
        "fusion": ReciprocalRankFusion(branches=[text, nearest]),
        "native": ReciprocalRankFusion(branches=[text, nearest]),
        "nearest": nearest,
        "text": text,
    }[shape]
    plan = SearchPlan(
        source=source,
        columns=["id", *words],
        filter=And(operands=[Comparison(column=w, operator="=", value="x") for w in words]),
        include_branch_scores=shape in ("fusion", "native"),
    )
    rows = _check(engine, to_sql(plan, HOTDATA_NATIVE if shape == "native" else "hotdata"))
    assert {row["id"] for row in rows} == ({1} if shape == "text" else {1, 3})
    assert all(row[word] == "x" for row in rows for word in words)


@pytest.mark.parametrize("word", WORDS)
def test_every_keyword_as_a_key_column(engine: LocalEngine, word: str) -> None:
    # A keyword column holds repeated values, so only compile and parse: it cannot be a key.
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=list(_branches())), key_column=word, columns=[word]
    )
    sql = to_sql(plan)
    pglast.parse_sql(sql)
    assert lint(sql) == []
    engine._sessions.main.sql(sql)  # DataFusion parses and plans it


def test_a_keyword_table_name_runs(tmp_path: Path) -> None:
    with LocalEngine(tmp_path / "db") as local:
        for word in ("select", "top", "values", "view", "between", "order", "user"):
            local.load_table(
                word, pa.table({"id": [1, 2], "body": ["fox", "den"]}), text_columns=["body"]
            )
            text = Bm25Search(table=word, column="body", query_text="fox")
            assert local.search(SearchPlan(source=text)).keys == [1]
            _check(local, to_sql(SearchPlan(source=text, columns=["id", "body"])))


@pytest.mark.parametrize("columns", ["id,between", "id,top,values,view,explain", "id,drop,insert"])
def test_hdq_explain_quotes_keyword_columns(columns: str) -> None:
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "--mode",
            "text",
            "--table",
            "docs",
            "--text-column",
            "body",
            "--query",
            "q",
            "--columns",
            columns,
        ],
    )
    assert result.exit_code == 0, result.output
    for word in columns.split(",")[1:]:
        assert f'"{word}"' in result.stdout
    assert lint(result.stdout) == []
