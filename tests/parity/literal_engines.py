"""The engines, tables, plans and answers the literal parity tests share
(test_integer_float_literals.py, test_float_column_integer_literals.py,
test_mismatched_literals.py, test_mismatched_list_elements.py): each engine path of
:data:`~tests.parity.engines.ENGINE_PATHS` with one table ``docs`` loaded, a filter run
under a nearest-neighbour and a text branch, the keys each path keeps, and a filter every
path refuses alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, PlanError, SearchPlan, to_sql
from hotdata_retrieval.engines.checks import (
    arrow_column_facts,
    arrow_element_kinds,
    arrow_value_kind,
    check_filter_values,
)
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.plan.filters import Not, Predicate
from tests.parity.engines import open_engine


def literal_engine(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    prefix: str,
    table: Callable[[str], pa.Table],
) -> Iterator[tuple[str, Any]]:
    """The body of a module-scoped ``engine`` fixture parametrised by engine path: the
    path's name and a fresh engine with ``table(name)`` loaded as ``docs`` (key ``id``, text
    column ``body``, a 2-d ``embedding``), closed afterwards; its files in a directory named
    from ``prefix``."""
    name = request.param
    directory = tmp_path_factory.mktemp(f"{prefix}-{name.replace(' ', '-')}")
    opened = open_engine(name, directory, request)
    opened.load_table("docs", table(name), key_column="id", text_columns=["body"])
    yield name, opened
    opened.close()


def literal_plans(predicate: Predicate, rows: int) -> list[SearchPlan]:
    """``predicate`` over table ``docs`` under a nearest-neighbour branch and a text branch
    (``crash``), each asking for all ``rows`` rows."""
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
    text = Bm25Search(table="docs", column="body", query_text="crash")
    return [SearchPlan(source=source, limit=rows, filter=predicate) for source in (nearest, text)]


def literal_keys(name: str, engine: Any, plan: SearchPlan, schema: pa.Schema) -> set[int]:
    """The keys engine path ``name`` keeps for ``plan``: for ``local statement`` the plan's
    compiled statement run on DataFusion, its filter typed by ``schema`` (the table's, as the
    local engine types it for one table), for any other path its search."""
    if name == "local statement":
        kinds = {field.name: arrow_value_kind(field.type) for field in schema}
        facts = attrs.evolve(arrow_column_facts(schema), coarse_timestamps={})
        executed = executed_plan(plan, kinds, facts)
        return {row["id"] for row in engine.sql(to_sql(executed)).to_pylist()}
    return set(engine.search(plan).keys)


def literal_table(rows: int, columns: dict[str, pa.Array]) -> pa.Table:
    """Table ``docs`` of ``rows`` rows: key ``id`` 0..rows-1, ``body`` ``crash report`` (what
    :func:`literal_plans`' text branch matches), ``columns``, and a 2-d float32
    ``embedding`` ``[1, i]``."""
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "body": ["crash report"] * rows,
            **columns,
            "embedding": pa.array(
                [[1.0, float(i)] for i in range(rows)], pa.list_(pa.float32(), 2)
            ),
        }
    )


def checked_keys(name: str, engine: Any, plan: SearchPlan, schema: pa.Schema) -> set[int]:
    """:func:`literal_keys`, with the filter's values first checked against ``schema``'s
    columns on ``local statement``, as ``LocalEngine.search`` checks a plan before it
    compiles."""
    if name == "local statement":
        kinds = {field.name: arrow_value_kind(field.type) for field in schema}
        check_filter_values(plan.filter, kinds, arrow_element_kinds(schema))
    return literal_keys(name, engine, plan, schema)


def assert_refused_alike(
    name: str, engine: Any, predicate: Predicate, rows: int, schema: pa.Schema, message: str
) -> None:
    """``predicate`` and its negation, under each of :func:`literal_plans`, are refused on
    path ``name`` with a :class:`PlanError` on field ``filter`` whose message starts with
    ``message``."""
    for used in (predicate, Not(operand=predicate)):
        for plan in literal_plans(used, rows):
            with pytest.raises(PlanError) as caught:
                checked_keys(name, engine, plan, schema)
            assert caught.value.field == "filter"
            assert str(caught.value).startswith(message), (name, used)
