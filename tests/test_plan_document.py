"""The JSON plan document: round trips, the schema, and every way a document can be wrong."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval.errors import PlanError, TableNameError
from hotdata_retrieval.plan.document import (
    PLAN_JSON_SCHEMA,
    plan_from_document,
    plan_to_document,
)
from hotdata_retrieval.plan.filters import And, Comparison, InList, IsNull, Not, Or
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    Bm25Search,
    DistanceMetric,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)
from tests.plans import PLANS
from tests.strategies import predicates, query_texts, vectors, word_texts

DOCS = Path(__file__).resolve().parent.parent / "docs"
VALIDATOR = jsonschema.Draft202012Validator(PLAN_JSON_SCHEMA)

TEXT = {"kind": "text", "column": "body", "query_text": "error E1234"}
NEAREST = {"kind": "nearest", "column": "embedding", "query_vector": [0.1, -0.5]}


def document(**overrides: Any) -> dict[str, Any]:
    """A valid hybrid document, with top-level keys replaced by ``overrides``."""
    base: dict[str, Any] = {"table": "docs", "branches": [dict(TEXT), dict(NEAREST)]}
    base.update(overrides)
    return base


def single(**overrides: Any) -> dict[str, Any]:
    """A valid one-branch (text) document."""
    base: dict[str, Any] = {"table": "docs", "branches": [dict(TEXT)]}
    base.update(overrides)
    return base


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


# -- strategies ---------------------------------------------------------------------------

names = st.none() | st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda name: name not in ("fused", "base")
)
tables = st.sampled_from(
    ["docs", "support.tickets", "F1.Public.Results", 'analytics."Support Tickets"']
)


def branch_strategy(table: str) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            Bm25Search,
            table=st.just(table),
            column=st.just("body"),
            query_text=word_texts,
            name=names,
            query_syntax=st.sampled_from(["text", "terms", "verbatim"]),
            allow_empty=st.booleans(),
        ),
        st.builds(
            VectorSearch,
            table=st.just(table),
            column=st.just("Body"),
            query_text=query_texts,
            name=names,
        ),
        st.builds(
            NearestNeighborSearch,
            table=st.just(table),
            column=st.just("embedding"),
            query_vector=vectors,
            metric=st.sampled_from(list(DistanceMetric)),
            name=names,
        ),
    )


@st.composite
def generated_plans(draw: st.DrawFn) -> SearchPlan:
    table = draw(tables)
    chosen = draw(
        st.lists(branch_strategy(table), min_size=1, max_size=3).filter(
            lambda bs: (
                len({b.name for b in bs if b.name is not None})
                == len([b for b in bs if b.name is not None])
            )
        )
    )
    limit = draw(st.integers(min_value=1, max_value=100))
    offset = draw(st.integers(min_value=0, max_value=50))
    source: Any = chosen[0]
    if len(chosen) > 1:
        weights = draw(
            st.none()
            | st.lists(
                st.integers(min_value=0, max_value=5)
                | st.floats(min_value=0, max_value=5, allow_nan=False),
                min_size=len(chosen),
                max_size=len(chosen),
            ).filter(lambda ws: any(w > 0 for w in ws))
        )
        source = ReciprocalRankFusion(
            branches=chosen,
            weights=weights,
            rank_constant=draw(
                st.integers(min_value=1, max_value=100)
                | st.floats(min_value=0.01, max_value=100, allow_nan=False)
            ),
            depth=draw(
                st.integers(min_value=limit + offset, max_value=500)
                if limit + offset > DEFAULT_DEPTH
                else st.none() | st.integers(min_value=limit + offset, max_value=500)
            ),
        )
    return SearchPlan(
        source=source,
        columns=draw(st.none() | st.sampled_from([["id"], ["id", "title"], ["Title", "lang"]])),
        limit=limit,
        offset=offset,
        filter=draw(st.none() | predicates),
        key_column=draw(st.sampled_from(["id", "doc_id", "Key Column"])),
        include_branch_scores=draw(st.booleans()),
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)


def _slots(data: Any, slots: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key-or-index) in a document tree."""
    if isinstance(data, dict):
        for key, value in data.items():
            slots.append((data, key))
            _slots(value, slots)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            slots.append((data, index))
            _slots(value, slots)
    return slots


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(through_json(plan_to_document(draw(generated_plans()))))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        slots = _slots(data, [])
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            container[key] = draw(json_values)
        elif action == "delete":
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.text(max_size=8))] = draw(json_values)
        else:
            container.append(draw(json_values))
    return data


