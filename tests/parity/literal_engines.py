"""The engines, plans and answers the literal parity tests share
(test_integer_float_literals.py, test_float_column_integer_literals.py): each engine path of
:data:`~tests.parity.engines.ENGINE_PATHS` with one table ``docs`` loaded, a filter run
under a nearest-neighbour and a text branch, and the keys each path keeps."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan, to_sql
from hotdata_retrieval.engines.checks import arrow_column_facts, arrow_value_kind
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.plan.filters import Predicate
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
        facts = arrow_column_facts(schema)
        executed = executed_plan(
            plan,
            kinds,
            float32_columns=facts.float32,
            unsigned_columns=facts.unsigned,
            float64_columns=facts.float64,
            integer_ranges=facts.integer_ranges,
            timestamp_columns=facts.timestamps,
            nanosecond_columns=facts.nanoseconds,
            decimal_columns=facts.decimals,
        )
        return {row["id"] for row in engine.sql(to_sql(executed)).to_pylist()}
    return set(engine.search(plan).keys)
