"""A PostgreSQL load analyses and sends its rows one batch at a time and counts the BM25
statistics as it goes: the texts are analysed at most
:data:`~hotdata_retrieval.engines.checks.LOAD_BATCH_ROWS` at a time, and the statistics table
equals an independent count over every row's terms (``analyze_text``, outside the engine).
The rows go by binary ``COPY``: float64 vectors are stored as their nearest float32 (NumPy's
cast, round to nearest with ties to even), a timestamp with a time zone as its UTC time.
"""

from __future__ import annotations

import datetime
import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
import pytest
from sqlglot import exp

from hotdata_retrieval.analysis import analyze_text
from hotdata_retrieval.compile.postgres import TEXT_INDEX_SCHEMA, text_statistics_table
from hotdata_retrieval.engines import checks, postgres
from hotdata_retrieval.engines.postgres import PostgresEngine

BATCH_ROWS = 3
WORDS = ["disk", "full", "error", "the", "retry", "cache", "Disks", "errors", "shard"]
_NAMES = itertools.count()


@pytest.fixture
def engine(postgres_url: str) -> Iterator[PostgresEngine]:
    opened = PostgresEngine(postgres_url)
    yield opened
    opened.close()


def _name() -> str:
    return f"streamed_{next(_NAMES)}"  # the session's server is shared across files


def _texts(count: int) -> list[str | None]:
    """Texts of 0 to 6 words (stop words and plurals among them), every seventh NULL."""
    generator = np.random.default_rng(11)
    texts: list[str | None] = []
    for row in range(count):
        words = generator.choice(WORDS, size=int(generator.integers(0, 7)))
        texts.append(None if row % 7 == 3 else " ".join(words))
    return texts


def _statistics(url: str, table: str, column: str) -> dict[str, tuple[int, float | None]]:
    name = exp.Table(
        this=exp.to_identifier(text_statistics_table("public", table, column), quoted=True),
        db=exp.to_identifier(TEXT_INDEX_SCHEMA, quoted=True),
    )
    query = exp.select("term", "documents", "average_length").from_(name).sql("postgres")
    with psycopg.connect(url) as connection:
        rows = connection.execute(query).fetchall()
    return {term: (documents, average) for term, documents, average in rows}


def test_the_statistics_equal_a_count_over_every_row(
    engine: PostgresEngine, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "LOAD_BATCH_ROWS", BATCH_ROWS)
    analysed: list[int] = []
    analyse = postgres.analysed_terms

    def spied(texts: Any) -> list[tuple[str, ...] | None]:
        analysed.append(len(texts))
        return analyse(texts)

    monkeypatch.setattr(postgres, "analysed_terms", spied)
    texts = _texts(40)
    name = _name()
    engine.load_table(
        name, pa.table({"id": list(range(len(texts))), "body": texts}), text_columns=["body"]
    )

    assert analysed and max(analysed) <= BATCH_ROWS
    assert sum(analysed) == len(texts)
    terms = [analyze_text(text) for text in texts if text is not None]
    frequencies = Counter(term for row in terms for term in set(row))
    expected: dict[str, tuple[int, float | None]] = {
        term: (count, None) for term, count in frequencies.items()
    }
    expected[""] = (len(terms), sum(len(row) for row in terms) / len(terms))
    assert _statistics(postgres_url, name, "body") == expected


def test_an_upsert_counts_the_statistics_of_a_fresh_load(
    engine: PostgresEngine, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "LOAD_BATCH_ROWS", BATCH_ROWS)
    texts = _texts(20)
    first, changed = _name(), _name()
    engine.load_table(
        first, pa.table({"id": list(range(20)), "body": texts}), text_columns=["body"]
    )
    engine.load_table(
        changed,
        pa.table({"id": list(range(20)), "body": texts[:10] + [None] * 10}),
        text_columns=["body"],
    )
    engine.upsert_rows(changed, pa.table({"id": list(range(10, 20)), "body": texts[10:]}))
    assert _statistics(postgres_url, changed, "body") == _statistics(postgres_url, first, "body")


def test_float64_vectors_are_stored_as_their_nearest_float32(engine: PostgresEngine) -> None:
    tie = 1.0 + 2.0**-24  # halfway between two float32 numbers: to even, 1.0
    vectors = np.array(
        [[tie, 0.1, -1e-40], [1.0 / 3.0, 2.0**-149, -7.25], [np.pi, -np.e, 1e30]],
        dtype=np.float64,
    )
    name = _name()
    engine.load_table(
        name,
        pa.table({"id": [0, 1, 2, 3], "embedding": pa.array([*map(list, vectors), None])}),
        vector_metric="l2",  # a table searched by cosine refuses the norm of [pi, -e, 1e30]
    )
    stored = engine.read_table(name).sort_by("id").column("embedding").to_pylist()
    assert stored[:3] == vectors.astype(np.float32).tolist()
    assert stored[3] is None
    assert stored[0][0] == 1.0


def test_a_zoned_timestamp_is_stored_as_its_utc_time(engine: PostgresEngine) -> None:
    zone = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    instant = datetime.datetime(2024, 3, 1, 12, 0, 0, 250, tzinfo=zone)
    name = _name()
    engine.load_table(
        name,
        pa.table(
            {"id": [1, 2], "at": pa.array([instant, None], pa.timestamp("us", "Asia/Kolkata"))}
        ),
    )
    stored = engine.read_table(name).sort_by("id").column("at").to_pylist()
    assert stored == [instant, None]  # the same instant (an aware datetime compares as one)