# -- round trips --------------------------------------------------------------------------


@given(generated_plans())
def test_round_trip_through_json(plan: SearchPlan) -> None:
    data = through_json(plan_to_document(plan))
    back = plan_from_document(data)
    assert back == plan
    assert repr(back) == repr(plan)  # also keeps 1 vs 1.0 and True vs 1 apart
    assert back.branches[-1] == plan.branches[-1]


@given(generated_plans())
def test_documents_match_the_schema(plan: SearchPlan) -> None:
    VALIDATOR.validate(through_json(plan_to_document(plan)))


@given(generated_plans())
def test_encoding_is_a_fixed_point(plan: SearchPlan) -> None:
    data = plan_to_document(plan)
    assert plan_to_document(plan_from_document(data)) == data


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_example_plan_round_trips(name: str) -> None:
    plan = PLANS[name]
    assert plan_from_document(through_json(plan_to_document(plan))) == plan


@given(mutated_documents())
def test_a_damaged_document_raises_only_plan_error(data: Any) -> None:
    try:
        plan = plan_from_document(data)
    except PlanError as error:
        message = str(error)
        assert message and "\n" not in message
        return
    # Whatever the decoder accepts, the published schema accepts too.
    VALIDATOR.validate(data)
    assert isinstance(plan, SearchPlan)


@given(json_values)
def test_any_json_value_raises_only_plan_error(data: Any) -> None:
    with pytest.raises(PlanError):
        plan_from_document(data)


# -- decoding -----------------------------------------------------------------------------


def test_one_branch_is_a_single_branch_plan() -> None:
    plan = plan_from_document(single(limit=3, offset=2))
    assert plan.fusion is None
    assert plan.source == Bm25Search(table="docs", column="body", query_text="error E1234")
    assert (plan.limit, plan.offset) == (3, 2)


def test_several_branches_are_fused() -> None:
    plan = plan_from_document(
        document(fusion={"weights": [2, 0.5], "rank_constant": 10, "depth": 40})
    )
    assert plan.fusion == ReciprocalRankFusion(
        branches=[
            Bm25Search(table="docs", column="body", query_text="error E1234"),
            NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.1, -0.5]),
        ],
        weights=[2, 0.5],
        rank_constant=10,
        depth=40,
    )


def test_every_key() -> None:
    data = {
        "table": "support.tickets",
        "branches": [
            {"kind": "semantic", "column": "body", "query_text": "crash", "name": "meaning"},
            {
                "kind": "nearest",
                "column": "embedding",
                "query_vector": [1, 2.5],
                "metric": "ip",
                "name": "near",
                "table": "default.support.tickets",
            },
        ],
        "fusion": None,
        "columns": ["id", "title"],
        "limit": 7,
        "offset": 1,
        "filter": {
            "and": [
                {"column": "lang", "op": "=", "value": "en"},
                {
                    "or": [
                        {"column": "year", "op": ">=", "value": 2020},
                        {"column": "tag", "in": ["a", "b"]},
                    ]
                },
                {"column": "status", "not_in": ["spam"]},
                {"column": "deleted_at", "is_null": True},
                {"not": {"column": "owner", "is_null": False}},
            ]
        },
        "key_column": "ticket_id",
        "include_branch_scores": True,
    }
    plan = plan_from_document(data)
    table = TableName(catalog="default", schema="support", name="tickets")
    assert plan == SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                VectorSearch(table=table, column="body", query_text="crash", name="meaning"),
                NearestNeighborSearch(
                    table=table,
                    column="embedding",
                    query_vector=[1.0, 2.5],
                    metric=DistanceMetric.DOT,
                    name="near",
                ),
            ]
        ),
        columns=["id", "title"],
        limit=7,
        offset=1,
        filter=And(
            operands=[
                Comparison(column="lang", operator="=", value="en"),
                Or(
                    operands=[
                        Comparison(column="year", operator=">=", value=2020),
                        InList(column="tag", values=["a", "b"]),
                    ]
                ),
                InList(column="status", values=["spam"], negated=True),
                IsNull(column="deleted_at"),
                Not(operand=IsNull(column="owner", negated=True)),
            ]
        ),
        key_column="ticket_id",
        include_branch_scores=True,
    )
    VALIDATOR.validate(data)


