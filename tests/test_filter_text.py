"""SQL filter text → the typed predicate tree."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from hotdata_retrieval.compile import compile_plan
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
)
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan
from tests.strategies import literals, predicates


def eq(column: str, operator: str, value: Any) -> Comparison:
    return Comparison(column=column, operator=operator, value=value)


def rendered(predicate: Predicate) -> str:
    """The filter's SQL as the compiler writes it in a WHERE clause."""
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0]),
        filter=predicate,
    )
    where = compile_plan(plan).find(exp.Where)
    assert where is not None
    return str(where.this.sql(dialect="hotdata"))


def has_empty_list(predicate: Predicate) -> bool:
    if isinstance(predicate, (And, Or)):
        return any(has_empty_list(operand) for operand in predicate.operands)
    if isinstance(predicate, Not):
        return has_empty_list(predicate.operand)
    return isinstance(predicate, InList) and not predicate.values


def canonical(predicate: Predicate) -> Predicate:
    """The tree ``rendered(predicate)`` reads back as: ``Not(InList)`` is written
    ``NOT a IN (...)``, which is ``InList(negated=True)``; an AND inside an AND (an OR inside
    an OR) is written as one chain."""
    if isinstance(predicate, (And, Or)):
        connective = type(predicate)
        operands: list[Predicate] = []
        for operand in map(canonical, predicate.operands):
            if isinstance(operand, connective):
                operands.extend(operand.operands)
            else:
                operands.append(operand)
        return connective(operands=operands)
    if isinstance(predicate, Not):
        operand = predicate.operand
        if isinstance(operand, InList) and not operand.negated:
            return InList(column=operand.column, values=operand.values, negated=True)
        return Not(operand=canonical(operand))
    return predicate


