"""The local engine's fast path for fused searches: a fusion of BM25 and nearest-neighbour
branches answered natively, with the rows its compiled statement returns.

A fused statement (``docs/sql-shapes.md``) is one SQL statement of seven CTEs; DataFusion spends
a fixed 10 to 15 ms planning and running it (measured in ``benchmarks/bench_engine.py``:
logical and physical planning of the ranked CTEs, the ``FULL OUTER JOIN`` and the join back to
the table), whatever the table's size, which at 100,000 rows is as much as the nearest branch
itself. :meth:`LocalEngine.search <hotdata_retrieval.engines.local.LocalEngine.search>`
answers such a plan without planning it, step for step as the statement defines it:

1. each branch's candidates come from the function its CTE reads: the BM25 index
   (``bm25_search``'s search, ``k`` = the depth, or every match when there is a filter) and the
   nearest-neighbour scan (``nearest_scan``'s, the filter a row mask before the bound), the
   nearest scans started on the engine's background thread so their BLAS work overlaps the
   text branches;
2. the filter keeps rows as the statement's ``WHERE`` does (SQL's three-valued logic,
   :func:`~hotdata_retrieval.engines.local.masks.predicate_mask`);
3. each branch is ordered by its raw score as the engine returns it (Float32), ties by key
   (text) or rowid (nearest), cut at the depth, and ranked with ties sharing a rank
   (``RANK()``, :func:`~hotdata_retrieval.fusion.competition_ranks`);
4. the ranked lists are fused by the method's reference fusion
   (:func:`~hotdata_retrieval.fusion.reference_fusion`): ``min_score``, then the order by fused
   score descending and key ascending, then the page;
5. the page's rows are read from the table by rowid.

Only plans whose every step is the same arithmetic as the statement's are taken: reciprocal
rank fusion and the min-max combination (the reference computes each in the statement's
order, so scores are equal to the last bit: ``tests/test_fused_fast_path.py`` compares the
two forms on random corpora), BM25 and nearest-neighbour branches, the table's own key, and
finite raw scores. Anything else — distribution-based score fusion (its mean and deviation are
sums whose order DataFusion chooses), ``vector_search`` branches, another key column, an
infinite distance under a score-based method — runs the statement. ``SearchResult.sql`` is the
statement either way.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval.engines.local.hybrid import METRIC_FUNCTIONS
from hotdata_retrieval.engines.local.masks import predicate_mask
from hotdata_retrieval.fusion import competition_ranks, reference_fusion
from hotdata_retrieval.plan.search import (
    Bm25Search,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    debug_columns,
)

if TYPE_CHECKING:
    from hotdata_retrieval.engines.local.tables import LoadedTable

__all__ = ["NATIVE_FUSIONS", "fused_rows"]

NATIVE_FUSIONS: tuple[type, ...] = (ReciprocalRankFusion, MinMaxFusion)
"""Fusion methods the fast path answers (exactly those classes, not subclasses: a subclass
may score differently)."""

Scan = Callable[[], tuple[np.ndarray, np.ndarray]]
"""A nearest-neighbour scan: ``(rowids, float64 distances)``."""

Background = Callable[[Scan], "concurrent.futures.Future[tuple[np.ndarray, np.ndarray]]"]
"""Runs a scan on the engine's background thread and returns its future."""


class _Branch:
    """One branch's ranked candidates: rowids best first, raw scores (Float32 values as
    Python floats) and competition ranks."""

    __slots__ = ("ranks", "rowids", "scores")

    def __init__(self, rowids: np.ndarray, scores: list[float], higher_is_better: bool) -> None:
        self.rowids = rowids
        self.scores = scores
        self.ranks = competition_ranks(scores, higher_is_better=higher_is_better)


def answerable(plan: SearchPlan, loaded: LoadedTable) -> bool:
    """Whether the fast path answers ``plan`` over ``loaded`` (see the module docstring)."""
    fusion = plan.fusion
    entry = loaded.entry
    if fusion is None or type(fusion) not in NATIVE_FUSIONS or entry.rows == 0:
        return False
    if entry.key_column is None or plan.key_column != entry.key_column:
        return False
    for branch in plan.branches:
        if isinstance(branch, Bm25Search):
            if branch.column not in entry.text_indexes:
                return False
        elif isinstance(branch, NearestNeighborSearch):
            if branch.column not in loaded.data.column_names:
                return False
            kind = loaded.data.schema.field(branch.column).type
            if not (
                pa.types.is_list(kind)
                or pa.types.is_large_list(kind)
                or pa.types.is_fixed_size_list(kind)
            ):
                return False  # the distance functions refuse it: the statement says how
            try:
                index = loaded.vector_index(branch.column)
            except ValueError:
                return False
            if index.present.size and index.dimensions != len(branch.query_vector):
                return False
        else:
            return False
    return True