def test_null_keys_take_their_defaults() -> None:
    data = single(
        columns=None,
        limit=None,
        offset=None,
        filter=None,
        key_column=None,
        include_branch_scores=None,
        fusion=None,
    )
    assert plan_from_document(data) == SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="error E1234")
    )


def test_default_catalog_and_schema_complete_table_names() -> None:
    plan = plan_from_document(single(), default_catalog="lake", default_schema="raw")
    assert plan.table == TableName(catalog="lake", schema="raw", name="docs")
    plan = plan_from_document(single(table="sales.docs"), default_catalog="lake")
    assert plan.table == TableName(catalog="lake", schema="sales", name="docs")


def test_branch_table_overrides_a_missing_top_level_table() -> None:
    data = {"branches": [dict(TEXT, table="a.b.c")]}
    assert plan_from_document(data).table == TableName(catalog="a", schema="b", name="c")


def test_tuples_are_arrays() -> None:
    data = {"table": "docs", "branches": (dict(NEAREST, query_vector=(1.0, 2.0)),)}
    branch = plan_from_document(data).branches[0]
    assert isinstance(branch, NearestNeighborSearch)
    assert branch.query_vector == (1.0, 2.0)


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot", "euclidean", "ip", "inner_product"])
def test_every_schema_metric_name_decodes(metric: str) -> None:
    data = document(branches=[dict(NEAREST, metric=metric)])
    branch = plan_from_document(data).branches[0]
    assert isinstance(branch, NearestNeighborSearch)
    assert branch.metric == DistanceMetric.parse(metric)
    assert metric in PLAN_JSON_SCHEMA["$defs"]["nearest_branch"]["properties"]["metric"]["enum"]


# -- encoding -----------------------------------------------------------------------------


def test_encoding_writes_every_key_and_the_qualified_table() -> None:
    plan = plan_from_document(document())
    assert plan_to_document(plan) == {
        "table": "default.public.docs",
        "branches": [
            {
                "kind": "text",
                "name": None,
                "column": "body",
                "query_text": "error E1234",
                "query_syntax": "text",
                "allow_empty": False,
                "result_name": None,
                "filter_through_key": False,
            },
            {
                "kind": "nearest",
                "name": None,
                "column": "embedding",
                "query_vector": [0.1, -0.5],
                "metric": "cosine",
                "exact": False,
                "result_name": None,
                "filter_through_key": False,
            },
        ],
        "fusion": {
            "weights": [1, 1],
            "rank_constant": 60,
            "depth": None,
            "min_score": None,
            "ranking": "competition",
        },
        "columns": None,
        "limit": 10,
        "offset": 0,
        "filter": None,
        "key_column": "id",
        "include_branch_scores": False,
        "tie_breakers": [],
        "score_name": "score",
        "include_vectors": False,
        "rows_from": None,
        "page_scores": [],
        "explain_scores": False,
        "steps": [],
        "group_by": None,
        "group_size": 1,
        "formula": None,
        "after": None,
        "facets": [],
    }


