"""An open table remembers the rows of its recent filters (``LoadedTable.passing_rows``): the
same filter is computed once, a filter is never served another's rows (values equal across
types included), the cache stays within its bounds, and a new version of the table starts
with none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import Comparison, InList, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine, nearest, tables
from hotdata_retrieval.engines.local.masks import passing_rows, reads_as_sql
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex
from hotdata_retrieval.errors import PlanError

BIG = 2**53


def _engine(tmp_path: Path) -> LocalEngine:
    engine = LocalEngine(tmp_path / "db")
    engine.load_table(
        "t",
        pa.table(
            {
                "id": [0, 1, 2, 3, 4, 5],
                "x": pa.array([-0.0, 0.0, 1.5, -2.0, None, 3.0], pa.float64()),
                "n": pa.array([BIG, BIG + 1, 3, 4, 5, 6], pa.int64()),
                "embedding": pa.array([[float(i), 1.0] for i in range(6)], pa.list_(pa.float32())),
            }
        ),
        key_column="id",
    )
    return engine


def test_a_filter_is_computed_once_and_its_rows_cannot_be_changed(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        predicate = Comparison(column="x", operator=">", value=0)
        first = loaded.passing_rows(predicate)
        again = loaded.passing_rows(Comparison(column="x", operator=">", value=0))
        assert again is first
        assert first.tolist() == passing_rows(predicate, loaded.data).tolist()
        assert first.tolist() == [False, False, True, False, False, True]
        with pytest.raises(ValueError, match="read-only"):
            first[0] = True


def test_a_filters_check_is_remembered_only_when_it_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    checked = tables.check_filter_values

    def counted(predicate: object, *args: object) -> None:
        calls.append(predicate)
        checked(predicate, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(tables, "check_filter_values", counted)
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        good = Comparison(column="x", operator=">", value=0)
        for _ in range(3):
            loaded.check_filter(Comparison(column="x", operator=">", value=0))
        assert calls == [good]
        bad = Comparison(column="x", operator=">", value="zero")
        for _ in range(2):
            with pytest.raises(PlanError, match="zero"):
                loaded.check_filter(bad)
        assert calls == [good, bad, bad]
        # equal across types, but another filter: checked on its own
        loaded.check_filter(Comparison(column="x", operator=">", value=0.0))
        assert len(calls) == 4


def test_a_filters_reading_as_sql_is_the_masks_own_answer(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        for predicate in (
            Comparison(column="x", operator=">", value=0),
            InList(column="n", values=[1, 2.5]),  # values of two types: not read as SQL
            InList(column="n", values=[]),
        ):
            expected = reads_as_sql(predicate, loaded.data.schema)
            assert loaded.filter_reads_as_sql(predicate) is expected
            assert loaded.filter_reads_as_sql(predicate) is expected
        assert not loaded.filter_reads_as_sql(InList(column="n", values=[1, 2.5]))


def test_a_filters_reading_as_sql_is_remembered_by_the_types_of_its_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters that differ in their values alone are read once; another type of value is
    another shape, read on its own."""
    calls: list[object] = []
    read = tables.reads_as_sql

    def counted(predicate: Any, schema: pa.Schema) -> bool:
        calls.append(predicate)
        return read(predicate, schema)

    monkeypatch.setattr(tables, "reads_as_sql", counted)
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        for value in (1, 7, 9):
            assert loaded.filter_reads_as_sql(InList(column="n", values=[value, 2]))
        assert len(calls) == 1
        assert not loaded.filter_reads_as_sql(InList(column="n", values=[4, 2.5]))
        assert loaded.filter_reads_as_sql(InList(column="n", values=[4.5, 2.5]))
        assert not loaded.filter_reads_as_sql(InList(column="n", values=[3, 0.5]))
        assert len(calls) == 3


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # An integer literal compares exactly; a float one as a float, where 2**53 + 1 is 2**53.
        (
            Comparison(column="n", operator="=", value=BIG),
            Comparison(column="n", operator="=", value=float(BIG)),
        ),
    ],
)
def test_filters_equal_across_types_keep_their_own_rows(
    tmp_path: Path, left: Comparison, right: Comparison
) -> None:
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        expected = [passing_rows(p, loaded.data).tolist() for p in (left, right)]
        assert expected[0] != expected[1]  # the case is one a shared entry would get wrong
        assert left == right  # and Python's equality alone would share it
        for order in ((left, right), (right, left)):
            fresh = engine._loaded("t")
            fresh._filtered.clear()
            found = {repr(p): fresh.passing_rows(p).tolist() for p in order}
            assert [found[repr(left)], found[repr(right)]] == expected


