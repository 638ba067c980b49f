"""Properties: every plan the compiler can build lints clean; lint never fails on odd input.

Run with ``--hypothesis-profile=thorough`` for 1,000 examples per property.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    SearchPlan,
    TableUnion,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.lint import IndexCatalog, SqlParseError, fix, lint
from tests.plans import PLANS
from tests.strategies import plans


def catalog_for(plan: SearchPlan) -> IndexCatalog | None:
    """The index catalog a plan's search needs: its indexes, ready, and its key unique.

    ``None`` when no catalog can serve it: two nearest-neighbour branches ranking one vector
    column by different metrics need two indexes on that column with different metrics, and
    the engine rewrites a ranking only for the index it has.
    """
    metrics = {
        (branch.column, branch.metric)
        for branch in plan.branches
        if isinstance(branch, NearestNeighborSearch)
    }
    if len({column for column, _ in metrics}) != len(metrics):
        return None
    indexes: list[dict[str, Any]] = []
    for branch in plan.branches:
        for member in branch.table.members:  # a union's members: an index each
            entry: dict[str, Any] = {"table": str(member)}
            if isinstance(branch, Bm25Search):
                entry.update(columns=[branch.column], kind="bm25")
            elif isinstance(branch, VectorSearch):
                entry.update(
                    columns=[f"{branch.column}_embedding"],
                    kind="vector",
                    source_column=branch.column,
                )
            else:
                assert isinstance(branch, NearestNeighborSearch)
                entry.update(columns=[branch.column], kind="vector", metric=branch.metric.value)
            indexes.append(entry)
    tables = [{"table": str(table), "unique_keys": [[plan.key_column]]} for table in plan.tables]
    return IndexCatalog.from_dict({"indexes": indexes, "tables": tables})


@given(plans())
def test_every_compiled_plan_lints_clean(plan: SearchPlan) -> None:
    sql = to_sql(plan, pretty=True)
    assert lint(sql) == [], sql
    catalog = catalog_for(plan)
    if catalog is not None:
        flat = to_sql(plan, pretty=False)
        assert lint(flat, catalog) == [], flat


@given(plans())
def test_fix_leaves_compiled_sql_untouched(plan: SearchPlan) -> None:
    sql = to_sql(plan)
    result = fix(sql, catalog_for(plan))
    assert result.sql == sql and not result.changed


def test_every_example_plan_lints_clean() -> None:
    """Clean, but for an exact branch ranked in its own query: the linter says that shape is
    not the index's (HDQ008), which is what the exact scan is for; and for a grouped plan,
    whose candidates drop the rows without a group after the ranking's cut (HDQ031), as the
    grouping defines (docs/plans.md, "Groups": a row with a NULL group is in no group), and
    for a cursor's page, which keeps the ranked rows after the token's row by design."""
    for name, plan in PLANS.items():
        sql = to_sql(plan)
        exact = any(
            isinstance(branch, NearestNeighborSearch)
            and branch.exact
            and not isinstance(branch.table, TableUnion)  # a union's exact members rank nothing
            for branch in plan.branches
        )
        for catalog in (None, catalog_for(plan)):
            codes = {finding.code for finding in lint(sql, catalog)}
            if plan.group_by is not None or plan.after is not None:
                codes.discard("HDQ031")
            assert codes == ({"HDQ008"} if exact else set()), name
    assert all(catalog_for(plan) is not None for plan in PLANS.values())


@given(plans())
def test_a_compiled_search_without_its_sort_is_caught(plan: SearchPlan) -> None:
    """Dropping the ORDER BY from a compiled BM25 or semantic statement leaves rowid order.
    (A filtered semantic branch compiles to the scalar ``vector_distance`` shape, which reads
    the base table and has no rowid order to fall back on.)"""
    branch = plan.branches[0]
    if plan.fusion is not None or isinstance(branch, NearestNeighborSearch):
        return
    if isinstance(branch.table, TableUnion):
        return  # each member sorts its own search call; the outer query sorts their union
    if isinstance(branch, VectorSearch) and plan.filter is not None:
        return
    tree = sqlglot.parse_one(to_sql(plan), read="hotdata")
    tree.set("order", None)
    sql = tree.sql(dialect="hotdata")
    found = {finding.code for finding in lint(sql)}
    cut = tree.args.get("limit") is not None or tree.args.get("offset") is not None
    if cut and not (isinstance(branch, Bm25Search) and plan.offset == 0 and plan.filter is None):
        assert "HDQ011" in found
    else:
        assert found & {"HDQ010", "HDQ011"}


@given(plans())
def test_a_compiled_nearest_branch_with_a_bare_table_is_caught(plan: SearchPlan) -> None:
    """Shortening the nearest-neighbour scan's table to its bare name misses the index."""
    tree = sqlglot.parse_one(to_sql(plan), read="hotdata")
    distances = {"cosine_distance", "l2_distance", "negative_dot_product"}
    scans = [
        table
        for table in tree.find_all(exp.Table)
        if table.args.get("catalog") is not None
        and not table.alias
        and any(
            call.name in distances
            for call in table.parent_select.find_all(exp.Anonymous)  # type: ignore[union-attr]
        )
    ]
    if not scans:
        return
    for table in scans:
        table.set("catalog", None)
        table.set("db", None)
    assert "HDQ001" in {finding.code for finding in lint(tree.sql(dialect="hotdata"))}


_FRAGMENTS = [
    "SELECT",
    "id",
    "*",
    ",",
    "FROM",
    "docs",
    "c.s.t",
    "t0",
    "AS",
    "WHERE",
    "x = 1",
    "AND",
    "ORDER BY",
    "DESC",
    "ASC",
    "LIMIT 5",
    "OFFSET 2",
    "(",
    ")",
    ";",
    "WITH w AS",
    "JOIN",
    "FULL OUTER JOIN",
    "ON a.id = b.id",
    "UNION ALL",
    "bm25_search('docs', 'body', 'q', 5)",
    "bm25_search('docs', 'body')",
    "vector_search('default.public.docs', 'body', 'q', 3)",
    "cosine_distance(emb, ARRAY[0.1, 0.2])",
    "l2_distance(emb, x)",
    "ROW_NUMBER() OVER (ORDER BY cosine_distance(emb, ARRAY[1, 2]))",
    "QUALIFY",
    "score",
    "_distance",
    "+",
    "<=",
    '"Title"',
    "to_char(d, 'YYYY')",
    "date_sub(d, 1)",
    "CAST(emb AS FLOAT[])",
    "ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9]",
    "'text'",
    "$1",
    "GROUP BY id",
    "DISTINCT",
    "--",
    "\n",
]


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map(" ".join))
def test_lint_either_reports_or_raises_a_parse_error(sql: str) -> None:
    try:
        findings = lint(sql)
    except SqlParseError as error:
        assert error.description
        return
    for finding in findings:
        assert finding.line >= 1 and finding.column >= 1
        assert 0 <= finding.start <= finding.end <= len(sql)
    fix(sql)