def test_single_branch_encoding_has_no_fusion() -> None:
    assert "fusion" not in plan_to_document(plan_from_document(single()))


def test_quoted_table_names_survive() -> None:
    plan = plan_from_document(single(table='analytics."Support Tickets"'))
    data = plan_to_document(plan)
    assert data["table"] == 'default.analytics."support tickets"'
    assert plan_from_document(data) == plan


def test_predicate_encoding() -> None:
    predicate = ~InList(column="a", values=[1, "x", True, 2.5], negated=True) | IsNull(
        column="b", negated=True
    )
    plan = SearchPlan(source=Bm25Search(table="t", column="c", query_text="q"), filter=predicate)
    assert plan_to_document(plan)["filter"] == {
        "or": [
            {"not": {"column": "a", "not_in": [1, "x", True, 2.5]}},
            {"column": "b", "is_null": False},
        ]
    }


# -- errors -------------------------------------------------------------------------------

ERRORS: list[tuple[str, Any, str]] = [
    ("not an object", ["docs"], r"^the plan document must be an object, got array$"),
    (
        "unknown top-level key",
        single(limt=5),
        r"^unknown key 'limt' in the plan document; expected one of table, branches,",
    ),
    (
        "missing branches",
        {"table": "docs"},
        r"^the plan document is missing the required key 'branches'$",
    ),
    (
        "branches not an array",
        single(branches={"kind": "text"}),
        r"^branches must be an array, got object$",
    ),
    ("no branches", single(branches=[]), r"^branches must hold at least one branch, got 0$"),
    (
        "branch not an object",
        single(branches=["text"]),
        r"^branches\[0\] must be an object, got string$",
    ),
    (
        "missing kind",
        single(branches=[{"column": "body"}]),
        r"^branches\[0\] is missing the required key 'kind'",
    ),
    (
        "unknown kind",
        single(branches=[dict(TEXT, kind="bm25")]),
        r"^branches\[0\]\.kind must be one of 'text', 'semantic', 'nearest', got 'bm25'",
    ),
    (
        "unhashable kind",
        single(branches=[dict(TEXT, kind=["text"])]),
        r"^branches\[0\]\.kind must be one of",
    ),
    (
        "unknown branch key",
        single(branches=[dict(TEXT, query_vector=[1])]),
        r"^unknown key 'query_vector' in branches\[0\] \(kind 'text'\)",
    ),
    (
        "missing column",
        single(branches=[{"kind": "text", "query_text": "q"}]),
        r"^branches\[0\] is missing the required key 'column'",
    ),
    (
        "missing query_text",
        single(branches=[{"kind": "semantic", "column": "body"}]),
        r"^branches\[0\] is missing the required key 'query_text'",
    ),
    (
        "missing query_vector",
        document(branches=[{"kind": "nearest", "column": "e"}]),
        r"^branches\[0\] is missing the required key 'query_vector'",
    ),
    ("no table anywhere", {"branches": [dict(TEXT)]}, r"^branches\[0\] has no table"),
    (
        "table not a string",
        single(table=5),
        r"^table must be a table name or an array of table names, got number$",
    ),
    ("four-part table", single(table="a.b.c.d"), r"^table name 'a\.b\.c\.d' has 4 parts"),
    (
        "four-part branch table",
        single(branches=[dict(TEXT, table="a.b.c.d")]),
        r"^branches\[0\]\.table: table name 'a\.b\.c\.d' has 4 parts",
    ),
    (
        "empty query text",
        single(branches=[dict(TEXT, query_text="  ")]),
        r"^branches\[0\]: query_text must not be empty",
    ),
    (
        "query text not a string",
        single(branches=[dict(TEXT, query_text=3)]),
        r"^branches\[0\]: query_text must be a string, got 3",
    ),
    (
        "bad column",
        single(branches=[dict(TEXT, column='a"b')]),
        r"^branches\[0\]: text column must not contain a double quote",
    ),
    (
        "bad branch name",
        single(branches=[dict(TEXT, name="Text")]),
        r"^branches\[0\]: branch name must match",
    ),
    (
        "vector not an array",
        document(branches=[dict(NEAREST, query_vector="[1]")]),
        r"^branches\[0\]: query_vector must be an array, got string$",
    ),
    (
        "empty vector",
        document(branches=[dict(NEAREST, query_vector=[])]),
        r"^branches\[0\]: query_vector must not be empty$",
    ),
    (
        "string in vector",
        document(branches=[dict(NEAREST, query_vector=[1, "2"])]),
        r"^branches\[0\]: query_vector must hold numbers; position 2 of 2 is string '2'$",
    ),
    (
        "boolean in vector",
        document(branches=[dict(NEAREST, query_vector=[True])]),
        r"^branches\[0\]: query_vector must hold numbers; position 1 of 1 is boolean True$",
    ),
    (
        "NaN in vector",
        document(branches=[dict(NEAREST, query_vector=[1.0, float("nan")])]),
        r"^branches\[0\]: query_vector must hold finite numbers; position 2 of 2 is nan$",
    ),
    (
        "unknown metric",
        document(branches=[dict(NEAREST, metric="hamming")]),
        r"^branches\[0\]: metric must be one of cosine, l2, dot, euclidean, ip, inner_product, "
        r"got 'hamming'$",
    ),
    (
        "upper-case metric",
        document(branches=[dict(NEAREST, metric="COSINE")]),
        r"^branches\[0\]: metric must be one of .* got 'COSINE'$",
    ),
    (
        "fusion with one branch",
        single(fusion={"rank_constant": 10}),
        r"^'fusion' needs at least two branches",
    ),
    ("fusion not an object", document(fusion=[1, 1]), r"^fusion must be an object, got array$"),
    (
        "unknown fusion key",
        document(fusion={"k": 60}),
        r"^unknown key 'k' in fusion; expected one of weights, rank_constant, depth, "
        r"min_score, ranking$",
    ),
    (
        "weights not an array",
        document(fusion={"weights": 1}),
        r"^fusion\.weights must be an array, got number$",
    ),
    (
        "weight not a number",
        document(fusion={"weights": [1, "2"]}),
        r"^fusion\.weights\[1\] must be a number, got string$",
    ),
    (
        "weights count mismatch",
        document(fusion={"weights": [1, 1, 1]}),
        r"^fusion: weights holds 3 values for 2 branches",
    ),
    (
        "negative weight",
        document(fusion={"weights": [1, -1]}),
        r"^fusion: weight must be >= 0, got -1$",
    ),
    (
        "all weights zero",
        document(fusion={"weights": [0, 0]}),
        r"^fusion: at least one weight must be > 0",
    ),
    (
        "rank constant zero",
        document(fusion={"rank_constant": 0}),
        r"^fusion: rank_constant must be > 0, got 0$",
    ),
    (
        "rank constant a string",
        document(fusion={"rank_constant": "60"}),
        r"^fusion: rank_constant must be a number, got '60'$",
    ),
    (
        "depth a float",
        document(fusion={"depth": 20.0}),
        r"^fusion: depth must be an integer, got 20\.0$",
    ),
    (
        "depth below the page",
        document(fusion={"depth": 5}, limit=10),
        r"^limit \+ offset = 10 reaches past depth 5",
    ),
    (
        "duplicate branch names",
        document(branches=[dict(TEXT, name="a"), dict(NEAREST, name="a")]),
        r"^fusion: branch names must be unique, 'a' is used twice$",
    ),
    (
        "a union of one table",
        document(table=["docs"]),
        r"^a table union needs at least two tables, got 1",
    ),
    (
        "a union member not a string",
        document(table=["docs", 3]),
        r"^table\[1\] must be a table name or an array of table names, got number$",
    ),
    (
        "filter through the key of its own table",
        document(branches=[dict(TEXT), dict(NEAREST, filter_through_key=True)]),
        r"^branch 'nearest' filters through the key of 'default\.public\.docs'",
    ),
    ("limit zero", single(limit=0), r"^limit must be >= 1, got 0$"),
    ("limit a float", single(limit=10.0), r"^limit must be an integer, got 10\.0$"),
    ("limit a boolean", single(limit=True), r"^limit must be an integer, got True$"),
    ("negative offset", single(offset=-1), r"^offset must be >= 0, got -1$"),
    ("columns not an array", single(columns="id,body"), r"^columns must be an array, got string$"),
    ("empty columns", single(columns=[]), r"^columns must not be empty$"),
    ("column not a string", single(columns=["id", 3]), r"^column must be a string, got 3$"),
    ("duplicated column", single(columns=["id", "ID"]), r"^column 'id' is projected twice$"),
    ("key column not a string", single(key_column=1), r"^key column must be a string, got 1$"),
    (
        "flag not a boolean",
        single(include_branch_scores="yes"),
        r"^include_branch_scores must be true or false, got 'yes'$",
    ),
    (
        "filter not an object",
        single(filter="lang = 'en'"),
        r"^filter must be an object, got string$",
    ),
    ("empty filter", single(filter={}), r"^filter must be one of .*; found no keys$"),
    (
        "filter without a test",
        single(filter={"column": "a"}),
        r"^filter must be one of .*; found 'column'$",
    ),
    (
        "filter with two tests",
        single(filter={"column": "a", "in": [1], "is_null": True}),
        r"^filter must be one of .*; found 'column', 'in', 'is_null'$",
    ),
    (
        "unknown comparison key",
        single(filter={"column": "a", "op": "=", "value": 1, "x": 2}),
        r"^unknown key 'x' in filter",
    ),
    (
        "missing comparison value",
        single(filter={"column": "a", "op": "="}),
        r"^filter is missing the required key 'value'$",
    ),
    (
        "unknown operator",
        single(filter={"column": "a", "op": "~", "value": 1}),
        r"^filter: unknown comparison operator '~'",
    ),
    (
        "operator not a string",
        single(filter={"column": "a", "op": ["="], "value": 1}),
        r"^filter: op must be a string, got array$",
    ),
    (
        "null value",
        single(filter={"column": "a", "op": "=", "value": None}),
        r"^filter: value must not be null; test for NULL with",
    ),
    (
        "object value",
        single(filter={"column": "a", "op": "=", "value": {}}),
        r'^filter: value must be a string, number, boolean, \{"date": \.\.\.\}, '
        r'\{"timestamp": \.\.\.\} or \{"decimal": \.\.\.\}, got object$',
    ),
    (
        "huge integer",
        single(filter={"column": "a", "op": "=", "value": 2**64}),
        r"^filter: filter value must fit in a signed 64-bit integer",
    ),
    (
        "in not an array",
        single(filter={"column": "a", "in": "x"}),
        r"^filter: in must be an array, got string$",
    ),
    (
        "null in a list",
        single(filter={"column": "a", "not_in": [1, None]}),
        r"^filter: not_in\[1\] must not be null",
    ),
    (
        "is_null not a boolean",
        single(filter={"column": "a", "is_null": 1}),
        r"^filter: is_null must be true or false, got 1$",
    ),
    (
        "bad filter column",
        single(filter={"column": "", "is_null": True}),
        r"^filter: filter column must not be empty$",
    ),
    (
        "connective with company",
        single(filter={"and": [], "column": "a"}),
        r"^filter: 'and' must be the only key of its object, found 'column' beside it$",
    ),
    (
        "and not an array",
        single(filter={"and": {"column": "a", "is_null": True}}),
        r"^filter\.and must be an array, got object$",
    ),
    (
        "and with one operand",
        single(filter={"or": [{"column": "a", "is_null": True}]}),
        r"^filter\.or needs at least two operands, got 1$",
    ),
    (
        "nested bad operand",
        single(
            filter={
                "and": [{"column": "a", "is_null": True}, {"not": {"column": "b", "like": "x"}}]
            }
        ),
        r"^filter\.and\[1\]\.not must be one of .*; found 'column', 'like'$",
    ),
    (
        "vector column filtered",
        document(filter={"column": "embedding", "is_null": False}),
        r"^filter column 'embedding' is a searched vector column$",
    ),
    (
        "non-string key",
        {1: "x", "branches": [dict(TEXT)], "table": "docs"},
        r"^the plan document has a non-string key 1$",
    ),
]


