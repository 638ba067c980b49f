"""A document of about 1.2 MB with more than 1 MB of distinct terms loads and is found on
every store (PostgreSQL indexes the array of terms, not a ``tsvector``, which holds at most
1 MB); a run of letters longer than the analysis's bound (255 bytes) is no term on any store,
so a 3,000-byte one loads everywhere (PostgreSQL's GIN index refused it) and finds nothing,
while the row is found by its other words; a row whose text holds the NUL character is
refused on every store with one message, at load and at upsert, because PostgreSQL cannot
store it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

LONG_TERMS = 150_000
"""Distinct terms in the long document: ``w000000`` ... (seven characters and a space each,
about 1.2 MB; their lexemes and positions are about 1.6 MB as a ``tsvector``)."""

LONG = " ".join(f"w{index:06d}" for index in range(LONG_TERMS))
RUN = "q" * 3000
"""A 3,000-byte run of letters: no term (longer than ``analysis.MAX_TERM_BYTES``)."""
LONGEST = "k" * 255
"""A run of 255 letters: a term, the longest."""
TOO_LONG = "é" * 128
"""128 two-byte letters, 256 bytes: no term."""

BODIES = [
    "disk full on node w000007",
    LONG,
    "the disk is fine",
    "login page slow w149999",
    f"crash report {RUN} {LONGEST} {TOO_LONG}",
]

NUL_MESSAGE = r"column 'body' holds the NUL character \(U\+0000\) in row 2: no engine stores it"


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "long_documents", bodies_table(BODIES))


def _reference(word: str) -> set[int]:
    """The keys of the bodies holding ``word`` as a whole word, by Python's ``str.split``, if
    it is at most 255 bytes of UTF-8 (the bound the analysis states)."""
    if len(word.encode("utf-8")) > 255:
        return set()
    return {key for key, body in enumerate(BODIES) if word in body.split()}


@pytest.mark.parametrize("word", ["w000007", "w075000", "w149999", "disk", "crash", LONGEST])
def test_the_long_document_is_found_by_its_terms(engine: Any, word: str) -> None:
    result = engine.search(
        engine.plan_search(SearchRequest(table="long_documents", query=word, mode="text"))
    )
    assert set(result.keys) == _reference(word) and result.keys


@pytest.mark.parametrize("word", [RUN, TOO_LONG, "k" * 256])
def test_a_run_longer_than_the_bound_is_no_term(engine: Any, word: str) -> None:
    request = SearchRequest(table="long_documents", query=f"{word} absentword", mode="text")
    assert _reference(word) == set()
    assert list(engine.search(engine.plan_search(request)).keys) == []


def test_a_nul_character_is_refused_at_load_alike(engine: Any) -> None:
    bodies = ["disk full", "disk\x00full", "fine"]
    with pytest.raises(EngineError, match=NUL_MESSAGE):
        engine.load_table("nul_rows", bodies_table(bodies), key_column="id", text_columns=["body"])


def test_a_nul_character_is_refused_at_upsert_alike(engine: Any) -> None:
    rows = pa.table({"id": [7, 8], "body": ["fine", "null\x00byte"]})
    with pytest.raises(EngineError, match=NUL_MESSAGE):
        engine.upsert_rows("long_documents", rows)
    after = engine.search(
        engine.plan_search(SearchRequest(table="long_documents", query="null byte", mode="text"))
    )
    assert list(after.keys) == []
