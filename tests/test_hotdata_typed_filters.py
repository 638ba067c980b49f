"""The Hotdata engine types a filter against its table's columns as the local engine does.

The reference is the local engine: one document table, loaded alike on the local engine and
on the Hotdata engine (over its fake API, whose engine is a local one), each filter given to
both, and the documents each keeps compared (``nearest``, the engine's own search, and
``ids_matching``, the filter evaluated over the rows read back). The filters compare
zone-less, UTC and Paris timestamp columns with timestamp text with and without an offset,
and a decimal column with integers, floats, decimal text and number text.

Before: the Hotdata engine knew no column types and sent each filter as written; its engine
refused ``naive >= '2024-01-01T00:00:00+02:00'`` ("Cannot cast string ... to Timestamp"),
which ``ids_matching`` on the same store answered, and compared a UTC text with a Paris
column in the column's zone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.documents import DocumentStore
from tests.document_engines import fresh_table, open_document_engine

COLUMNS = {
    "naive": pa.timestamp("us"),
    "utc": pa.timestamp("us", tz="UTC"),
    "paris": pa.timestamp("ms", tz="Europe/Paris"),
    "price": pa.decimal128(10, 2),
}
MOMENTS = [
    "2023-12-31T21:00:00",
    "2023-12-31T23:00:00Z",
    "2024-01-01T03:00:00+02:00",
    "2024-01-01T02:00:00.001",
    None,
]
PRICES = [0.1, "1.50", 1.59, None, -3, 2.25]


def _metadata(position: int) -> dict[str, Any]:
    moment = MOMENTS[position % len(MOMENTS)]
    price = PRICES[position % len(PRICES)]
    found: dict[str, Any] = {}
    if moment is not None:
        found.update(naive=moment, utc=moment, paris=moment)
    if price is not None:
        found["price"] = price
    return found


ROWS = 12


@pytest.fixture(scope="module")
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DocumentStore, DocumentStore]]:
    opened = []
    for name in ("local", "hotdata"):
        engine = open_document_engine(name, tmp_path_factory.mktemp(name), request)
        store = DocumentStore(engine, fresh_table("typed"), filter_columns=COLUMNS)
        store.add(
            [f"d{position}" for position in range(ROWS)],
            [f"note {position}" for position in range(ROWS)],
            [[1.0, float(position)] for position in range(ROWS)],
            [_metadata(position) for position in range(ROWS)],
        )
        opened.append(store)
    yield opened[0], opened[1]
    for store in opened:
        store.engine.close()


_OFFSETS = st.sampled_from(["", "Z", "+02:00", "-01:00", "+05:30"])
_TIMESTAMPS = st.builds(
    lambda hour, minute, millisecond, offset: (
        f"'2024-01-01T{hour:02d}:{minute:02d}:00.{millisecond:03d}{offset}'"
        if hour >= 0
        else f"'2023-12-31T{24 + hour:02d}:{minute:02d}:00{offset}'"
    ),
    st.integers(min_value=-4, max_value=5),
    st.sampled_from([0, 30, 59]),
    st.sampled_from([0, 1, 999]),
    _OFFSETS,
)
_PRICES = st.sampled_from(["0.1", "1.5", "1.59", "1.505", "-3", "2.25", "'0.10'", "2", "1e0"])
_OPERATORS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
_FILTERS = st.one_of(
    st.builds(
        lambda column, symbol, literal: f"{column} {symbol} {literal}",
        st.sampled_from(["naive", "utc", "paris"]),
        _OPERATORS,
        _TIMESTAMPS,
    ),
    st.builds(lambda symbol, literal: f"price {symbol} {literal}", _OPERATORS, _PRICES),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=_FILTERS,
    second=st.one_of(st.none(), _FILTERS),
    joined=st.sampled_from(["AND", "OR"]),
    negated=st.booleans(),
)
def test_a_filter_keeps_the_documents_it_keeps_on_the_local_engine(
    stores: tuple[DocumentStore, DocumentStore],
    first: str,
    second: str | None,
    joined: str,
    negated: bool,
) -> None:
    local, hotdata = stores
    text = first if second is None else f"({first}) {joined} ({second})"
    if negated:
        text = f"NOT ({text})"
    expected = sorted(hit.document.id for hit in local.nearest([1.0, 0.0], k=ROWS, filter=text))
    found = sorted(hit.document.id for hit in hotdata.nearest([1.0, 0.0], k=ROWS, filter=text))
    assert found == expected, text
    assert sorted(hotdata.ids_matching(text)) == sorted(local.ids_matching(text)), text


def test_a_zoned_literal_against_a_zone_less_column_is_answered(
    stores: tuple[DocumentStore, DocumentStore],
) -> None:
    """The filter the engine refused when sent as written."""
    local, hotdata = stores
    text = "naive >= '2024-01-01T00:00:00+02:00'"
    expected = sorted(hit.document.id for hit in local.nearest([1.0, 0.0], k=ROWS, filter=text))
    assert expected
    found = sorted(hit.document.id for hit in hotdata.nearest([1.0, 0.0], k=ROWS, filter=text))
    assert found == expected
