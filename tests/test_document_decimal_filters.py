"""A document store's decimal filter column (on the engines that hold one: the local engine,
LanceDB and the Hotdata engine) is filled from metadata and filtered by the rule every filter
follows: a float is the decimal its shortest text writes (``0.1`` is 0.1), an integer, a
``decimal.Decimal`` and number text are exact. ``ids_matching`` (the filter evaluated in
Arrow over the rows read back) and ``nearest`` (the engine's search) keep the documents the
reference keeps: Python's ``decimal.Decimal`` of each metadata value, compared exactly with
the literal's decimal.

Before: no metadata with a fraction filled such a column (``0.1`` and ``"0.10"`` were both
"which its filter column (decimal128(10, 2)) cannot hold"). A value the column does not hold
exactly (``0.105`` at two decimals) is refused, naming the document, never rounded.
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.errors import PlanError
from tests.document_engines import fresh_table, open_document_engine

D = decimal.Decimal
METADATA: dict[str, Any] = {"a": 0.1, "b": "1.50", "c": 1.59, "d": None, "e": -3, "f": 2.25}
"""Each document's ``price``: floats, number text, a missing value, an integer."""

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _exact(value: Any) -> D:
    return D(repr(value)) if isinstance(value, float) else D(value)


@pytest.fixture(scope="module", params=["local", "lancedb", "hotdata"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DocumentStore]:
    engine = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened = DocumentStore(engine, fresh_table(), filter_columns={"price": pa.decimal128(10, 2)})
    opened.add(
        list(METADATA),
        [f"note {key}" for key in METADATA],
        [[1.0, float(position)] for position in range(len(METADATA))],
        [{} if value is None else {"price": value} for value in METADATA.values()],
    )
    yield opened
    engine.close()


@pytest.mark.parametrize(
    "literal", ["0.1", "1.5", "1.59", "1.505", "2.25", "-3", "1.5000000000000000000001", "'0.10'"]
)
def test_a_decimal_filter_keeps_the_documents_of_the_decimal_it_writes(
    store: DocumentStore, literal: str
) -> None:
    number = D(literal.strip("'"))
    for symbol, compare in OPERATORS.items():
        text = f"price {symbol} {literal}"
        expected = sorted(
            key
            for key, value in METADATA.items()
            if value is not None and compare(_exact(value), number)
        )
        assert sorted(store.ids_matching(text)) == expected, text
        hits = store.nearest([1.0, 0.0], k=len(METADATA), filter=text)
        assert sorted(hit.document.id for hit in hits) == expected, text


@pytest.mark.parametrize(
    "value",
    # text a filter refuses as a number: Python's Decimal reads other scripts' digits,
    # underscores and white space, which the filter rule does not
    [0.105, "1.505", 1e8, True, "cheap", "\u0661\u0662", "1_000", " 1.5", "1.5\n", "\u00a01.5"],
    ids=repr,
)
def test_metadata_a_decimal_column_does_not_hold_exactly_is_refused(
    store: DocumentStore, value: Any
) -> None:
    with pytest.raises(PlanError, match=r"document 'x': metadata 'price' is") as caught:
        store.add(["x"], ["note x"], [[1.0, 9.0]], [{"price": value}])
    assert caught.value.field == "metadatas"
    assert store.get(["x"]) == []