def test_the_cache_holds_at_most_its_entries_and_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        for value in range(tables.FILTER_CACHE_ENTRIES + 5):
            loaded.passing_rows(Comparison(column="n", operator=">", value=value))
        assert len(loaded._filtered) == tables.FILTER_CACHE_ENTRIES
        newest = Comparison(column="n", operator=">", value=tables.FILTER_CACHE_ENTRIES + 4)
        assert loaded.passing_rows(newest) is loaded.passing_rows(newest)
        monkeypatch.setattr(tables, "FILTER_CACHE_BYTES", 2 * loaded.data.num_rows)
        loaded.passing_rows(Comparison(column="n", operator="<", value=1))
        assert len(loaded._filtered) == 2
        assert sum(mask.nbytes for mask in loaded._filtered.values()) <= tables.FILTER_CACHE_BYTES


def test_a_filter_that_fails_is_not_remembered(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        loaded = engine._loaded("t")
        bad = Comparison(column="x", operator="=", value="not a number")
        for _ in range(2):
            with pytest.raises(pa.ArrowInvalid):
                loaded.passing_rows(bad)
        assert not loaded._filtered


def test_a_new_version_of_the_table_reads_its_own_rows(tmp_path: Path) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="t", column="embedding", query_vector=[0.0, 1.0]),
        filter=Comparison(column="x", operator=">", value=1),
        columns=["id"],
        limit=10,
    )
    with _engine(tmp_path) as engine:
        assert sorted(hit.key for hit in engine.search(plan).hits) == [2, 5]
        engine.load_table(
            "t",
            pa.table(
                {
                    "id": [10, 11],
                    "x": pa.array([5.0, -5.0], pa.float64()),
                    "n": pa.array([1, 2], pa.int64()),
                    "embedding": pa.array(np.ones((2, 2)).tolist(), pa.list_(pa.float32())),
                }
            ),
            key_column="id",
        )
        assert [hit.key for hit in engine.search(plan).hits] == [10]


def _index(rows: int = 400, dimensions: int = 16) -> VectorColumnIndex:
    vectors = np.random.default_rng(5).standard_normal((rows, dimensions)).astype(np.float32)
    return VectorColumnIndex(pa.array(list(vectors), pa.list_(pa.float32())))


@pytest.mark.parametrize("function", ["cosine_distance", "l2_distance", "negative_dot_product"])
def test_a_cached_filters_gathered_rows_rank_as_the_rows_themselves(function: str) -> None:
    index = _index()
    mask = np.zeros(index.rows, dtype=bool)
    mask[::13] = True
    kept = mask.copy()
    kept.flags.writeable = False  # as an open table's cached filter is
    query = np.random.default_rng(9).standard_normal(index.dimensions)
    expected = index.nearest(function, query, 7, mask=mask)
    for _ in range(3):  # screened in place, gathered, then from the cache
        found = index.nearest(function, query, 7, mask=kept)
        assert found[0].tolist() == expected[0].tolist()
        assert found[1].tolist() == expected[1].tolist()
    assert len(index._subsets) == 1
    assert index.nearest(function, query, 7, mask=mask)[0].tolist() == expected[0].tolist()
    assert len(index._subsets) == 1  # a writeable mask is not kept: it may change
    other = np.zeros(index.rows, dtype=bool)
    other[5::11] = True
    expected_other = index.nearest(function, query, 7, mask=other)[0].tolist()
    other.flags.writeable = False
    assert index.nearest(function, query, 7, mask=other)[0].tolist() == expected_other
    assert expected_other != expected[0].tolist()


def test_the_gathered_rows_stay_within_their_share_of_the_matrix() -> None:
    index = _index()
    budget = index.matrix.nbytes // nearest.SUBSET_CACHE_SHARE
    query = np.ones(index.dimensions)
    for start in range(12):
        mask = np.zeros(index.rows, dtype=bool)
        mask[start::40] = True
        mask.flags.writeable = False
        for _ in range(2):  # gathered on its second search
            index.nearest("cosine_distance", query, 3, mask=mask)
        held = sum(subset.nbytes for subset in index._subsets.values())
        assert held <= budget
    assert 1 < len(index._subsets) < 12


