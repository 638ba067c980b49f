"""``to_ibis``: plans as ibis expressions, run on the local engine.

Each expression is compiled by ibis (its PostgreSQL dialect, which the engine reads) and run
with the engine's ``sql``; its rows must be the rows and order of the same plan's
``engine.search`` (with an ibis filter moved into the plan), and, for a nearest-neighbour
plan, of a NumPy brute-force scan. Renaming or selecting columns of the expression keeps the
order: the ordering and bound are at the outermost level."""

from __future__ import annotations

from collections.abc import Iterator

import ibis
import numpy as np
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from hotdata_retrieval.adapters.ibis import semantic_search, to_ibis
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan import (
    Bm25Search,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.plan.filter_objects import filter_from_object

WORDS = ["red", "green", "blue", "fox", "sky", "sea"]
ROWS = 40
rng = np.random.default_rng(7)
VECTORS = rng.normal(size=(ROWS, 4)).astype(np.float32)
BODIES = [" ".join(rng.choice(WORDS, size=3)) for _ in range(ROWS)]
LANGS = ["en" if i % 3 else "fr" for i in range(ROWS)]

ITEMS = ibis.table(
    {"id": "int64", "body": "string", "lang": "string", "embedding": "array<float32>"},
    name="items",
)


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        local.load_table(
            "items",
            pa.table(
                {
                    "id": list(range(ROWS)),
                    "body": BODIES,
                    "lang": LANGS,
                    "embedding": pa.array(VECTORS.tolist(), pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
        )
        yield local


QUERY = [0.3, -0.2, 0.9, 0.1]


def _nearest(**options) -> NearestNeighborSearch:
    return NearestNeighborSearch(table="items", column="embedding", query_vector=QUERY, **options)


def _text() -> Bm25Search:
    return Bm25Search(table="items", column="body", query_text="red fox")


PLANS = {
    "nearest": SearchPlan(source=_nearest(result_name="distance"), columns=["id", "lang"], limit=7),
    "nearest l2, offset": SearchPlan(
        source=_nearest(metric="l2"), columns=["id"], limit=5, offset=3
    ),
    "bm25": SearchPlan(source=_text(), columns=["id", "body"], limit=6),
    "rrf": SearchPlan(
        source=ReciprocalRankFusion(branches=[_text(), _nearest()]),
        columns=["id", "body"],
        limit=8,
        include_branch_scores=True,
    ),
    "min-max, renamed score, plan filter": SearchPlan(
        source=MinMaxFusion(branches=[_text(), _nearest()], alpha=0.3),
        columns=["id"],
        limit=6,
        score_name="relevance",
        filter=filter_from_object({"lang": "en"}),
    ),
}


def _run(engine: LocalEngine, expression) -> list[dict]:
    return engine.sql(ibis.to_sql(expression, dialect="postgres")).to_pylist()


def _searched(engine: LocalEngine, plan: SearchPlan) -> list[dict]:
    rows = []
    for hit in engine.search(plan):
        row = dict(hit.columns)
        row[plan.result_columns[0]] = hit.ranking_value
        rows.append(row)
    return rows


@pytest.mark.parametrize("name", list(PLANS))
def test_the_expression_returns_the_search_s_rows_in_order(engine, name) -> None:
    plan = PLANS[name]
    rows = _run(engine, to_ibis(ITEMS, plan))
    expected = _searched(engine, plan)
    assert [row["id"] for row in rows] == [row["id"] for row in expected]
    ranking = plan.result_columns[0]
    assert [row[ranking] for row in rows] == pytest.approx([row[ranking] for row in expected])
    assert list(rows[0]) == [*plan.projection, *plan.result_columns]


def test_nearest_matches_a_brute_force_scan(engine) -> None:
    rows = _run(engine, to_ibis(ITEMS, PLANS["nearest"]))
    query = np.asarray(QUERY)
    cosine = 1 - VECTORS @ query / (np.linalg.norm(VECTORS, axis=1) * np.linalg.norm(query))
    assert [row["id"] for row in rows] == list(np.argsort(cosine, kind="stable")[:7])
    assert [row["distance"] for row in rows] == pytest.approx(np.sort(cosine)[:7], abs=1e-5)


def test_an_ibis_filter_is_moved_into_the_plan(engine) -> None:
    plan = PLANS["rrf"]
    filtered = ITEMS.filter((ITEMS.lang == "fr") & (ITEMS.id < 30))
    rows = _run(engine, to_ibis(filtered, plan))
    reference = SearchPlan(
        source=plan.source,
        columns=plan.columns,
        limit=plan.limit,
        include_branch_scores=True,
        filter=filter_from_object({"lang": "fr", "id": {"$lt": 30}}),
    )
    assert [row["id"] for row in rows] == [row["id"] for row in _searched(engine, reference)]
    assert all(LANGS[row["id"]] == "fr" and row["id"] < 30 for row in rows)
    assert len(rows) == plan.limit  # the filter applied before the bound: the page is full


def test_the_order_and_bound_are_outermost(engine) -> None:
    expression = to_ibis(ITEMS, PLANS["nearest"])
    outer = sqlglot.parse_one(ibis.to_sql(expression, dialect="postgres"), read="postgres")
    assert [ordered.this.name for ordered in outer.args["order"].expressions] == ["distance"]
    assert outer.args["limit"].expression.name == "7"
    renamed = expression.rename(nearness="distance").select("nearness", "id")
    rows = _run(engine, renamed)
    expected = _searched(engine, PLANS["nearest"])
    assert [row["id"] for row in rows] == [row["id"] for row in expected]


def test_semantic_search_is_one_nearest_plan(engine) -> None:
    expression = semantic_search(ITEMS, "embedding", QUERY, k=4, metric="l2", distance_name="d")
    assert expression.columns == ("id", "body", "lang", "d")
    rows = _run(engine, expression)
    squared = ((VECTORS - np.asarray(QUERY)) ** 2).sum(axis=1)
    assert [row["id"] for row in rows] == list(np.argsort(squared, kind="stable")[:4])
    text = semantic_search(ITEMS, ITEMS.body, "cats", k=3)
    assert text.columns == ("id", "body", "lang", "distance")
    assert "VECTOR_DISTANCE(\"body\", 'cats')" in ibis.to_sql(text, dialect="postgres")


@pytest.mark.parametrize(
    ("table", "words"),
    [
        (ITEMS.select("id", "body"), "Project"),
        (ibis.table({"id": "int64"}, name="other"), "'other'"),
        (ITEMS.filter(ITEMS.body.length() > 3), "LENGTH"),
        ("items", "str"),
    ],
)
def test_what_to_ibis_cannot_take_is_a_typed_error(table, words) -> None:
    with pytest.raises(PlanError) as raised:
        to_ibis(table, PLANS["bm25"])
    assert words in str(raised.value)


def test_a_fusion_without_its_score_in_the_result_is_refused() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=[_text(), _nearest()]), limit=3, score_name=None
    )
    with pytest.raises(PlanError, match="ordered by"):
        to_ibis(ITEMS, plan)


@pytest.mark.parametrize("name", list(PLANS))
def test_quoting_every_identifier_changes_nothing_else(name) -> None:
    plain = to_sql(PLANS[name])
    quoted = to_sql(PLANS[name], quote_identifiers=True)
    identifiers = list(sqlglot.parse_one(quoted, read="postgres").find_all(exp.Identifier))
    assert identifiers and all(identifier.quoted for identifier in identifiers)
    assert sqlglot.parse_one(plain, read="postgres").sql(
        "postgres", identify=True
    ) == sqlglot.parse_one(quoted, read="postgres").sql("postgres", identify=True)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: to_ibis(ITEMS, None), "SearchPlan"),
        (
            lambda: to_ibis(
                ibis.table(ITEMS.schema(), name="items", database="other"), PLANS["bm25"]
            ),
            "'other.items'",
        ),
        (lambda: to_ibis(ibis.table({"id": "int64"}, name="items"), PLANS["bm25"]), "'body'"),
        (lambda: semantic_search(ITEMS, "nope", QUERY, k=3), "'nope'"),
        (lambda: semantic_search(ITEMS, 5, QUERY, k=3), "column must be"),
    ],
)
def test_a_mismatched_table_or_column_is_refused(call, words) -> None:
    with pytest.raises(PlanError) as raised:
        call()
    assert words in str(raised.value)


