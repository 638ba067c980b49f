"""One analysis of text on every engine: exact tokens, version strings, dotted numbers,
decomposed and full-width text, CJK and query syntax find the same documents everywhere.

The reference is independent of every engine: a document matches a query when they share a
term by the library's documented analysis (:mod:`hotdata_retrieval.analysis`), and for each
hostile query the document that must rank first is named by hand from the corpus below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.analysis import analyze_text, normalize_text, text_analyzer
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = [
    "Upgrade to v1.1.6 before Friday",  # 0
    "The ratio was 38.101 in the trial",  # 1
    "Cafe\u0301 au lait",  # 2: decomposed é (NFD)
    "\uff26\uff35\uff2c\uff2c\uff37\uff29\uff24\uff34\uff28 characters here",  # 3: full width
    "hello 世界",  # 4
    "build with --error-on-warnings enabled",  # 5
    "ERR-DIM-384 raised by the loader",  # 6
    "NEAR the AND gate OR not",  # 7
    "\u0130stanbul office",  # 8: dotted capital I
    "\ufb01sh market",  # 9: the ligature fi
    "plain text about disks",  # 10
    "path a:b:c (nested) [brackets] {braces} *stars*",  # 11
    "a user's guide to release notes",  # 12
    "release 2.0 notes",  # 13
    None,  # 14: no text
    "",  # 15: empty text
]

FIRST = [
    ("v1.1.6", 0),
    ("38.101", 1),
    ("café", 2),
    ("cafe\u0301", 2),
    ("\uff23\uff21\uff26\u00c9", 2),
    ("fullwidth", 3),
    ("\uff26\uff35\uff2c\uff2c\uff37\uff29\uff24\uff34\uff28", 3),
    ("世界", 4),
    ("hello 世界", 4),
    ('"--error-on-warnings"', 5),
    ("--error-on-warnings", 5),
    ("ERR-DIM-384", 6),
    ("err dim 384", 6),
    ("NEAR(gate)", 7),
    ("gate AND OR NOT", 7),
    ("istanbul", 8),
    ("\u0130STANBUL", 8),
    ("fish", 9),
    ("FISH", 9),
    ("disk*", 10),
    ("(nested) [brackets]", 11),
    ("b:c", 11),
    ("user's guide", 12),
    ('"release 2.0"', 13),
]
"""A hostile query and the document that must rank first for it, on every engine."""


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "hostile", bodies_table(BODIES))


def _keys(engine: Any, query: str) -> list[int]:
    branch = Bm25Search(table="hostile", column="body", query_text=query, allow_empty=True)
    return [int(key) for key in engine.search(SearchPlan(source=branch, limit=len(BODIES))).keys]


def _reference(query: str) -> set[int]:
    """The documents sharing a term with ``query`` by the documented analysis."""
    terms = set(analyze_text(query))
    return {
        key
        for key, body in enumerate(BODIES)
        if body is not None and terms & set(analyze_text(body))
    }


def test_the_analysis_folds_and_splits_as_documented() -> None:
    assert analyze_text("v1.1.6") == ("v1", "1", "6")
    assert analyze_text("38.101") == ("38", "101")
    assert (
        analyze_text("Cafe\u0301")
        == analyze_text("café")
        == analyze_text("\uff23\uff21\uff26\u00c9")
    )
    assert analyze_text('"--error-on-warnings"') == ("error", "warn")
    assert analyze_text("NEAR AND OR NOT the") == ("near",)
    # NLTK's English stop words; single letters stay terms (analysis.STOP_WORDS)
    assert analyze_text("What can a T cell do to them?") == ("a", "t", "cell")
    assert normalize_text("\u0130stanbul") == "istanbul"


@pytest.mark.parametrize(("query", "expected"), FIRST, ids=[query for query, _ in FIRST])
def test_a_hostile_query_ranks_its_document_first(engine: Any, query: str, expected: int) -> None:
    keys = _keys(engine, query)
    assert keys, f"{engine.parity_name}: {query!r} found nothing"
    assert keys[0] == expected


@pytest.mark.parametrize(("query", "expected"), FIRST, ids=[query for query, _ in FIRST])
def test_a_hostile_query_matches_the_documents_sharing_a_term(
    engine: Any, query: str, expected: int
) -> None:
    assert expected in _reference(query)  # the table above is right by the analysis
    assert set(_keys(engine, query)) == _reference(query)


@pytest.mark.parametrize("query", ["the", "AND OR", "what is an", "* - : ^", "\u3000"])
def test_text_of_only_stop_words_or_punctuation_matches_nothing(engine: Any, query: str) -> None:
    assert _keys(engine, query) == sorted(_reference(query)) == []


PUNCTUATION = ['"', "'", "-", "--", "(", ")", "[", "]", "{", "}", "*", ":", "^", "~", "+", "!"]
WORDS = ["NEAR", "AND", "OR", "NOT", "v1.1.6", "38.101", "café", "release", "notes", "gate"]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.sampled_from(PUNCTUATION + WORDS), min_size=1, max_size=8).map("".join)
    | st.lists(st.sampled_from(PUNCTUATION + WORDS), min_size=1, max_size=8).map(" ".join)
    | st.text(max_size=20).filter(lambda text: "\x00" not in text)  # a plan refuses NUL
)
def test_punctuation_heavy_text_is_data_on_every_engine(engine: Any, query: str) -> None:
    assert set(_keys(engine, query)) == _reference(query)


@pytest.mark.parametrize(("query", "expected"), FIRST, ids=[query for query, _ in FIRST])
def test_terms_syntax_finds_what_the_text_finds(engine: Any, query: str, expected: int) -> None:
    """``query_syntax="terms"`` quotes the words the analysis splits (NFKC, combining marks
    kept inside a word), so a decomposed ``é`` stays in its word there too."""
    branch = Bm25Search(
        table="hostile", column="body", query_text=query, query_syntax="terms", allow_empty=True
    )
    keys = [int(key) for key in engine.search(SearchPlan(source=branch, limit=len(BODIES))).keys]
    assert keys[:1] == [expected]
    assert set(keys) == _reference(query)


@pytest.mark.parametrize(
    ("stop_words", "message"),
    [("the", "not the text 'the'"), (["the", 1], "got 1"), ([b"the"], "got b'the'")],
)
def test_stop_words_that_are_not_words_are_refused(stop_words: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        text_analyzer(stop_words)  # type: ignore[arg-type]


def test_an_analyzer_of_other_stop_words_stops_those() -> None:
    assert text_analyzer(["cat"]).analyze("the cat and a dog") == ["the", "and", "a", "dog"]
