"""The filter object form (``plan.filter_objects``): each operator's node, the shapes
LangChain, LlamaIndex, Chroma and retrieval-bridge pass, one error per bad key, operator or
value naming where it is, and a schema that agrees with the parser.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import numpy
import pytest
from jsonschema import Draft202012Validator

from hotdata_retrieval import PlanError
from hotdata_retrieval.plan.filter_objects import (
    FILTER_OBJECT_OPERATORS,
    FILTER_OBJECT_SCHEMA,
    filter_from_object,
)
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Comparison,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    StartsWith,
)

VALIDATOR = Draft202012Validator(FILTER_OBJECT_SCHEMA)

PARSED: list[tuple[dict[str, Any], Any]] = [
    ({"status": "open"}, Comparison(column="status", operator="=", value="open")),
    ({"n": {"$eq": 1}}, Comparison(column="n", operator="=", value=1)),
    ({"n": {"$ne": 1}}, Comparison(column="n", operator="!=", value=1)),
    ({"n": {"$gt": 1.5}}, Comparison(column="n", operator=">", value=1.5)),
    ({"n": {"$gte": 1}}, Comparison(column="n", operator=">=", value=1)),
    ({"n": {"$lt": 1}}, Comparison(column="n", operator="<", value=1)),
    ({"n": {"$lte": 1}}, Comparison(column="n", operator="<=", value=1)),
    ({"n": {"$in": [1, 2]}}, InList(column="n", values=[1, 2])),
    ({"n": {"$nin": []}}, InList(column="n", values=[], negated=True)),
    ({"n": {"$exists": True}}, IsNull(column="n", negated=True)),
    ({"n": {"$exists": False}}, IsNull(column="n")),
    ({"t": {"$starts_with": "ab%"}}, StartsWith(column="t", prefix="ab%")),
    ({"t": {"$like": "ab\\%%"}}, StartsWith(column="t", prefix="ab%")),
    ({"tags": {"$all": ["a", "b"]}}, ContainsAll(column="tags", values=["a", "b"])),
    ({"tags": {"$any": ["a"]}}, ContainsAny(column="tags", values=["a"])),
    ({"tags": {"$contains": "a"}}, ContainsAny(column="tags", values=["a"])),
    ({"flag": True}, Comparison(column="flag", operator="=", value=True)),
    (
        {"day": {"$gte": datetime.date(2024, 3, 1)}},
        Comparison(column="day", operator=">=", value=datetime.date(2024, 3, 1)),
    ),
    (
        {"n": {"$gte": 1, "$lt": 5}},
        And(
            operands=[
                Comparison(column="n", operator=">=", value=1),
                Comparison(column="n", operator="<", value=5),
            ]
        ),
    ),
    (
        {"$or": [{"a": 1}, {"b": 2}]},
        Or(
            operands=[
                Comparison(column="a", operator="=", value=1),
                Comparison(column="b", operator="=", value=2),
            ]
        ),
    ),
    ({"$not": {"a": 1}}, Not(operand=Comparison(column="a", operator="=", value=1))),
    ({"$and": [{"a": 1}]}, Comparison(column="a", operator="=", value=1)),
    ({}, None),
]


@pytest.mark.parametrize(("value", "expected"), PARSED)
def test_each_form_is_its_node(value: dict[str, Any], expected: Any) -> None:
    assert filter_from_object(value) == expected


def test_none_is_no_filter() -> None:
    assert filter_from_object(None) is None


@pytest.mark.parametrize(
    "value",
    [
        # LangChain's structured query translators and retrievers
        {"$and": [{"genre": {"$eq": "drama"}}, {"year": {"$gt": 1990}}]},
        # Chroma
        {"$or": [{"color": "red"}, {"color": {"$in": ["blue", "green"]}}]},
        # retrieval-bridge's command: plan tier and status
        {"plan_tier": "pro", "status": {"$ne": "closed"}},
        # LlamaIndex's MetadataFilters as a JSON object
        {"$and": [{"tags": {"$contains": "billing"}}, {"$not": {"rating": {"$lt": 3}}}]},
    ],
)
def test_the_shapes_agents_and_frameworks_pass_parse_and_validate(value: dict[str, Any]) -> None:
    assert filter_from_object(value) is not None
    assert VALIDATOR.is_valid(value)


ERRORS: list[tuple[Any, str]] = [
    ({"a": {"$regex": "x"}}, r"^filter\.a: unknown operator '\$regex'; the operators are \$eq"),
    ({"$nor": [{"a": 1}]}, r"^filter: unknown key '\$nor': a key is a column, or one of \$and"),
    ({"a": None}, r"^filter\.a: null is no value; test for NULL with \{\"\$exists\": false\}"),
    ({"a": {"$gt": [1]}}, r"^filter\.a\.\$gt: expected text, a number or a boolean, got an array"),
    ({"a": {"$in": 3}}, r"^filter\.a\.\$in: expected a list, got a number"),
    ({"a": {"$in": [1, None]}}, r"^filter\.a\.\$in\[1\]: null is no value"),
    ({"a": {"$exists": "yes"}}, r"^filter\.a\.\$exists: expected true or false, got a string"),
    ({"a": {"$like": "%x%"}}, r"^filter\.a\.\$like: '%x%' is not a prefix pattern"),
    ({"a": {"$starts_with": 3}}, r"^filter\.a\.\$starts_with: expected text, got a number"),
    ({"a": {}}, r"^filter\.a: an operator object needs at least one operator"),
    ({"$or": []}, r"^filter\.\$or: expected a non-empty list of objects, got an array"),
    ({"$or": [{"a": 1}, 3]}, r"^filter\.\$or\[1\]: expected an object, got a number"),
    ({"$not": {}}, r"^filter\.\$not: \$not of an empty object negates nothing"),
    ({"$and": [{"b": {"$gt": 1, "$oops": 2}}]}, r"^filter\.\$and\[0\]\.b: unknown operator"),
    ([1], r"^filter: expected an object, got an array"),
    ({"a": {"$gt": float("nan")}}, r"^filter\.a\.\$gt: .*finite"),
    ({"": 1}, r"^filter: a key must be a column name"),
]


@pytest.mark.parametrize(("value", "pattern"), ERRORS)
def test_a_bad_key_operator_or_value_is_one_error_naming_where(value: Any, pattern: str) -> None:
    with pytest.raises(PlanError) as caught:
        filter_from_object(value)
    message = str(caught.value)
    assert re.search(pattern, message), message
    assert "\n" not in message


def test_nesting_past_the_limit_is_refused_before_it_is_read() -> None:
    deep: dict[str, Any] = {"a": 1}
    for _ in range(MAX_FILTER_DEPTH + 1):
        deep = {"$not": deep}
    with pytest.raises(PlanError, match="nested too deeply"):
        filter_from_object(deep)


def test_the_schema_names_every_operator() -> None:
    column = FILTER_OBJECT_SCHEMA["additionalProperties"]["anyOf"][1]["properties"]
    assert sorted(column) == sorted(FILTER_OBJECT_OPERATORS)
    assert not VALIDATOR.is_valid({"a": {"$regex": "x"}})
    assert not VALIDATOR.is_valid({"a": None})


def test_an_empty_object_in_or_is_refused_rather_than_dropped() -> None:
    # {} matches every row, so the $or would always hold; dropping it would narrow the match.
    with pytest.raises(PlanError, match=r"filter\.\$or\[0\]: an empty object in \$or"):
        filter_from_object({"$or": [{}, {"id": 1}]})
    # In $and an empty object holds for every row, so leaving it out keeps the meaning.
    assert filter_from_object({"$and": [{}, {"id": 1}]}) == filter_from_object({"id": 1})


def test_numpy_numbers_and_booleans_are_values_as_their_python_ones() -> None:
    assert filter_from_object(
        {"n": numpy.int64(3), "m": {"$in": [numpy.uint8(1), numpy.float32(0.5)]}}
    ) == filter_from_object({"n": 3, "m": {"$in": [1, 0.5]}})
    assert filter_from_object({"open": numpy.bool_(True)}) == filter_from_object({"open": True})
    assert filter_from_object({"n": {"$exists": numpy.bool_(False)}}) == filter_from_object(
        {"n": {"$exists": False}}
    )


def test_a_numpy_unsigned_integer_past_the_signed_range_names_it() -> None:
    with pytest.raises(
        PlanError, match=r"must fit in a signed 64-bit integer .* got .*9223372036854775808"
    ):
        filter_from_object({"n": numpy.uint64(2**63)})
