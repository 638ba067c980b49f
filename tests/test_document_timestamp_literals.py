"""A timestamp literal means one instant on every path a document store filters by: its
``ids_matching`` (the filter evaluated in Arrow over the rows it reads back) and its
``nearest`` (the engine's own search: SQL, LanceDB's filter, turbopuffer's request), on every
engine a document table runs on, whatever zone the column holds. Text with an offset or
``Z`` is the instant it names; text without one, and a date (its midnight), is UTC. The
reference is Python's ``datetime``: each stored moment and each literal as an aware UTC
instant, compared.

Before: ``ids_matching`` handed the text to Arrow's parser, which reads a timestamp text only
as its column's own kind: on the local engine's zone-less column it refused
``ts >= '2024-01-01T00:00:00+02:00'`` (and ``...Z``), which ``nearest`` answered; on
turbopuffer, whose columns read back in UTC, it refused ``'2024-01-01T00:00:00'`` and
``'2024-01-01'``, which ``nearest`` answered. A literal finer than a column of milliseconds
(``'…23:00:00.000001Z'``) failed the row mask's cast, and LanceDB cut it to the column's unit
(``ts >= '…23:00:00.000001'`` kept the row at 23:00:00). The Hotdata engine, which did not
know its columns' types, sent each filter as written: its engine refused
``ts >= '2024-01-01T00:00:00+02:00'`` on a zone-less column, which ``ids_matching`` answered.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval.documents import DocumentStore
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

UTC = datetime.timezone.utc
STORED = {
    "a": "2023-12-31T21:00:00",
    "b": "2023-12-31T23:00:00Z",
    "c": "2024-01-01T03:00:00+02:00",
    "d": "2024-01-01T02:00:00",
    "e": None,
}
"""Each document's metadata moment (``e`` has none): 21:00, 23:00, 01:00 and 02:00 UTC."""

LITERALS = [
    "2024-01-01T00:00:00+02:00",
    "2024-01-01T03:00:00+02:00",
    "2024-01-01T01:00:00-01:00",
    "2024-01-01T00:00:00Z",
    "2024-01-01T01:00:00",
    "2024-01-01 02:00",
    "2023-12-31T23:00:00.000001Z",
    "2024-01-01",
]
"""Literal texts: with an offset, with ``Z``, without a zone, a date."""

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


COLUMN_TYPES = {
    "naive": pa.timestamp("us"),
    "utc": pa.timestamp("us", tz="UTC"),
    "paris": pa.timestamp("ms", tz="Europe/Paris"),
}


def _instant(text: str) -> datetime.datetime:
    """The reference: ISO text as an aware UTC instant, a zone-less one (or a date, at its
    midnight) taken as UTC."""
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _expected(symbol: str, literal: str, negated: bool) -> list[str]:
    compare = OPERATORS[symbol]
    return sorted(
        key
        for key, text in STORED.items()
        if text is not None and compare(_instant(text), _instant(literal)) is not negated
    )


@pytest.fixture(
    scope="module",
    params=[(engine, zone) for engine in DOCUMENT_ENGINES for zone in COLUMN_TYPES],
    ids=lambda param: f"{param[0]}-{param[1]}",
)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DocumentStore]:
    name, zone = request.param
    engine = open_document_engine(name, tmp_path_factory.mktemp(f"{name}-{zone}"), request)
    opened = DocumentStore(engine, fresh_table(), filter_columns={"ts": COLUMN_TYPES[zone]})
    opened.add(
        list(STORED),
        [f"note {key}" for key in STORED],
        [[1.0, float(position)] for position in range(len(STORED))],
        [{} if text is None else {"ts": text} for text in STORED.values()],
    )
    yield opened
    engine.close()


@pytest.mark.parametrize("literal", LITERALS)
def test_every_path_reads_a_timestamp_literal_as_one_instant(
    store: DocumentStore, literal: str
) -> None:
    for symbol in OPERATORS:
        for negated in (False, True):
            text = f"ts {symbol} '{literal}'"
            if negated:
                text = f"NOT ({text})"
            expected = _expected(symbol, literal, negated)
            assert sorted(store.ids_matching(text)) == expected, text
            hits = store.nearest([1.0, 0.0], k=len(STORED), filter=text)
            assert sorted(hit.document.id for hit in hits) == expected, text


def test_a_filter_object_reads_a_timestamp_literal_as_one_instant(store: DocumentStore) -> None:
    literal = "2024-01-01T00:00:00+02:00"
    for name, symbol in (("$gte", ">="), ("$lt", "<"), ("$ne", "!=")):
        expected = _expected(symbol, literal, negated=False)
        found = {"ts": {name: literal}}
        assert sorted(store.ids_matching(found)) == expected, name
        hits = store.nearest([1.0, 0.0], k=len(STORED), filter=found)
        assert sorted(hit.document.id for hit in hits) == expected, name


_MOMENTS = st.builds(
    lambda minutes, micro: (
        datetime.datetime(2023, 12, 31, 21)
        + datetime.timedelta(minutes=minutes, microseconds=micro)
    ),
    st.integers(min_value=-60, max_value=6 * 60),
    st.sampled_from([0, 0, 1, 999, 500_000]),
)
"""Instants around the stored ones, on and between a millisecond column's values."""
_ZONES = st.one_of(
    st.none(),
    st.just("Z"),
    st.integers(min_value=-14 * 4, max_value=14 * 4).map(
        lambda quarters: (
            f"{'-' if quarters < 0 else '+'}{abs(quarters) // 4:02d}:{abs(quarters) % 4 * 15:02d}"
        )
    ),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    moment=_MOMENTS,
    zone=_ZONES,
    separator=st.sampled_from("T "),
    symbol=st.sampled_from(list(OPERATORS)),
)
def test_any_timestamp_literal_is_one_instant_on_every_path(
    store: DocumentStore, moment: datetime.datetime, zone: str | None, separator: str, symbol: str
) -> None:
    """Whatever instant, offset and spelling a literal has, ``ids_matching`` and ``nearest``
    keep the documents Python's comparison of the UTC instants keeps."""
    shown = moment.isoformat(sep=separator)
    if zone == "Z":
        shown += "Z"
    elif zone is not None:
        # the same instant written in that zone
        offset = datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        local = moment + (offset if zone[0] == "+" else -offset)
        shown = local.isoformat(sep=separator) + zone
    text = f"ts {symbol} '{shown}'"
    expected = _expected(symbol, shown, negated=False)
    assert sorted(store.ids_matching(text)) == expected, text
    hits = store.nearest([1.0, 0.0], k=len(STORED), filter=text)
    assert sorted(hit.document.id for hit in hits) == expected, text