def sql_literal(value: Any) -> str:
    """A literal as SQL text: strings through sqlglot, numbers with ``repr``."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return str(exp.Literal.string(value).sql(dialect="hotdata"))
    return repr(value)


# -- each operator ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lang = 'en'", eq("lang", "=", "en")),
        ("lang == 'en'", eq("lang", "=", "en")),
        ("lang != 'en'", eq("lang", "!=", "en")),
        ("lang <> 'en'", eq("lang", "!=", "en")),
        ("year < 2020", eq("year", "<", 2020)),
        ("year <= 2020", eq("year", "<=", 2020)),
        ("year > 2020", eq("year", ">", 2020)),
        ("year >= 2020", eq("year", ">=", 2020)),
        ("tag IN ('a', 'b')", InList(column="tag", values=["a", "b"])),
        ("tag NOT IN ('a')", InList(column="tag", values=["a"], negated=True)),
        ("tag IN ()", InList(column="tag", values=[])),
        ("deleted_at IS NULL", IsNull(column="deleted_at")),
        ("deleted_at IS NOT NULL", IsNull(column="deleted_at", negated=True)),
        ("NOT deleted_at IS NULL", Not(operand=IsNull(column="deleted_at"))),
        ("NOT (tag IN (1))", Not(operand=InList(column="tag", values=[1]))),
        ("NOT status != 'x'", Not(operand=eq("status", "!=", "x"))),
        ("NOT NOT a = 1", Not(operand=Not(operand=eq("a", "=", 1)))),
        ("a = 1 AND b = 2", And(operands=[eq("a", "=", 1), eq("b", "=", 2)])),
        ("a = 1 OR b = 2", Or(operands=[eq("a", "=", 1), eq("b", "=", 2)])),
    ],
)
def test_each_operator(text: str, expected: Predicate) -> None:
    assert parse_filter(text) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("x = 'it''s'", "it's"),
        ("x = ''", ""),
        ("x = 'a -- b; DROP TABLE docs'", "a -- b; DROP TABLE docs"),
        ("x = 42", 42),
        ("x = -42", -42),
        ("x = 0", 0),
        ("x = 1.5", 1.5),
        ("x = -1.5", -1.5),
        ("x = .5", 0.5),
        ("x = 1e3", 1000.0),
        ("x = 2.0", 2.0),
        ("x = TRUE", True),
        ("x = false", False),
        ("x = (7)", 7),
        ("x = -9223372036854775808", -(2**63)),
        ("x = 9223372036854775807", 2**63 - 1),
        ("x = DATE '2020-01-01'", datetime.date(2020, 1, 1)),
        ("x = TIMESTAMP '2020-01-01 12:00:00'", datetime.datetime(2020, 1, 1, 12)),
        (
            """x = arrow_cast('2020-01-01 12:00:00', 'Timestamp(Nanosecond, Some("UTC"))')""",
            datetime.datetime(2020, 1, 1, 12),
        ),
        (
            """x = arrow_cast('2020-01-01 12:00:00', 'Timestamp(Microsecond, Some("UTC"))')""",
            datetime.datetime(2020, 1, 1, 12),
        ),
        (
            """x = ARROW_CAST('2020-01-01 13:00:00+01:00', 'Timestamp(Nanosecond, Some("UTC"))')""",
            datetime.datetime(2020, 1, 1, 12),
        ),
    ],
)
def test_literals(text: str, value: Any) -> None:
    predicate = parse_filter(text)
    assert isinstance(predicate, Comparison)
    assert predicate.value == value
    assert type(predicate.value) is type(value)


def test_columns_are_lower_cased_and_may_be_quoted() -> None:
    assert parse_filter('"Lang" = 1') == eq("lang", "=", 1)
    assert parse_filter("Lang = 1") == eq("lang", "=", 1)
    assert parse_filter('"my column" = 1') == eq("my column", "=", 1)
    assert parse_filter("(a) = 1") == eq("a", "=", 1)


def test_key_words_are_columns_where_sql_allows() -> None:
    assert parse_filter("date = 1") == eq("date", "=", 1)
    assert parse_filter('"select" = 1') == eq("select", "=", 1)


def test_a_trailing_semicolon_and_comments_are_ignored() -> None:
    assert parse_filter("a = 1;") == eq("a", "=", 1)
    assert parse_filter("a = 1 -- note") == eq("a", "=", 1)
    assert parse_filter("a /* note */ = 1") == eq("a", "=", 1)


# -- precedence and grouping --------------------------------------------------------------


def test_the_example_from_the_docs() -> None:
    text = (
        "lang = 'en' AND (year >= 2020 OR tag IN ('a','b')) AND deleted_at IS NULL "
        "AND NOT status != 'x'"
    )
    assert parse_filter(text) == And(
        operands=[
            eq("lang", "=", "en"),
            Or(operands=[eq("year", ">=", 2020), InList(column="tag", values=["a", "b"])]),
            IsNull(column="deleted_at"),
            Not(operand=eq("status", "!=", "x")),
        ]
    )


def test_and_binds_tighter_than_or() -> None:
    assert parse_filter("a = 1 OR b = 2 AND c = 3") == Or(
        operands=[eq("a", "=", 1), And(operands=[eq("b", "=", 2), eq("c", "=", 3)])]
    )
    assert parse_filter("a = 1 AND b = 2 OR c = 3") == Or(
        operands=[And(operands=[eq("a", "=", 1), eq("b", "=", 2)]), eq("c", "=", 3)]
    )


def test_parentheses_override_precedence() -> None:
    assert parse_filter("(a = 1 OR b = 2) AND c = 3") == And(
        operands=[Or(operands=[eq("a", "=", 1), eq("b", "=", 2)]), eq("c", "=", 3)]
    )


def test_not_binds_tighter_than_and() -> None:
    assert parse_filter("NOT a = 1 AND b = 2") == And(
        operands=[Not(operand=eq("a", "=", 1)), eq("b", "=", 2)]
    )
    assert parse_filter("NOT (a = 1 AND b = 2)") == Not(
        operand=And(operands=[eq("a", "=", 1), eq("b", "=", 2)])
    )


def test_chains_flatten_but_groups_stay_nested() -> None:
    assert parse_filter("a = 1 AND b = 2 AND c = 3 AND d = 4") == And(
        operands=[eq("a", "=", 1), eq("b", "=", 2), eq("c", "=", 3), eq("d", "=", 4)]
    )
    assert parse_filter("a = 1 AND (b = 2 AND c = 3)") == And(
        operands=[eq("a", "=", 1), And(operands=[eq("b", "=", 2), eq("c", "=", 3)])]
    )
    assert parse_filter("a = 1 OR b = 2 OR c = 3") == Or(
        operands=[eq("a", "=", 1), eq("b", "=", 2), eq("c", "=", 3)]
    )


def test_redundant_parentheses() -> None:
    assert parse_filter("((a = 1))") == eq("a", "=", 1)


# -- flipping -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "operator"),
    [
        ("2020 = year", "="),
        ("2020 != year", "!="),
        ("2020 < year", ">"),
        ("2020 <= year", ">="),
        ("2020 > year", "<"),
        ("2020 >= year", "<="),
    ],
)
def test_literal_on_the_left_flips_the_operator(text: str, operator: str) -> None:
    assert parse_filter(text) == eq("year", operator, 2020)


def test_flipping_keeps_negative_numbers() -> None:
    assert parse_filter("-5 < x") == eq("x", ">", -5)


# -- rejections ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("upper(a) = 'X'", "unsupported filter 'UPPER(a)': the function UPPER() is not supported"),
        ("my_udf(a) = 1", "unsupported filter 'my_udf(a)': the function my_udf() is not supported"),
        (
            "a = upper('x')",
            "unsupported filter \"UPPER('x')\": the function UPPER() is not a literal",
        ),
        ("a IN (SELECT id FROM t)", "IN takes a list of literals, not a query"),
        ("a = (SELECT 1)", "unsupported filter '(SELECT 1)': a subquery is not a literal"),
        ("EXISTS (SELECT 1)", "EXISTS is not supported"),
        ("SELECT 1", "unsupported filter 'SELECT 1': a query is not supported"),
        ("DROP TABLE docs", "unsupported filter 'DROP TABLE docs'"),
        (
            "title LIKE '%a%'",
            "unsupported filter \"title LIKE '%a%'\": a LIKE pattern must be a prefix",
        ),
        ("title ILIKE 'a%'", "ILIKE is not supported"),
        ("year BETWEEN 1 AND b", "a column may only be compared with a literal"),
        ("lower(a) BETWEEN 1 AND 2", "the first argument of [NOT] BETWEEN must be a column"),
        ("year BETWEEN NULL AND 2", "NULL is not a value here"),
        ("ends_with(title, 5)", "ends_with() takes a quoted text"),
        ("ends_with(title)", "missing for EndsWith"),
        ("a + 1 = 2", "unsupported filter 'a + 1': arithmetic is not supported"),
        ("a = 1 + 2", "unsupported filter '1 + 2': arithmetic is not a literal"),
        ("a = - -1", "only a number can be negative"),
        ("a = -'x'", "only a number can be negative"),
        ("a = b", "unsupported filter 'a = b': a column may only be compared with a literal"),
        ("a IN (1, b)", "a column may only be compared with a literal"),
        ("1 = 1", "one side of a comparison must be a column and the other a literal"),
        ("t.a = 1", "unsupported filter 't.a': columns must be bare names"),
        ("a = NULL", "NULL is not a value here; test for it with IS NULL or IS NOT NULL"),
        ("a IN (1, NULL)", "NULL is not a value here"),
        ("a IS TRUE", "IS only tests for NULL"),
        ("lower(a) IS NULL", "the left side of IS NULL must be a column"),
        ("1 IN (1)", "the left side of IN must be a column"),
        ("a", "unsupported filter 'a': a bare column is not a condition"),
        ("TRUE", "unsupported filter 'true': a constant is not a condition"),
        ("a = ?", "unsupported filter '?': a placeholder is not a literal"),
        ("a = $1", "a parameter is not a literal"),
        ("a = 'x'::text", "a cast is not a literal"),
        ("a = CAST('1' AS INT)", "a cast is not a literal"),
        ("a = ARRAY[1]", "an array is not a literal"),
        ("a = E'x'", "an escape string (E'...') is not a literal"),
        ("a = 1 AS b", "an alias is not supported"),
        ("a = 9223372036854775808", "filter value must fit in a signed 64-bit integer"),
        ("a = 1; b = 2", "filter 'a = 1; b = 2' must be one expression, got 2 statements"),
        (";", "must be one expression, got 0 statements"),
        ("a = ", "cannot parse filter 'a = ': Required keyword: 'expression' missing for EQ"),
        ("a = 1 AND", "cannot parse filter 'a = 1 AND'"),
        ("a = 'unterminated", 'cannot parse filter "a = \'unterminated"'),
        ("(a = 1", "cannot parse filter '(a = 1'"),
        ("", "filter must not be empty"),
        ("   ", "filter must not be empty"),
        ("a = 'x\x00'", "filter must not contain a NUL byte"),
        ('"" = 1', "filter column must not be empty"),
    ],
)
def test_rejections_name_the_unsupported_piece(text: str, message: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_filter(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value.field).startswith("filter")


def test_rejects_non_strings() -> None:
    with pytest.raises(PlanError, match="filter must be a string, got 3"):
        parse_filter(3)  # type: ignore[arg-type]


def test_rejections_list_what_is_allowed() -> None:
    with pytest.raises(PlanError, match=r"filters allow =, !=, <>, <, <=, >, >=, \[NOT\] IN"):
        parse_filter("a LIKE 'x'")


def test_a_compiled_null_guard_reads_back_as_what_it_guards() -> None:
    """The compiler guards same-column groups the DataFusion dialect would fold regardless
    of NULL (``compile/_null_guards.py``); the guard is exactly the guarded test, so it reads
    back as it."""
    contradiction = Not(operand=And(operands=(eq("n", "=", 1), eq("n", "!=", 1))))
    assert "IS NULL AND NULL" in rendered(contradiction)
    assert parse_filter(rendered(contradiction)) == contradiction
    tautology = Or(
        operands=(
            InList(column="n", values=[1], negated=True),
            InList(column="n", values=[2], negated=True),
        )
    )
    assert "IS NULL OR NULL" in rendered(tautology)
    assert parse_filter(rendered(tautology)) == tautology
    assert parse_filter("a = 1 AND (a IS NOT NULL OR NULL)") == eq("a", "=", 1)
    assert parse_filter("(a = 1 OR a = 2) OR (a IS NULL AND NULL)") == Or(
        operands=(eq("a", "=", 1), eq("a", "=", 2))
    )


@pytest.mark.parametrize(
    "text",
    [
        "a = 1 AND (b IS NOT NULL OR NULL)",  # another column's guard would change a = 1
        "(a = 1 OR a IS NULL) AND (a IS NOT NULL OR NULL)",  # TRUE for a NULL a
        "a = 1 OR b = 2 OR (a IS NULL AND NULL)",  # b = 2 holds for a NULL a
    ],
)
def test_a_null_guard_that_would_change_its_test_is_refused(text: str) -> None:
    with pytest.raises(PlanError, match="a NULL guard must go with a test that is NULL"):
        parse_filter(text)


# -- properties ---------------------------------------------------------------------------


@given(predicates.filter(lambda predicate: not has_empty_list(predicate)))
def test_compiled_filters_read_back(predicate: Predicate) -> None:
    # Equal values; the compiler may write an integral float as an integer literal.
    assert parse_filter(rendered(predicate)) == canonical(predicate)


_offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
)
_moments = {
    "min_value": datetime.datetime(1900, 1, 1),
    "max_value": datetime.datetime(2200, 1, 1),
}
temporals = st.one_of(
    st.dates(),
    st.datetimes(**_moments),
    st.datetimes(**_moments, timezones=_offsets),
)


@given(temporals, st.sampled_from(["=", "<", ">="]))
def test_a_compiled_date_or_timestamp_reads_back(value: Any, operator: str) -> None:
    """The hotdata dialect writes a timestamp as a cast to a UTC instant (``arrow_cast``),
    which filter text reads back as the datetime written (a plan holds a datetime with an
    offset as the zone-less time in UTC)."""
    back = parse_filter(rendered(eq("x", operator, value)))
    assert isinstance(back, Comparison)
    assert back == eq("x", operator, value)
    assert type(back.value) is type(value)


@given(literals)
def test_every_literal_reads_back_with_its_type(value: Any) -> None:
    back = parse_filter(f"x = {sql_literal(value)}")
    assert isinstance(back, Comparison)
    assert back.value == value
    assert type(back.value) is type(value)


@given(literals)
def test_literal_on_the_left_reads_back(value: Any) -> None:
    back = parse_filter(f"{sql_literal(value)} <= x")
    assert back == eq("x", ">=", value)


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_plan_error(text: str) -> None:
    try:
        predicate = parse_filter(text)
    except PlanError as error:
        assert "\n" not in str(error)
    else:
        if not has_empty_list(predicate):
            assert parse_filter(rendered(predicate)) == canonical(predicate)


@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "b",
                "=",
                "<",
                ">=",
                "!=",
                "1",
                "-2",
                "2.5",
                "'x'",
                "TRUE",
                "NULL",
                "IN",
                "NOT",
                "IS",
                "AND",
                "OR",
                "(",
                ")",
                ",",
                "LIKE",
                "f(",
                "+",
                ";",
            ]
        ),
        max_size=12,
    )
)
def test_token_soup_parses_or_raises_plan_error(tokens: list[str]) -> None:
    text = " ".join(tokens)
    try:
        parse_filter(text)
    except PlanError as error:
        assert "\n" not in str(error)
