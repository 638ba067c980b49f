"""A ``decimal.Decimal`` filter literal is exact through every door a filter comes in by and
every form it is written in: a predicate, a filter object, filter text (a number with more
digits than a float holds is read as the decimal it writes, not as the float it rounds to),
a plan document (``{"decimal": "1.59"}``, JSON having no exact decimal) and the SQL of every
dialect (a cast of its text to a ``DECIMAL`` type, built through sqlglot), which filter text
reads back. A decimal that is not finite, or of more digits than a ``Decimal128`` holds, is a
``PlanError`` naming it. The reference is ``decimal.Decimal`` itself: the value read is equal
to the one written and has its type.
"""

from __future__ import annotations

import decimal
import json
from typing import Any

import jsonschema
import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import NearestNeighborSearch, PlanError, SearchPlan, to_sql
from hotdata_retrieval.compile import get_dialect, known_dialects
from hotdata_retrieval.compile.filter_text import filter_sql, parse_filter
from hotdata_retrieval.compile.turbopuffer import turbopuffer_filter
from hotdata_retrieval.engines._integer_literals import decimal_predicate
from hotdata_retrieval.plan.document import plan_from_document, plan_json_schema, plan_to_document
from hotdata_retrieval.plan.filters import Between, Comparison, InList, Predicate
from hotdata_retrieval.plan.values import decimal_digits
from hotdata_retrieval.routing import read_filter

D = decimal.Decimal
EXACT = D("1.5000000000000000000001")
"""A decimal no float is: the float nearest it is 1.5."""


def _plan(predicate: Predicate) -> SearchPlan:
    return SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
        limit=3,
        filter=predicate,
    )


_DECIMALS = st.builds(
    lambda units, exponent: D(units).scaleb(exponent),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-7, max_value=4),
)
"""Finite decimals of at most 38 digits, before and after the point."""


@given(value=_DECIMALS)
def test_a_decimal_reads_back_from_every_form_it_is_written_in(value: D) -> None:
    predicate = Comparison(column="price", operator=">=", value=value)
    assert type(predicate.value) is D and predicate.value == value
    document = json.loads(json.dumps(plan_to_document(_plan(predicate))))
    jsonschema.Draft202012Validator(plan_json_schema()).validate(document)
    read = plan_from_document(document).filter
    assert isinstance(read, Comparison) and type(read.value) is D and read.value == value
    text = parse_filter(filter_sql(predicate))
    assert isinstance(text, Comparison) and type(text.value) is D and text.value == value


def test_filter_text_reads_a_number_no_float_is_as_the_decimal_it_writes() -> None:
    exact = read_filter("price = 1.5000000000000000000001")
    assert isinstance(exact, Comparison) and exact.value == EXACT and type(exact.value) is D
    negative = read_filter("price > -0.12345678901234567890")
    assert isinstance(negative, Comparison) and negative.value == D("-0.12345678901234567890")
    listed = read_filter("price IN (0.1, 2.5, 1.5000000000000000000001)")
    assert isinstance(listed, InList)
    assert [type(value) for value in listed.values] == [float, float, D]
    floats = read_filter("price BETWEEN 0.1 AND 1e-3")
    assert isinstance(floats, Between) and (floats.low, floats.high) == (0.1, 0.001)
    assert type(floats.low) is float


def test_a_decimal_of_38_digits_keeps_every_digit() -> None:
    """Python's decimal arithmetic rounds to 28 digits by default: negating filter text's
    number or stepping to a column's next value must not."""
    negative = read_filter("price = -1234567890123456789.1234567890123456789")
    assert isinstance(negative, Comparison)
    assert negative.value == D("-1234567890123456789.1234567890123456789")
    between = D("12345678901234567.123456789012345678905")  # 38 digits, 21 after the point
    assert decimal_digits(between) == (38, 21)
    node = decimal_predicate(Comparison(column="fine", operator=">", value=between), 18, 20)
    above = between.quantize(D(1).scaleb(-20), rounding=decimal.ROUND_CEILING,
                             context=decimal.Context(prec=50))  # fmt: skip
    assert isinstance(node, Comparison) and node.operator.value == ">=" and node.value == above


def test_a_filter_object_takes_a_decimal_as_it_is() -> None:
    found = read_filter({"price": {"$gte": EXACT, "$in": [D("2.25"), 3]}})
    values = [value for node in found.operands for value in _values(node)]  # type: ignore[attr-defined]
    assert EXACT in values and all(type(value) is not float for value in values)


def _values(node: Any) -> list[Any]:
    return list(node.values) if isinstance(node, InList) else [node.value]


BUILT_IN_DIALECTS = (
    "duckdb",
    "hotdata",
    "hotdata-native",
    "postgres",
    "sqlite",
    "sqlite-before-3.39",
)
"""The library's own dialects (another test registers a toy one)."""


def test_the_built_in_dialects_are_every_one() -> None:
    assert set(BUILT_IN_DIALECTS) <= set(known_dialects())


@pytest.mark.parametrize("dialect", BUILT_IN_DIALECTS)
def test_every_dialect_writes_the_decimal_exactly_through_sqlglot(dialect: str) -> None:
    """The decimal's own text, cast to the dialect's decimal type (SQLite, which has none and
    holds no decimal column, to its ``REAL`` affinity: a SQLite store compares a decimal with
    its columns' own types, folded before the SQL is written)."""
    profile = get_dialect(dialect)
    sql = to_sql(_plan(Comparison(column="price", operator="=", value=EXACT)), dialect)
    parsed = sqlglot.parse_one(sql, read=profile.sqlglot_dialect)
    casts = [
        cast
        for cast in parsed.find_all(sqlglot.exp.Cast)
        if isinstance(cast.this, sqlglot.exp.Literal)
        and cast.this.is_string
        and cast.to.is_type("decimal", "double")
    ]
    written = [cast for cast in casts if cast.this.this == "1.5000000000000000000001"]
    assert len(written) == 1, sql
    expected = "double" if dialect.startswith("sqlite") else "decimal"
    assert written[0].to.is_type(expected), written[0].to.sql()


def test_a_turbopuffer_filter_sends_a_decimal_as_a_number() -> None:
    assert turbopuffer_filter(Comparison(column="price", operator="=", value=D("2.5"))) == [
        "price",
        "Eq",
        2.5,
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (D("NaN"), "must be finite"),
        (D("-Infinity"), "must be finite"),
        (D("1" * 39), "at most 38 digits"),
        (D("0." + "1" * 39), "at most 38 digits"),
        (D("1E+38"), r"at most 38 digits written out in full .* which has 39 written out"),
    ],
    ids=str,
)
def test_a_decimal_no_engine_compares_is_refused_naming_it(value: D, message: str) -> None:
    with pytest.raises(PlanError, match=message) as caught:
        Comparison(column="price", operator="=", value=value)
    assert caught.value.value is value or caught.value.value == value


@pytest.mark.parametrize("text", ['{"decimal": "1e3"}', '{"decimal": 1.5}', '{"decimal": "."}'])
def test_a_plan_document_decimal_must_be_plain_digits(text: str) -> None:
    document = plan_to_document(_plan(Comparison(column="price", operator="=", value=1)))
    document["filter"]["value"] = json.loads(text)
    with pytest.raises(PlanError, match="decimal"):
        plan_from_document(document)


def test_a_negative_zero_decimal_is_zero() -> None:
    node = Comparison(column="price", operator="=", value=D("-0.00"))
    assert str(node.value) == "0.00"
