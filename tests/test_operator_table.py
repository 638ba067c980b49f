"""The operator table: every interpretation of the filter language has a method for every
registered operator, and an operator added from outside the library reaches every door by
registering it and its interpretations — no library file touched.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from sqlglot import exp

import hotdata_retrieval
from hotdata_retrieval import Bm25Search, SearchPlan, to_sql
from hotdata_retrieval.plan.document import plan_from_document, plan_json_schema, plan_to_document
from hotdata_retrieval.plan.filters import (
    PredicateVisitor,
    predicate_forms,
    register_predicate,
    unregister_predicate,
)
from hotdata_retrieval.plan.visitor import UnvisitableNodeError


def _import_everything() -> None:
    """Import every module of the package, so every interpretation is defined."""
    for module in pkgutil.walk_packages(hotdata_retrieval.__path__, "hotdata_retrieval."):
        if module.name.endswith("__main__") or module.name.endswith("._sql_worker"):
            continue
        importlib.import_module(module.name)


def _interpretations() -> list[type]:
    _import_everything()
    found: list[type] = []
    pending = list(PredicateVisitor.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("hotdata_retrieval."):
            found.append(cls)
    return sorted(set(found), key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _missing(cls: type) -> list[str]:
    return [
        f"{cls.__module__}.{cls.__qualname__} lacks visit_{name}"
        for name in predicate_forms()
        if not callable(getattr(cls, f"visit_{name}", None))
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
        "in_list",
        "is_null",
        "starts_with",
        "contains_all",
        "contains_any",
        "and",
        "or",
        "not",
    ]


# -- a toy operator, from outside the library -------------------------------------------


@attrs.frozen(kw_only=True)
class EndsWith:
    """``column`` ends with ``suffix``: the toy operator."""

    visit_name: ClassVar[str] = "ends_with"

    column: str
    suffix: str = attrs.field(metadata={"bound": True})

    def __and__(self, other: Any) -> Any:
        from hotdata_retrieval.plan.filters import And

        return And(operands=(self, other))


def _ends_with_sql(self: Any, node: EndsWith) -> exp.Expr:
    return exp.Anonymous(
        this="ends_with",
        expressions=[exp.column(node.column), self.binder.literal(node, "suffix")],
    )


def _ends_with_mask(self: Any, node: EndsWith) -> pa.Array:
    return pc.ends_with(self.data.column(node.column), pattern=node.suffix)


TOY_METHODS: dict[str, Any] = {
    "PlanCompiler": _ends_with_sql,
    "_PredicateDocument": lambda self, node: {"column": node.column, "ends_with": node.suffix},
    "_Columns": lambda self, node: self.columns.add(node.column),
    "_Truth": lambda self, node: (
        None if self.row[node.column] is None else self.row[node.column].endswith(node.suffix)
    ),
    "ArrowMask": _ends_with_mask,
    "_FilterValues": lambda self, node: None,
    "_TypedValues": lambda self, node: node,
    "_Translation": lambda self, node, negated: [node.column, "Glob", f"*{node.suffix}"],
    "_MaskedAsSql": lambda self, node: True,
}


@pytest.fixture
def toy() -> Iterator[dict[str, type]]:
    classes = {cls.__qualname__: cls for cls in _interpretations()}
    register_predicate(
        EndsWith,
        markers=("ends_with",),
        from_document=lambda fields, _: EndsWith(
            column=fields.column, suffix=fields.string("ends_with")
        ),
        document_schema=(
            {
                "type": "object",
                "properties": {
                    "column": {"$ref": "#/$defs/identifier"},
                    "ends_with": {"type": "string"},
                },
                "required": ["column", "ends_with"],
                "additionalProperties": False,
            },
        ),
    )
    try:
        yield classes
    finally:
        for name in TOY_METHODS:
            if "visit_ends_with" in vars(classes[name]):
                delattr(classes[name], "visit_ends_with")
        unregister_predicate(EndsWith)


def test_a_registered_operator_without_its_methods_is_named_missing(
    toy: dict[str, type],
) -> None:
    missing = [problem for cls in toy.values() for problem in _missing(cls)]
    assert any("ArrowMask lacks visit_ends_with" in problem for problem in missing)
    with pytest.raises(UnvisitableNodeError, match="has no visit_ends_with for EndsWith"):
        SearchPlan(  # reading the filter's columns is the first interpretation it meets
            source=Bm25Search(table="docs", column="body", query_text="q"),
            filter=EndsWith(column="body", suffix="x"),
        )


def test_a_toy_operator_reaches_sql_documents_and_the_row_mask(toy: dict[str, type]) -> None:
    for name, method in TOY_METHODS.items():
        toy[name].visit_ends_with = method  # type: ignore[attr-defined]
    missing = [problem for cls in toy.values() for problem in _missing(cls)]
    # The library's interpretations all have it now; store compilers inherit the SQL.
    assert missing == []
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="q"),
        filter=EndsWith(column="body", suffix="fox") & EndsWith(column="title", suffix="!"),
    )
    assert "ends_with(body, 'fox') AND ends_with(title, '!')" in to_sql(plan, pretty=False)
    document = plan_to_document(plan)
    assert document["filter"]["and"][0] == {"column": "body", "ends_with": "fox"}
    assert plan_from_document(document) == plan
    alternatives = plan_json_schema()["$defs"]["predicate"]["oneOf"]
    assert any("ends_with" in alternative["properties"] for alternative in alternatives)

    from hotdata_retrieval.engines.local.masks import passing_rows

    data = pa.table({"body": ["red fox", "blue sea", None], "title": ["a!", "b!", "c"]})
    assert passing_rows(plan.filter, data).tolist() == [True, False, False]
