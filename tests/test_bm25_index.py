"""The local engine's BM25 index on its own: a filter applied to a growing prefix of tantivy's
order gives the rows a scan of every match gives, and the writer's thread count changes no
score."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.engines.local import bm25

WORDS = ["fox", "owl", "den", "red", "the", "river", "stone", "moss"]
ROWS = 400


def _texts(seed: int) -> list[str | None]:
    generator = random.Random(seed)
    texts: list[str | None] = []
    for row in range(ROWS):
        if row % 37 == 0:
            texts.append(None)
        else:  # short texts of few words: many rows tie on score
            texts.append(" ".join(generator.choices(WORDS, k=generator.randint(1, 4))))
    return texts


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> bm25.Bm25Index:
    directory = tmp_path_factory.mktemp("bm25") / "index"
    bm25.build_bm25_index(directory, _texts(3))
    return bm25.Bm25Index(directory)


def _every_match(index: bm25.Bm25Index, text: str) -> tuple[np.ndarray, np.ndarray]:
    return index.search(text, ROWS)


@settings(max_examples=150, deadline=None)
@given(
    text=st.sampled_from(["fox", "owl den", "red fox river", "stone moss owl fox", "absent"]),
    k=st.integers(min_value=1, max_value=60),
    kept=st.sets(st.integers(min_value=0, max_value=ROWS - 1), max_size=ROWS),
    ties=st.booleans(),
)
def test_a_masked_search_is_the_top_k_of_every_kept_match(
    index: bm25.Bm25Index, text: str, k: int, kept: set[int], ties: bool
) -> None:
    mask = np.zeros(ROWS, dtype=bool)
    mask[sorted(kept)] = True
    tie_order = np.random.default_rng(k).permutation(ROWS) if ties else None
    expected, expected_scores = _top_kept(index, text, k, mask, tie_order)
    found, found_scores = index.search(text, k, tie_order=tie_order, mask=mask)
    assert found.tolist() == expected
    assert found_scores.tolist() == expected_scores


def test_writer_threads_change_no_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index written by three threads (three segments) scores and cuts every search as one
    written by one thread: BM25's statistics are the searcher's, across segments."""
    texts = _texts(5) * 40  # enough documents for each thread to write a segment
    built = {}
    for threads in (1, 3):
        monkeypatch.setattr(bm25, "_writer_threads", lambda threads=threads: threads)
        bm25.build_bm25_index(tmp_path / str(threads), texts)
        built[threads] = bm25.Bm25Index(tmp_path / str(threads))
    assert built[1]._searcher.num_segments == 1 < built[3]._searcher.num_segments
    for text in ("fox", "owl den", "red fox river"):
        for k in (1, 10, 500):
            one, three = built[1].search(text, k), built[3].search(text, k)
            assert one[0].tolist() == three[0].tolist()
            assert one[1].tolist() == three[1].tolist()


@settings(max_examples=150, deadline=None)
@given(
    text=st.sampled_from(["fox", "owl den", "red fox river", "stone moss owl fox", "absent"]),
    k=st.integers(min_value=1, max_value=60),
    runs=st.lists(st.tuples(st.integers(0, ROWS - 1), st.integers(1, 12)), min_size=1, max_size=4),
    ties=st.booleans(),
)
def test_a_filter_of_few_rowid_runs_is_searched_in_the_index_as_every_kept_match(
    index: bm25.Bm25Index,
    text: str,
    k: int,
    runs: list[tuple[int, int]],
    ties: bool,
) -> None:
    """A selective filter of a few runs of consecutive rowids, handed to tantivy as rowid
    ranges, returns the rows and scores of every match's scan masked in NumPy."""
    mask = np.zeros(ROWS, dtype=bool)
    for start, length in runs:
        mask[start : start + length] = True
    handed: list[bool] = []
    ranges = bm25.Bm25Index._rowid_ranges

    def spied(self: bm25.Bm25Index, kept: np.ndarray) -> object:
        query = ranges(self, kept)
        handed.append(query is not None)
        return query

    tie_order = np.random.default_rng(k).permutation(ROWS) if ties else None
    rowids, scores = _every_match(index, text)
    keep = mask[rowids]
    rowids, scores = rowids[keep], scores[keep]
    position = rowids if tie_order is None else tie_order[rowids]
    chosen = sorted(zip(-scores.astype(np.float64), position, rowids))[:k]
    expected = sorted(int(rowid) for _, _, rowid in chosen)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25.Bm25Index, "_rowid_ranges", spied)
        found, found_scores = index.search(text, k, tie_order=tie_order, mask=mask)
    assert found.tolist() == expected
    assert found_scores.tolist() == [float(scores[rowids == row][0]) for row in expected]
    assert handed == [True]  # 4 runs of at most 12 rows: at most 48 of 400, 1 in 8