@pytest.mark.parametrize(
    ("data", "pattern"),
    [pytest.param(data, pattern, id=case) for case, data, pattern in ERRORS],
)
def test_errors_name_the_bad_value(data: Any, pattern: str) -> None:
    with pytest.raises(PlanError) as caught:
        plan_from_document(data)
    message = str(caught.value)
    assert re.search(pattern, message), message
    assert "\n" not in message


def test_table_errors_keep_their_type() -> None:
    with pytest.raises(TableNameError):
        plan_from_document(single(branches=[dict(TEXT, table="a..b")]))


def test_deeply_nested_filters_raise_plan_error() -> None:
    deep: dict[str, Any] = {"column": "a", "is_null": True}
    for _ in range(5000):
        deep = {"not": deep}
    with pytest.raises(PlanError, match="nested too deeply"):
        plan_from_document(single(filter=deep))


# -- the schema ---------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(PLAN_JSON_SCHEMA)
    assert PLAN_JSON_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_is_plain_json() -> None:
    assert through_json(PLAN_JSON_SCHEMA) == PLAN_JSON_SCHEMA


@pytest.mark.parametrize(
    "data",
    [
        single(limt=5),
        single(branches=[]),
        single(branches=[dict(TEXT, kind="bm25")]),
        single(filter={"column": "a", "op": "=", "value": None}),
        single(filter={"column": "a", "in": [1], "is_null": True}),
        document(branches=[dict(NEAREST, query_vector=[])]),
        document(branches=[dict(NEAREST, metric="hamming")]),
        single(limit=0),
    ],
)
def test_schema_rejects_what_the_decoder_rejects(data: Any) -> None:
    assert not VALIDATOR.is_valid(data)
    with pytest.raises(PlanError):
        plan_from_document(data)


