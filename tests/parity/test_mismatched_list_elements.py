"""A list test (``contains_any``, ``contains_all``) for values of another type than the
list's elements keeps, on every engine that holds list columns, the rows one reference keeps,
or is refused on each with the same :class:`PlanError` on field ``filter`` naming the value,
the column and its elements' kind: the rule of a column compared with a value
(test_mismatched_literals.py), applied to the elements. SQLite holds no list column (it
refuses one at load: test_column_types.py).

Before: DuckDB and PostgreSQL checked no list's values, so a list of integers searched for
``'2020'`` failed there with the store's own error (DuckDB "Cannot deduce template type",
PostgreSQL "operator does not exist: text = bigint") where the other engines kept the rows
holding 2020; a list of text searched for 2020 failed likewise where the others refused it
with the typed error; and DuckDB kept the rows holding 1 for a list of integers searched for
TRUE, where PostgreSQL failed and the others refused it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.plan.filters import ContainsAll, ContainsAny, Not, Predicate
from tests.parity.engines import ENGINE_PATHS
from tests.parity.literal_engines import (
    assert_refused_alike,
    checked_keys,
    literal_engine,
    literal_plans,
    literal_table,
)

LIST_ENGINES = [name for name in ENGINE_PATHS if name != "sqlite"]
"""Every path holding a list column."""

NUMBERS: list[list[int] | None] = [[1, 2], [2020], [], None, [10, 2020], [3]]
WORDS: list[list[str] | None] = [["a"], ["2020"], [], None, ["10", "b"], ["b"]]
ROWS = len(NUMBERS)


TABLE = literal_table(
    ROWS,
    {
        "numbers": pa.array(NUMBERS, pa.list_(pa.int64())),
        "words": pa.array(WORDS, pa.list_(pa.string())),
    },
)


ANSWERED: dict[str, tuple[Predicate, set[int]]] = {
    "numbers any ['2020']": (ContainsAny(column="numbers", values=["2020"]), {1, 4}),
    "numbers any ['3', 10]": (ContainsAny(column="numbers", values=["3", 10]), {4, 5}),
    "numbers all ['10', '2020']": (ContainsAll(column="numbers", values=["10", "2020"]), {4}),
    "numbers all ['1', 2]": (ContainsAll(column="numbers", values=["1", 2]), {0}),
    "words any ['2020']": (ContainsAny(column="words", values=["2020"]), {1}),
}
"""Tests every path answers, and the keys they keep, read off :data:`NUMBERS` and
:data:`WORDS` by hand (``NOT`` keeps the other rows holding a list)."""

REFUSED: dict[str, tuple[Predicate, str]] = {
    "words any [2020]": (
        ContainsAny(column="words", values=[2020]),
        "filter looks in column 'words', a list of text values, for 2020, a number; quote it "
        "to compare text",
    ),
    "words all ['a', TRUE]": (
        ContainsAll(column="words", values=["a", True]),
        "filter looks in column 'words', a list of text values, for TRUE, a boolean; quote it "
        "to compare text",
    ),
    "numbers any [TRUE]": (
        ContainsAny(column="numbers", values=[True]),
        "filter looks in column 'numbers', a list of integer values, for TRUE, a boolean",
    ),
    "numbers any ['x']": (
        ContainsAny(column="numbers", values=["x"]),
        "filter looks in column 'numbers', a list of integer values, for 'x', which is not an "
        "integer",
    ),
    "numbers all ['2.5']": (
        ContainsAll(column="numbers", values=["2.5"]),
        "filter looks in column 'numbers', a list of integer values, for '2.5', which is not "
        "an integer",
    ),
}
"""Tests every path refuses, with the start of the one message."""


@pytest.fixture(scope="module", params=LIST_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    yield from literal_engine(request, tmp_path_factory, "elements", lambda _name: TABLE)


@pytest.mark.parametrize("case", sorted(ANSWERED))
def test_values_that_read_as_the_elements_type_keep_the_reference_rows(
    engine: tuple[str, Any], case: str
) -> None:
    name, opened = engine
    predicate, kept = ANSWERED[case]
    column = NUMBERS if predicate.column == "numbers" else WORDS  # type: ignore[union-attr]
    holding = {key for key, value in enumerate(column) if value is not None}
    for used, expected in ((predicate, kept), (Not(operand=predicate), holding - kept)):
        for plan in literal_plans(used, ROWS):
            assert checked_keys(name, opened, plan, TABLE.schema) == expected, (name, case, used)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_values_of_another_kind_are_refused_alike(engine: tuple[str, Any], case: str) -> None:
    name, opened = engine
    predicate, message = REFUSED[case]
    assert_refused_alike(name, opened, predicate, ROWS, TABLE.schema, message)