def fused_rows(
    plan: SearchPlan, loaded: LoadedTable, background: Background
) -> list[dict[str, Any]] | None:
    """The result rows of ``plan``'s compiled statement over ``loaded``, computed natively, or
    ``None`` when the fast path does not answer the plan (the caller then runs the statement).

    Args:
        plan: the executed plan (:func:`~hotdata_retrieval.engines.results.executed_plan`):
            its projection holds the key, and with ``include_branch_scores`` its result
            columns hold each branch's rank and raw score.
        loaded: the open table the plan searches.
        background: starts a nearest-neighbour scan on the engine's background thread.

    Returns:
        One mapping per row, column name to value, as the statement's rows come back from
        DataFusion (``pyarrow.Table.to_pylist``): the projection, ``score`` (float), then the
        debug columns (rank int or ``None``, raw score float or ``None``).
    """
    if not answerable(plan, loaded):
        return None
    fusion = plan.fusion
    assert fusion is not None
    depth = plan.depth
    mask = None
    if plan.filter is not None:
        mask = np.asarray(
            pc.fill_null(predicate_mask(plan.filter, loaded.data), False).to_numpy(
                zero_copy_only=False
            ),
            dtype=bool,
        )
    pending: dict[int, concurrent.futures.Future[tuple[np.ndarray, np.ndarray]]] = {}
    for position, branch in enumerate(plan.branches):
        if isinstance(branch, NearestNeighborSearch):
            pending[position] = background(_nearest_scan(loaded, branch, depth, mask))
    ranked: list[_Branch] = []
    try:
        for position, branch in enumerate(plan.branches):
            if isinstance(branch, Bm25Search):
                ranked.append(_text_branch(loaded, branch, depth, mask))
            else:
                ranked.append(_nearest_branch(*pending.pop(position).result()))
    finally:
        for future in pending.values():
            future.cancel()
    if not isinstance(fusion, ReciprocalRankFusion) and not all(
        math.isfinite(score) for candidates in ranked for score in candidates.scores
    ):
        return None  # the statement's arithmetic on an infinity is its own (NaN): run it
    key_column = loaded.data.column(plan.key_column)
    keys = [
        key_column.take(pa.array(candidates.rowids, pa.int64())).to_pylist()
        for candidates in ranked
    ]
    hits = reference_fusion(
        fusion,
        keys,
        ranks=[candidates.ranks for candidates in ranked],
        scores=[candidates.scores for candidates in ranked],
        limit=plan.limit,
        offset=plan.offset,
    )
    rowid_of: dict[Any, int] = {}
    raw_of: list[dict[Any, float]] = []
    for branch_keys, candidates in zip(keys, ranked):
        rowid_of.update(zip(branch_keys, candidates.rowids.tolist()))
        raw_of.append(dict(zip(branch_keys, candidates.scores)))
    rowids = pa.array([rowid_of[hit.key] for hit in hits], pa.int64())
    rows: list[dict[str, Any]] = loaded.data.select(list(plan.projection)).take(rowids).to_pylist()
    names = plan.branch_names
    for row, hit in zip(rows, hits):
        row["score"] = hit.score
        if plan.include_branch_scores:
            for index, (name, branch) in enumerate(zip(names, plan.branches)):
                rank_column, raw_column = debug_columns(name, branch)
                row[rank_column] = hit.ranks[index]
                row[raw_column] = raw_of[index].get(hit.key)
    return rows


def _text_branch(
    loaded: LoadedTable, branch: Bm25Search, depth: int, mask: np.ndarray | None
) -> _Branch:
    """``bm25_search`` with ``k`` = the depth (every match under a filter), the filter, then
    ``ORDER BY score DESC, <key> ASC LIMIT depth`` on the Float32 scores."""
    tie_order = loaded.tie_order()
    k = depth if mask is None else max(1, loaded.entry.rows)
    rowids, scores = loaded.bm25[branch.column].search(branch.query_text, k, tie_order=tie_order)
    if mask is not None:
        kept = mask[rowids]
        rowids, scores = rowids[kept], scores[kept]
    order = np.lexsort((tie_order[rowids], -scores.astype(np.float64)))[:depth]
    return _Branch(rowids[order], [float(score) for score in scores[order]], True)


def _nearest_scan(
    loaded: LoadedTable, branch: NearestNeighborSearch, depth: int, mask: np.ndarray | None
) -> Scan:
    """The nearest scan ``nearest_scan`` runs for the branch's CTE, as a call for the
    background thread: ``(rowids, float64 distances)`` ordered by Float32 distance, then
    rowid; rows without a vector are never candidates."""
    index = loaded.vector_index(branch.column)
    function = METRIC_FUNCTIONS[branch.metric]
    vector = np.asarray(branch.query_vector, dtype=np.float64)

    def scan() -> tuple[np.ndarray, np.ndarray]:
        return index.nearest(function, vector, depth, mask=mask, approximate=mask is None)

    return scan


def _nearest_branch(rowids: np.ndarray, distances: np.ndarray) -> _Branch:
    """The scan's rows as the statement ranks them: distances as Float32 (a distance beyond
    Float32 is an infinity there; an undefined one, NaN, is NULL and no candidate, as
    ``WHERE _distance IS NOT NULL`` drops it), ordered by distance, then rowid."""
    with np.errstate(over="ignore"):
        rounded = distances.astype(np.float32)
    defined = ~np.isnan(rounded)
    rowids, rounded = rowids[defined], rounded[defined]
    order = np.lexsort((rowids, rounded))
    return _Branch(rowids[order], [float(value) for value in rounded[order]], False)
