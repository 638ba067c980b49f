"""A filter over integer columns that a BM25 index translates is evaluated in NumPy over the
table's integer columns (``LoadedTable._evaluated``), not by the Arrow row mask: its rows are
the mask's (SQL's three-valued logic over NULLs, a filter keeping no row or one row), and a
text, nearest or fused search under it, the filter new in every search, returns the rows the
compiled statement returns on DataFusion, ties at the depth and page cuts included. A cosine
search under a filter's first search is screened by the column's reciprocal norms when every
row can be (``VectorColumnIndex._screen_first_seen_cosine``), as the exact scan ranks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    IsNull,
    NearestNeighborSearch,
    Not,
    Or,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.engines.local import LocalEngine, nearest, tables
from hotdata_retrieval.engines.local.masks import passing_rows
from hotdata_retrieval.engines.local.nearest import VectorColumnIndex
from hotdata_retrieval.plan.filters import And, Between, Predicate
from tests.test_native_search import _corpus, statement_result

ROWS = 600


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    """The tie-heavy corpus of ``test_native_search`` with ``serial``, a permutation of the
    rows' positions, NULL in every seventh row."""
    data = _corpus(17, ROWS, text_keys=False)
    order = list(range(ROWS))
    random.Random(5).shuffle(order)
    serial = pa.array([None if value % 7 == 3 else value for value in order], pa.int64())
    with LocalEngine() as local:
        local.load_table("t", data.append_column("serial", serial), text_columns=["body"])
        yield local


def _only_value(engine: LocalEngine) -> int:
    """A value of ``serial`` held by exactly one row."""
    values = engine._loaded("t").data.column("serial").to_pylist()
    return next(value for value in values if value is not None)


FILTERS: list[Predicate] = [
    Comparison(column="serial", operator=">", value=10 * ROWS),  # keeps no row
    Comparison(column="serial", operator="=", value=0),  # one row, or none when 0 is NULL
    Between(column="serial", low=40, high=45),
    Not(operand=Between(column="serial", low=6, high=ROWS)),  # NULL rows stay out
    Or(operands=[IsNull(column="serial"), Comparison(column="serial", operator="<", value=8)]),
    And(operands=[Comparison(column="rating", operator=">=", value=2), IsNull(column="serial")]),
    Not(operand=InList(column="serial", values=list(range(8, ROWS)))),
    Comparison(column="serial", operator="!=", value=3),  # wide: the mask is not selective
]


@pytest.mark.parametrize("predicate", FILTERS, ids=repr)
def test_the_rows_are_the_masks_and_no_arrow_kernel_runs(
    engine: LocalEngine, predicate: Predicate, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = engine._loaded("t")
    expected = passing_rows(predicate, loaded.data)

    def refused(*arguments: Any) -> np.ndarray:
        raise AssertionError("the Arrow row mask ran")

    monkeypatch.setattr(tables, "passing_rows", refused)
    kept = loaded.passing_rows(predicate)
    assert kept.dtype == np.bool_ and kept.shape == (ROWS,)
    assert kept.tolist() == expected.tolist()


def test_a_filter_keeping_one_row_keeps_it(engine: LocalEngine) -> None:
    value = _only_value(engine)
    kept = engine._loaded("t").passing_rows(Comparison(column="serial", operator="=", value=value))
    assert int(np.count_nonzero(kept)) == 1


def test_a_filter_of_another_column_type_is_the_arrow_masks(engine: LocalEngine) -> None:
    predicate = Comparison(column="category", operator="=", value="a")
    loaded = engine._loaded("t")
    assert loaded.passing_rows(predicate).tolist() == passing_rows(predicate, loaded.data).tolist()


@pytest.mark.parametrize("predicate", [*FILTERS, None], ids=repr)
@pytest.mark.parametrize(("limit", "offset"), [(1, 0), (10, 0), (10, 3)])
def test_a_search_under_a_new_filter_is_the_statements(
    engine: LocalEngine, predicate: Predicate | None, limit: int, offset: int
) -> None:
    text = Bm25Search(table="t", column="body", query_text="fox owl")
    nearest = NearestNeighborSearch(table="t", column="embedding", query_vector=[1.0, 2.0])
    if predicate is None:  # one row kept, never filtered before
        predicate = Comparison(column="serial", operator="=", value=_only_value(engine))
    for source in (text, nearest, ReciprocalRankFusion(branches=[text, nearest], depth=40)):
        plan = SearchPlan(source=source, filter=predicate, limit=limit, offset=offset)
        engine._loaded("t")._filtered.clear()  # the filter is new to the table's cache
        assert engine.search(plan).hits == statement_result(engine, plan).hits


@pytest.mark.parametrize("kept", [1, 2, 37, 150])
@pytest.mark.parametrize("with_ties", [False, True])
def test_a_first_seen_filters_cosine_screen_ranks_as_the_exact_scan(
    kept: int, with_ties: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cosine search under a filter's first search, every row of the column screenable,
    screens the kept rows by the column's reciprocal norms and their product block by block
    (blocks of 16 rows here): the rows, distances and ties at the cut of the exact float64
    ranking of the kept rows (Float32 distance, then rowid), nothing gathered."""
    monkeypatch.setattr(nearest, "GATHER_BLOCK_BYTES", 16 * 2 * 4)
    generator = np.random.default_rng(kept)
    vectors = generator.integers(1, 4, (2000, 2)).astype(np.float32)  # ties at every cut
    index = VectorColumnIndex(pa.array(list(vectors), pa.list_(pa.float32())))
    mask = np.zeros(index.rows, dtype=bool)
    mask[generator.choice(index.rows, kept, replace=False)] = True
    mask.flags.writeable = False
    rowids = np.flatnonzero(mask)
    query = np.array([1.0, 2.0])
    exact = index.row_distances("cosine_distance", query, rowids)
    rounded = exact.astype(np.float32)
    order = np.lexsort((rowids, rounded))
    width = min(9, kept)
    if with_ties:
        width += int(np.count_nonzero(rounded[order][width:] == rounded[order][width - 1]))
    found = index.nearest("cosine_distance", query, 9, mask=mask, with_ties=with_ties)
    assert isinstance(index._cosine_reciprocals, np.ndarray)  # the column's screen's norms
    assert not index._subsets  # nothing gathered on a first search
    assert found[0].tolist() == rowids[order][:width].tolist()
    assert found[1].tolist() == exact[order][:width].tolist()
