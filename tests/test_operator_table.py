"""The operator table: every interpretation of the filter language answers every registered
operator — by its own method or by reading the operator's row — and an operator added from
outside the library reaches SQL, plan documents, filter objects, the row mask, the spec's
truth and turbopuffer by registering one row, no library file touched.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import pyarrow as pa
import pytest
from sqlglot import exp

import hotdata_retrieval
from hotdata_retrieval import Bm25Search, SearchPlan, to_sql
from hotdata_retrieval.compile.compiler import SQL_SPELLINGS, SqlSpelling
from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError
from hotdata_retrieval.compile.turbopuffer import turbopuffer_filter
from hotdata_retrieval.engines.checks import ValueKind, check_filter_values
from hotdata_retrieval.engines.local.masks import passing_rows
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.document import plan_from_document, plan_json_schema, plan_to_document
from hotdata_retrieval.plan.filter_objects import filter_from_object, filter_object_schema
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    Not,
    Or,
    PredicateVisitor,
    ValueRole,
    predicate_columns,
    predicate_forms,
    register_predicate,
    unregister_predicate,
)
from hotdata_retrieval.plan.visitor import UnvisitableNodeError
from hotdata_retrieval.spec.cases import _passes


def _import_everything() -> None:
    """Import every module of the package, so every interpretation is defined."""
    for module in pkgutil.walk_packages(hotdata_retrieval.__path__, "hotdata_retrieval."):
        if module.name.endswith("__main__") or module.name.endswith("._sql_worker"):
            continue
        importlib.import_module(module.name)


def _interpretations() -> list[type[PredicateVisitor[Any]]]:
    _import_everything()
    found: list[type[PredicateVisitor[Any]]] = []
    pending = list(PredicateVisitor.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("hotdata_retrieval."):
            found.append(cls)
    return sorted(set(found), key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _missing(cls: type[PredicateVisitor[Any]]) -> list[str]:
    return [
        f"{cls.__module__}.{cls.__qualname__} cannot interpret {name}"
        for name, form in predicate_forms().items()
        if not cls.interprets(form)
    ]


def test_every_interpretation_interprets_every_operator() -> None:
    interpretations = _interpretations()
    names = {cls.__qualname__ for cls in interpretations}
    # The interpretations the library is known to have: none may drop out unnoticed.
    assert {
        "PlanCompiler",
        "_PredicateDocument",
        "_Columns",
        "_Truth",
        "ArrowMask",
        "_FilterValues",
        "_TypedValues",
        "_Translation",
        "_MaskedAsSql",
    } <= names
    missing = [problem for cls in interpretations for problem in _missing(cls)]
    assert missing == []


def test_the_table_lists_the_library_operators() -> None:
    assert list(predicate_forms()) == [
        "comparison",
        "between",
        "in_list",
        "is_null",
        "starts_with",
        "ends_with",
        "contains_all",
        "contains_any",
        "and",
        "or",
        "not",
    ]


def test_the_generic_interpretations_keep_no_method_per_leaf() -> None:
    """The interpretations that give the same answer for every leaf read the row alone."""
    from hotdata_retrieval.engines.checks import _FilterValues, _TypedValues
    from hotdata_retrieval.plan.document import _PredicateDocument
    from hotdata_retrieval.plan.filters import _Columns

    leaves = [form.name for form in predicate_forms().values() if form.leaf]
    for cls in (_Columns, _PredicateDocument, _FilterValues, _TypedValues):
        assert [name for name in leaves if f"visit_{name}" in vars(cls)] == []


# -- toy operators, from outside the library ----------------------------------------------


def _compose(self: Any, other: Any) -> Any:
    return And(operands=(self, other))


@attrs.frozen(kw_only=True)
class ToyOutside:
    """``column`` outside ``[low, high]``: the toy operator, defined by its expansion."""

    visit_name: ClassVar[str] = "toy_outside"

    column: str
    low: Any = attrs.field(metadata={"bound": True})
    high: Any = attrs.field(metadata={"bound": True})
    __and__ = _compose


@attrs.frozen(kw_only=True)
class ToyBare:
    """A toy operator whose row says nothing an interpretation could use."""

    visit_name: ClassVar[str] = "toy_bare"

    column: str
    text: str = attrs.field(metadata={"bound": True})


def _outside(node: ToyOutside) -> Or:
    return Or(
        operands=(
            Comparison(column=node.column, operator="<", value=node.low),
            Comparison(column=node.column, operator=">", value=node.high),
        )
    )


def _outside_sql(compiler: Any, node: ToyOutside) -> exp.Expr:
    column = exp.column(node.column)
    return exp.Paren(
        this=exp.or_(
            exp.LT(this=column, expression=compiler.binder.literal(node, "low")),
            exp.GT(this=column.copy(), expression=compiler.binder.literal(node, "high")),
        )
    )


@pytest.fixture
def toy() -> Iterator[None]:
    register_predicate(
        ToyOutside,
        markers=("toy_outside",),
        description="column < low OR column > high",
        role=ValueRole.COMPARED,
        sql="toy_outside",
        expand=_outside,
        object_operator="$toy_outside",
    )
    SQL_SPELLINGS["toy_outside"] = SqlSpelling(lower=_outside_sql, text="toy_outside")
    register_predicate(ToyBare, markers=("toy_bare",), role=ValueRole.TEXT)
    try:
        yield
    finally:
        unregister_predicate(ToyOutside)
        unregister_predicate(ToyBare)
        del SQL_SPELLINGS["toy_outside"]


def test_a_row_without_what_an_interpretation_needs_is_named_missing(toy: None) -> None:
    missing = [problem for cls in _interpretations() for problem in _missing(cls)]
    assert any("ArrowMask cannot interpret toy_bare" in problem for problem in missing)
    assert any("PlanCompiler cannot interpret toy_bare" in problem for problem in missing)
    assert not any("toy_outside" in problem for problem in missing)
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="q"),
        filter=ToyBare(column="body", text="x"),
    )
    assert predicate_columns(plan.filter) == {"body"}  # every row has its column
    with pytest.raises(UnsupportedOnDialectError, match="toy_bare"):
        to_sql(plan)
    with pytest.raises(UnvisitableNodeError, match="ArrowMask has no visit_toy_bare for ToyBare"):
        passing_rows(plan.filter, pa.table({"body": ["a"]}))


def test_a_toy_row_reaches_every_interpretation(toy: None) -> None:
    toy_filter = ToyOutside(column="year", low=2000, high=2010) & Comparison(
        column="lang", operator="=", value="en"
    )
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="q"), filter=toy_filter
    )
    assert "WHERE (year < 2000 OR year > 2010) AND lang = 'en'" in to_sql(plan, pretty=False)
    other = SearchPlan(
        source=plan.source, filter=ToyOutside(column="year", low=1, high=2) & toy_filter.operands[1]
    )
    assert "year < 1 OR year > 2" in to_sql(other, pretty=False)  # values bound, not shape

    document = plan_to_document(plan)
    assert document["filter"]["and"][0] == {"column": "year", "toy_outside": [2000, 2010]}
    assert plan_from_document(document) == plan
    alternatives = plan_json_schema()["$defs"]["predicate"]["oneOf"]
    assert any("toy_outside" in alternative["properties"] for alternative in alternatives)

    as_object = {"year": {"$toy_outside": [2000, 2010]}, "lang": "en"}
    assert filter_from_object(as_object) == toy_filter
    with pytest.raises(PlanError, match=r"expected a list of 2 values \[low, high\], got 1"):
        filter_from_object({"year": {"$toy_outside": [2000]}})
    operators = filter_object_schema()["additionalProperties"]["anyOf"][1]["properties"]
    assert operators["$toy_outside"]["minItems"] == 2
    assert "$toy_outside ([low, high])" in filter_object_schema()["description"]

    data = pa.table({"year": [1999, 2005, 2011, None], "lang": ["en", "en", "en", "en"]})
    assert passing_rows(toy_filter, data).tolist() == [True, False, True, False]
    rows = data.to_pylist()
    assert [_passes(toy_filter, row) for row in rows] == [True, False, True, None]
    assert turbopuffer_filter(Not(operand=ToyOutside(column="year", low=1, high=2))) == [
        "And",
        [["year", "Gte", 1], ["year", "NotEq", None], ["year", "Lte", 2], ["year", "NotEq", None]],
    ]
    with pytest.raises(PlanError, match="compares column 'year', which holds text values"):
        check_filter_values(toy_filter, {"year": ValueKind.TEXT, "lang": ValueKind.TEXT})