def test_a_qualified_ibis_table_searches_that_table() -> None:
    table = ibis.table(ITEMS.schema(), name="items", catalog="default", database="public")
    expression = semantic_search(table, "embedding", QUERY, k=2)
    assert '"default"."public"."items"' in ibis.to_sql(expression, dialect="postgres")


# -- a mixed-case ibis table: its names as ibis spells them (as hotdata-ibis writes them) ----

MIXED = ibis.table(
    {"ID": "int64", "Body": "string", "Lang": "string", "Embedding": "array<float32>"},
    name="Items",
)


@ibis.udf.scalar.builtin
def cosine_distance(a, b) -> float:  # type: ignore[empty-body]
    """The engine's cosine distance, as an ibis expression names it."""


def _cosine(left: pa.Array, right: pa.Array) -> pa.Array:
    rows = np.asarray(left.to_pylist(), dtype=np.float64)
    query = np.asarray(right.to_pylist(), dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(query, axis=1)
    return pa.array(1 - (rows * query).sum(axis=1) / norms)


@pytest.fixture(scope="module")
def case_sensitive() -> object:
    """A DataFusion session holding ``"default"."public"."Items"`` with mixed-case columns:
    a quoted name must match its case, so a name written in another case fails."""
    from datafusion import SessionConfig, SessionContext, udf

    session = SessionContext(SessionConfig().with_default_catalog_and_schema("default", "public"))
    data = pa.table(
        {
            "ID": list(range(ROWS)),
            "Body": BODIES,
            "Lang": LANGS,
            "Embedding": pa.array(VECTORS.tolist(), pa.list_(pa.float32())),
        }
    )
    session.register_record_batches('"Items"', [data.to_batches()])
    session.register_udf(
        udf(
            _cosine,
            [pa.list_(pa.float32()), pa.list_(pa.float64())],
            pa.float64(),
            "immutable",
            name="cosine_distance",
        )
    )
    return session


def _run_on(session, expression) -> list[dict]:
    return session.sql(ibis.to_sql(expression, dialect="postgres")).to_arrow_table().to_pylist()


def test_a_mixed_case_table_keeps_its_spelling(case_sensitive) -> None:
    expression = semantic_search(MIXED, "Embedding", QUERY, k=5)
    assert expression.columns == ("ID", "Body", "Lang", "distance")
    rows = _run_on(case_sensitive, expression)
    # what hotdata-ibis builds: an ibis projection ordered by the distance UDF
    reference = (
        MIXED.select("ID", "Body", "Lang", distance=cosine_distance(MIXED.Embedding, QUERY))
        .order_by("distance")
        .limit(5)
    )
    assert rows == _run_on(case_sensitive, reference)
    query = np.asarray(QUERY)
    cosine = 1 - VECTORS @ query / (np.linalg.norm(VECTORS, axis=1) * np.linalg.norm(query))
    assert [row["ID"] for row in rows] == list(np.argsort(cosine, kind="stable")[:5])


def test_a_filtered_mixed_case_table_filters_inside_the_plan(case_sensitive) -> None:
    plan = SearchPlan(source=_nearest(result_name="distance"), columns=["id", "lang"], limit=6)
    rows = _run_on(case_sensitive, to_ibis(MIXED.filter(MIXED.Lang == "fr"), plan))
    assert [list(row) for row in rows[:1]] == [["ID", "Lang", "distance"]]
    query = np.asarray(QUERY)
    cosine = 1 - VECTORS @ query / (np.linalg.norm(VECTORS, axis=1) * np.linalg.norm(query))
    kept = [index for index in np.argsort(cosine, kind="stable") if LANGS[index] == "fr"]
    assert [row["ID"] for row in rows] == kept[:6]


def test_a_fusion_over_a_mixed_case_table_writes_every_name_as_ibis_spells_it() -> None:
    sql = ibis.to_sql(to_ibis(MIXED, PLANS["rrf"]), dialect="postgres")
    columns = {column.name for column in sqlglot.parse_one(sql).find_all(exp.Column)}
    assert {"ID", "Body", "Embedding"} <= columns
    assert not columns & {"id", "body", "embedding"}
    assert '"default"."public"."Items"' in sql
    assert "'default.public.items', 'body'" in sql  # the table function's text: as stored


def test_columns_that_differ_only_in_case_are_refused() -> None:
    twins = ibis.table(
        {"id": "int64", "Body": "string", "body": "string", "embedding": "array<float32>"},
        name="items",
    )
    with pytest.raises(PlanError, match="differ only in case"):
        to_ibis(twins, PLANS["bm25"])
    unread = SearchPlan(source=_nearest(), columns=["id"], limit=3)  # reads neither twin
    assert to_ibis(twins, unread).columns == ("id", "_distance")