class _CountedSearcher:
    """A searcher that counts its searches and the hits each asked for."""

    def __init__(self, searcher: object) -> None:
        self._searcher = searcher
        self.limits: list[int] = []

    def search(self, query: object, limit: int, **options: object) -> object:
        self.limits.append(limit)
        return self._searcher.search(query, limit=limit, **options)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._searcher, name)


def _top_kept(
    index: bm25.Bm25Index, text: str, k: int, mask: np.ndarray, tie_order: np.ndarray | None
) -> tuple[list[int], list[float]]:
    """The reference: every match of ``text``, those ``mask`` keeps ordered by score
    descending then tie position, the first ``k``, in rowid order with their scores."""
    rowids, scores = _every_match(index, text)
    keep = mask[rowids]
    rowids, scores = rowids[keep], scores[keep]
    position = rowids if tie_order is None else tie_order[rowids]
    chosen = sorted(zip(-scores.astype(np.float64), position, rowids))[:k]
    expected = sorted(int(rowid) for _, _, rowid in chosen)
    return expected, [float(scores[rowids == row][0]) for row in expected]


def _tested(mask: np.ndarray, share: float, seen: list[np.ndarray]) -> bm25.HitTest:
    def keeps(rowids: np.ndarray) -> np.ndarray:
        seen.append(rowids.copy())
        return mask[rowids]

    return bm25.HitTest(keeps, share)


@settings(max_examples=200, deadline=None)
@given(
    text=st.sampled_from(["fox", "owl den", "red fox river", "stone moss owl fox", "absent"]),
    k=st.integers(min_value=1, max_value=60),
    kept_share=st.sampled_from([0.02, 0.1, 0.3, 0.6, 0.95]),
    estimate=st.floats(min_value=0.005, max_value=1.0),
    seed=st.integers(0, 2**16),
    ties=st.booleans(),
)
def test_a_filter_tested_on_the_hits_is_the_top_k_of_every_kept_match(
    index: bm25.Bm25Index,
    text: str,
    k: int,
    kept_share: float,
    estimate: float,
    seed: int,
    ties: bool,
) -> None:
    """A filter tested on a prefix's hits alone, whatever its share and however wrong its
    estimate (a prefix too short is searched again deeper), returns the rows and scores of
    every match's scan masked in NumPy, ties at the k-th place cut by position; it is asked
    only about hits."""
    generator = np.random.default_rng(seed)
    mask = generator.random(ROWS) < kept_share
    tie_order = generator.permutation(ROWS) if ties else None
    seen: list[np.ndarray] = []
    found, scores = index.search(text, k, tie_order=tie_order, test=_tested(mask, estimate, seen))
    assert (found.tolist(), scores.tolist()) == _top_kept(index, text, k, mask, tie_order)
    matches = set(_every_match(index, text)[0].tolist())
    assert all(set(rowids.tolist()) <= matches for rowids in seen)


def test_a_prefix_with_too_few_kept_hits_is_searched_again_deeper(
    index: bm25.Bm25Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An estimate far above the filter's share sizes a first prefix holding too few kept
    rows: the search goes deeper until k kept rows score above the prefix's last hit."""
    mask = np.zeros(ROWS, dtype=bool)
    mask[::25] = True  # 4%, estimated 100%
    expected = _top_kept(index, "fox owl", 5, mask, None)
    counted = _CountedSearcher(index._searcher)
    monkeypatch.setattr(index, "_searcher", counted)
    seen: list[np.ndarray] = []
    found, scores = index.search("fox owl", 5, test=_tested(mask, 1.0, seen))
    assert (found.tolist(), scores.tolist()) == expected
    assert len(counted.limits) >= 2 and counted.limits == sorted(counted.limits)
    assert len(seen) == len(counted.limits)


def test_ties_at_the_cut_are_searched_past_the_prefix(tmp_path: Path) -> None:
    """Every row scores the same: the k-th kept row always ties with the prefix's last hit,
    so the search reads every match and keeps the kept rows of lowest position."""
    directory = tmp_path / "index"
    bm25.build_bm25_index(directory, ["fox den"] * ROWS)
    tied = bm25.Bm25Index(directory)
    mask = np.zeros(ROWS, dtype=bool)
    mask[1::3] = True
    tie_order = np.random.default_rng(7).permutation(ROWS)
    seen: list[np.ndarray] = []
    found, scores = tied.search("fox", 10, tie_order=tie_order, test=_tested(mask, 1 / 3, seen))
    kept = np.flatnonzero(mask)
    expected = sorted(kept[np.argsort(tie_order[kept], kind="stable")][:10].tolist())
    assert found.tolist() == expected
    assert len(set(scores.tolist())) == 1
    assert sum(rowids.size for rowids in seen[-1:]) == ROWS  # the last prefix: every match