def test_docs_embed_the_current_schema() -> None:
    text = (DOCS / "plans.md").read_text(encoding="utf-8")
    marker = "<!-- schema: generated by `hdq explain --print-schema` -->"
    assert marker in text, "docs/plans.md lost its schema marker"
    block = text.split(marker, 1)[1]
    match = re.search(r"```json\n(.*?)\n```", block, re.DOTALL)
    assert match is not None
    assert json.loads(match.group(1)) == PLAN_JSON_SCHEMA, (
        "docs/plans.md is out of date: paste the output of `hdq explain --print-schema`"
    )


def test_docs_examples_decode() -> None:
    text = (DOCS / "plans.md").read_text(encoding="utf-8")
    block = text.split("<!-- schema:", 1)[0]
    examples = re.findall(r"```json\n(.*?)\n```", block, re.DOTALL)
    assert len(examples) >= 3
    for example in examples:
        data = json.loads(example)
        VALIDATOR.validate(data)
        plan_from_document(data)


@pytest.mark.parametrize("value", [[], {}, 0, "", False])
def test_an_enumerated_option_of_the_wrong_type_is_refused_as_the_schema_refuses_it(
    value: Any,
) -> None:
    """A falsy value is no default: the decoder refuses what the schema refuses."""
    branch = {"kind": "text", "column": "body", "query_text": "q", "query_syntax": value}
    document = {"table": "docs", "branches": [branch]}
    assert list(VALIDATOR.iter_errors(document))
    with pytest.raises(PlanError, match="query_syntax must be one of"):
        plan_from_document(document)
