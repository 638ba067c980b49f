"""Autofix: what it rewrites, what it leaves alone, and that its output lints clean."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval.lint import fix, lint
from hotdata_retrieval.lint.rules import RULES

VEC = "ARRAY[0.1, -0.2, 0.3]"

FIXED = {
    "qualify the table of a distance ranking": (
        f"SELECT id FROM docs ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
        f'SELECT id FROM "default".public.docs ORDER BY cosine_distance(emb, {VEC}) LIMIT 3',
    ),
    "qualify a two-part table, keeping the alias-free wrap": (
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM sales.items AS t0) "
        "AS t1 ORDER BY t1.d LIMIT 3",
        f"SELECT * FROM (SELECT id, cosine_distance(emb, {VEC}) AS d FROM "
        '"default".sales.items AS t0) AS t1 ORDER BY t1.d LIMIT 3',
    ),
    "drop the vector column": (
        f"SELECT id, emb, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 3",
        f"SELECT id, cosine_distance(emb, {VEC}) AS d FROM c.s.t ORDER BY d LIMIT 3",
    ),
    "add ORDER BY score DESC": (
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5)",
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        "ORDER BY score DESC",
    ),
    "add ORDER BY _distance ASC before a LIMIT": (
        "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) LIMIT 3",
        "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) "
        "ORDER BY _distance ASC LIMIT 3",
    ),
    "add ORDER BY qualified by the function's alias": (
        "SELECT v.id FROM vector_search('default.public.docs', 'body', 'q', 20) AS v LIMIT 3",
        "SELECT v.id FROM vector_search('default.public.docs', 'body', 'q', 20) AS v "
        "ORDER BY v._distance ASC LIMIT 3",
    ),
    "add k = LIMIT + OFFSET": (
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') "
        "ORDER BY score DESC LIMIT 5 OFFSET 10",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 15) "
        "ORDER BY score DESC LIMIT 5 OFFSET 10",
    ),
    "order, then k, in two passes": (
        "SELECT id FROM bm25_search('docs', 'body', 'q') LIMIT 5",
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5",
    ),
    "lower-case quoted mixed-case names": (
        'SELECT r."driverId", r."Race Name" FROM f1.public.results AS r',
        'SELECT r.driverid, r."race name" FROM f1.public.results AS r',
    ),
}


@pytest.mark.parametrize(("sql", "expected"), FIXED.values(), ids=list(FIXED))
def test_fix_rewrites(sql: str, expected: str) -> None:
    result = fix(sql)
    assert result.sql == expected
    assert result.changed and result.findings == ()
    assert lint(result.sql) == []
    assert len(sqlglot.parse(result.sql, read="hotdata")) == 1


NOT_FIXED = {
    "a star is not expanded": f"SELECT * FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3",
    "the only output column is not dropped": (
        f"SELECT emb FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) LIMIT 3"
    ),
    "a dropped column would break a reader": (
        f"WITH near AS (SELECT id, emb, cosine_distance(emb, {VEC}) AS d FROM c.s.t "
        "ORDER BY d LIMIT 3) SELECT id, emb FROM near"
    ),
    "ORDER BY is not added over a join": (
        "SELECT b.id FROM bm25_search('default.public.docs', 'body', 'q', 5) AS b "
        "JOIN default.public.meta AS m ON b.id = m.id LIMIT 5"
    ),
    "ORDER BY is not added under DISTINCT": (
        "SELECT DISTINCT id FROM bm25_search('default.public.docs', 'body', 'q', 5) LIMIT 5"
    ),
    "k is not added under an ascending sort": (
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') ORDER BY score LIMIT 5"
    ),
    "DESC is not flipped": (
        f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC}) DESC LIMIT 3"
    ),
    "a missing LIMIT is not invented": f"SELECT id FROM c.s.t ORDER BY cosine_distance(emb, {VEC})",
}


@pytest.mark.parametrize("sql", NOT_FIXED.values(), ids=list(NOT_FIXED))
def test_fix_leaves_unsafe_findings(sql: str) -> None:
    before = lint(sql)
    assert before and not any(finding.fixable for finding in before)
    result = fix(sql)
    assert result.sql == sql
    assert not result.changed
    assert list(result.findings) == before


def test_a_filtered_search_without_k_is_left_as_written() -> None:
    # k would be applied before the WHERE and drop rows the filter keeps: not a finding.
    sql = (
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q') WHERE lang = 'en' "
        "ORDER BY score DESC LIMIT 5"
    )
    assert lint(sql) == []
    assert not fix(sql).changed


def test_fix_keeps_untouched_statements_and_comments_as_written() -> None:
    sql = (
        "-- first: fine as it is\n"
        "SELECT  id   FROM docs;\n"
        "\n"
        "-- second: needs an order\n"
        "SELECT id,\n"
        "       score\n"
        "FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
        "LIMIT 5;\n"
        "SELECT 2\n"
    )
    result = fix(sql)
    assert result.sql == sql.replace("LIMIT 5;", "ORDER BY score DESC\nLIMIT 5;")
    assert lint(result.sql) == []
    assert len(sqlglot.parse(result.sql, read="hotdata")) == 3


def test_fix_keeps_explain_and_leaves_union_arms() -> None:
    sql = (
        f"EXPLAIN VERBOSE SELECT id FROM docs ORDER BY cosine_distance(emb, {VEC}) LIMIT 3;\n"
        "SELECT id FROM default.public.pinned UNION ALL "
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5)"
    )
    result = fix(sql)
    assert result.sql.startswith(
        f'EXPLAIN VERBOSE SELECT id FROM "default".public.docs ORDER BY cosine_distance(emb, {VEC})'
    )
    assert result.sql.endswith("SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5)")
    assert [finding.code for finding in result.findings] == ["HDQ010"]


def test_fix_preserves_long_vectors_exactly() -> None:
    vector = "ARRAY[" + ", ".join(repr(i / 7) for i in range(64)) + "]"
    result = fix(
        f"SELECT id, emb, cosine_distance(emb, {vector}) AS d FROM docs ORDER BY d LIMIT 3"
    )
    assert vector in result.sql
    assert lint(result.sql) == []


def test_fix_reports_what_it_applied() -> None:
    result = fix("SELECT * FROM vector_search('docs', 'body', 'q', 20) LIMIT 3")
    assert sorted(finding.code for finding in result.applied) == ["HDQ011", "HDQ014"]
    assert all(finding.fixable for finding in result.applied)


FIXABLE = sorted(rule.code for rule in RULES if rule.fixable)

_tables = st.sampled_from(["docs", "sales.docs", "c.s.docs"])
_columns = st.sampled_from(["id", "title", '"Title"', "emb"])
_functions = st.sampled_from(["cosine_distance", "l2_distance", "negative_dot_product"])


@st.composite
def fixable_queries(draw: st.DrawFn) -> str:
    """Queries whose findings are all fixable, of every fixable kind."""
    kind = draw(st.sampled_from(["distance", "bm25", "semantic"]))
    table = draw(_tables)
    if kind == "distance":
        extra = draw(st.lists(_columns, min_size=1, max_size=3, unique=True))
        where = draw(st.sampled_from(["", " WHERE lang = 'en'"]))
        function = draw(_functions)
        return (
            f"SELECT {', '.join(extra)}, {function}(emb, {VEC}) AS _distance FROM {table}{where} "
            f"ORDER BY _distance ASC LIMIT {draw(st.integers(1, 50))}"
        )
    function = "bm25_search" if kind == "bm25" else "vector_search"
    k = "" if kind == "bm25" and draw(st.booleans()) else f", {draw(st.integers(1, 60))}"
    limit = draw(st.sampled_from(["", " LIMIT 5", " LIMIT 5 OFFSET 5"]))
    if kind == "bm25" and k == "" and not limit:
        limit = " LIMIT 3"
    columns = draw(st.sampled_from(["id", "*", 'id, "Body"']))
    order = " ORDER BY score DESC" if kind == "bm25" and draw(st.booleans()) else ""
    sql = f"SELECT {columns} FROM {function}('{table}', 'body', 'q'{k}){order}{limit}"
    return sql


@given(fixable_queries())
def test_fixed_sql_lints_clean_and_parses_as_one_statement(sql: str) -> None:
    findings = lint(sql)
    result = fix(sql)
    assert {finding.code for finding in result.findings} <= {
        finding.code for finding in findings if not finding.fixable
    } | {"HDQ013"}
    assert not any(finding.code in FIXABLE for finding in result.findings)
    assert len(sqlglot.parse(result.sql, read="hotdata")) == 1
    assert fix(result.sql).sql == result.sql  # a fixed statement needs no second fix