@pytest.mark.parametrize(
    ("odd_row", "query_scale"),
    [
        ("zero", 1.0),
        ("tiny", 1.0),
        ("huge", 1.0),
        (None, 0.0),
        (None, 1e-30),
        (None, 1e30),
    ],
)
def test_the_kept_rows_cosine_screen_agrees_with_the_full_one(
    odd_row: str | None, query_scale: float
) -> None:
    """A cached filter's cosine screen (reciprocal norms of the kept rows) returns the rows and
    distances of the full screen, and gives way to it when a kept row or the query is one
    the float32 screen cannot rank."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    kept = np.zeros(400, dtype=bool)
    kept[::9] = True
    if odd_row is not None:
        vectors[18] = {"zero": 0.0, "tiny": 1e-25, "huge": 3e19}[odd_row]
    index = VectorColumnIndex(pa.array(list(vectors), pa.list_(pa.float32())))
    query = rng.standard_normal(16) * query_scale
    expected = index.nearest("cosine_distance", query, 8, mask=kept)  # writeable: full screen
    cached = kept.copy()
    cached.flags.writeable = False
    for _ in range(3):  # in place, gathered, then the kept rows' own screen
        found = index.nearest("cosine_distance", query, 8, mask=cached)
        assert found[0].tolist() == expected[0].tolist()
        assert found[1].tolist() == expected[1].tolist()
    (subset,) = index._subsets.values()
    clean = odd_row is None
    assert isinstance(subset.cosine_reciprocals, np.ndarray) is clean


def test_a_cached_subset_is_charged_up_front_for_every_fact_it_may_gain() -> None:
    """The share of the matrix a cached filter's rows are admitted under counts the per-row
    facts searches add later, so the budget holds as they are added (and reading the charge
    never walks what another thread's search is adding)."""
    index = _index()
    mask = np.zeros(index.rows, dtype=bool)
    mask[::17] = True
    mask.flags.writeable = False
    query = np.random.default_rng(3).standard_normal(index.dimensions)
    for _ in range(2):  # gathered on its second search
        index.nearest("cosine_distance", query, 3, mask=mask)
    (subset,) = index._subsets.values()
    charged = subset.nbytes
    for function in ("cosine_distance", "l2_distance", "negative_dot_product"):
        index.nearest(function, query, 3, mask=mask)
    assert subset.nbytes == charged
    assert isinstance(subset.cosine_reciprocals, np.ndarray)
    held = (
        subset.gathered(index.matrix).nbytes
        + subset.rowids.nbytes
        + sum(values.nbytes for values in subset.per_row.values())
        + subset.cosine_reciprocals.nbytes
    )
    assert len(subset.per_row) == 5  # every fact a search may add
    assert held == charged


def test_a_subset_over_its_share_with_its_facts_evicts_nothing() -> None:
    """A filter whose gathered rows fit the share but not with the facts it may gain is not
    kept, and the filters kept before it stay."""
    index = _index(rows=400, dimensions=4)
    budget = index.matrix.nbytes // nearest.SUBSET_CACHE_SHARE
    query = np.ones(index.dimensions)
    small = np.zeros(index.rows, dtype=bool)
    small[:10] = True
    small.flags.writeable = False
    for _ in range(2):  # gathered on its second search
        index.nearest("cosine_distance", query, 3, mask=small)
    big = np.zeros(index.rows, dtype=bool)
    big[100:150] = True  # 50 rows: 1 in 8, screened over its rows alone
    big.flags.writeable = False
    gathered = 50 * index.dimensions * 4
    assert gathered <= budget < gathered + 50 * (8 + nearest._SUBSET_FACT_BYTES)
    expected = index.nearest("cosine_distance", query, 3, mask=big.copy())
    for _ in range(2):  # refused on its second search, when it would be gathered
        found = index.nearest("cosine_distance", query, 3, mask=big)
        assert found[0].tolist() == expected[0].tolist()
    (kept,) = index._subsets.values()
    assert kept.mask is small


@pytest.mark.parametrize("function", ["cosine_distance", "l2_distance", "negative_dot_product"])
def test_a_first_seen_filter_is_screened_in_place_as_the_exact_scan_ranks(
    function: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter's first search multiplies its kept rows block by block (blocks of 16 rows
    here, so several) without keeping a copy of them; its rows and distances are the exact
    float64 ranking of the kept rows (ordered by the Float32 distance, then rowid), as on
    its second search (gathered) and third (from the cache)."""
    monkeypatch.setattr(nearest, "GATHER_BLOCK_BYTES", 16 * 16 * 4)
    index = _index(rows=2000)
    mask = np.zeros(index.rows, dtype=bool)
    mask[np.random.default_rng(2).choice(index.rows, 150, replace=False)] = True
    mask.flags.writeable = False
    query = np.random.default_rng(4).standard_normal(index.dimensions)
    kept = np.flatnonzero(mask)
    exact = index.row_distances(function, query, kept)
    order = np.lexsort((kept, exact.astype(np.float32)))[:9]
    found = index.nearest(function, query, 9, mask=mask)
    assert not index._subsets  # nothing gathered on a first search
    assert found[0].tolist() == kept[order].tolist()
    assert found[1].tolist() == exact[order].tolist()
    for _ in range(2):
        again = index.nearest(function, query, 9, mask=mask)
        assert again[0].tolist() == found[0].tolist()
        assert again[1].tolist() == found[1].tolist()
    assert len(index._subsets) == 1
