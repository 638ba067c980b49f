"""The local engine's BM25 and its one-byte document lengths.

tantivy stores each row's number of terms in one byte (``bm25.stored_length``), so the local
engine's text scores are the documented BM25 over the stored lengths, in float32, not the
exact formula's. On a generated corpus of texts of 1 to 600 terms (most past 40, where the
byte stops being exact), against an independent NumPy reference:

- the local ranking is the formula's over the stored lengths, ordered by the float32 value of
  the score, then key, and each score is within float32 rounding of it;
- against the exact formula, each score is at least the exact one and below 9/8 of it (the
  bound ``engines/local/bm25.py`` states).

The stored lengths themselves are checked against values of tantivy's table
(``src/fieldnorm/code.rs``, ``FIELD_NORMS_TABLE``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.analysis import analyze_text
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.bm25 import stored_length
from hotdata_retrieval.plan.search import Bm25Search, SearchPlan

WORDS = [
    "fox", "owl", "den", "red", "river", "stone", "moss", "hill", "lake", "pine",
    "cloud", "wind", "rain", "snow", "leaf", "root", "bark", "seed", "fern", "reed",
]  # fmt: skip
"""Words the analysis keeps as they are (no stop word, no stem changes them)."""

QUERIES = ["fox", "owl river", "moss moss stone", "lake pine cloud", "reed", "fern wind rain"]

TANTIVY_TABLE = {
    0: 0, 23: 23, 39: 39, 40: 40, 41: 40, 42: 42, 55: 54, 56: 56, 59: 56, 60: 60,
    95: 88, 96: 96, 167: 152, 168: 168, 311: 280, 312: 312, 599: 536, 600: 600,
    1048: 1048, 1175: 1048, 2072: 2072, 1048600: 1048600, 2013265944: 2013265944,
}  # fmt: skip
"""Lengths and their stored values, read from tantivy's ``FIELD_NORMS_TABLE`` (an entry is
stored as itself; a length between two entries as the lower one)."""


def test_stored_lengths_are_tantivys() -> None:
    assert {length: stored_length(length) for length in TANTIVY_TABLE} == TANTIVY_TABLE


def _texts() -> list[str]:
    generator = random.Random(49)
    texts = []
    for row in range(300):
        length = generator.choice([generator.randint(1, 40), generator.randint(41, 600)])
        weights = [1 + (index * row) % 7 for index in range(len(WORDS))]
        texts.append(" ".join(generator.choices(WORDS, weights=weights, k=length)))
    return texts


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        texts = _texts()
        local.load_table(
            "docs",
            pa.table({"id": list(range(len(texts))), "body": texts}),
            key_column="id",
            text_columns=["body"],
        )
        yield local


def _reference(query: str, *, stored: bool) -> dict[int, float]:
    """Each matching key's BM25 by NumPy: k1 1.2, b 0.75, ``ln(1 + (N - df + 0.5) / (df +
    0.5))``, a repeated query term counted twice; with ``stored``, each row's length as
    tantivy stores it (the mean length stays the exact total over the rows)."""
    documents = [Counter(analyze_text(text)) for text in _texts()]
    exact = np.array([sum(counts.values()) for counts in documents], dtype=np.float64)
    lengths = np.array([stored_length(int(n)) for n in exact], np.float64) if stored else exact
    average = exact.mean()
    scores = np.zeros(len(documents))
    for term in analyze_text(query):
        frequencies = np.array([counts[term] for counts in documents], dtype=np.float64)
        df = np.count_nonzero(frequencies)
        idf = np.log(1 + (len(documents) - df + 0.5) / (df + 0.5))
        scores += idf * 2.2 * frequencies / (frequencies + 1.2 * (0.25 + 0.75 * lengths / average))
    return {key: float(score) for key, score in enumerate(scores) if score > 0}


def _search(engine: LocalEngine, query: str) -> list[tuple[int, float]]:
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text=query), limit=300)
    return [(int(hit.key), float(hit.score)) for hit in engine.search(plan).hits]


@pytest.mark.parametrize("query", QUERIES)
def test_local_ranking_is_the_formulas_over_stored_lengths(engine: LocalEngine, query: str) -> None:
    found = _search(engine, query)
    expected = _reference(query, stored=True)
    ranked = sorted(expected, key=lambda key: (-float(np.float32(expected[key])), key))
    assert [key for key, _ in found] == ranked
    for key, score in found:
        assert score == pytest.approx(expected[key], rel=1e-5)


@pytest.mark.parametrize("query", QUERIES)
def test_local_scores_are_within_an_eighth_above_the_exact_formula(
    engine: LocalEngine, query: str
) -> None:
    exact = _reference(query, stored=False)
    found = dict(_search(engine, query))
    assert found.keys() == exact.keys()
    assert all(exact[key] * (1 - 1e-6) <= found[key] < exact[key] * 9 / 8 for key in exact)
    # the bound is not slack: long rows' scores are well above the exact ones
    assert max(found[key] / exact[key] for key in exact) > 1.01
