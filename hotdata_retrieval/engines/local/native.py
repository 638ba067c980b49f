"""The local engine's native answers to compiled plans: a search of one BM25 or
nearest-neighbour branch, or a reciprocal rank or min-max fusion of such branches, answered
with the rows its compiled statement returns, without planning the statement.

DataFusion spends a fixed few milliseconds planning and running a statement whatever the
table's size: 3 to 5 ms for one branch, 10 to 15 ms for a fused statement of seven CTEs
(measured in ``benchmarks/bench_engine.py``: logical and physical planning of the ranked CTEs,
the ``FULL OUTER JOIN`` and the join back to the table). At 100,000 rows that is as much as the
nearest-neighbour scan itself. :meth:`LocalEngine.search
<hotdata_retrieval.engines.local.LocalEngine.search>` answers such a plan natively, step for
step as its statement (``docs/sql-shapes.md``) defines it:

1. each branch's candidates come from the function its SQL reads: the BM25 index
   (``bm25_search``'s search: ``k`` = the depth, or ``limit + offset`` for one branch; under a
   filter, the mask applied to a growing prefix of tantivy's order until k kept rows are
   complete) and the nearest-neighbour scan (``nearest_scan``'s, the
   filter a row mask before the bound, the HNSW index when it serves an unfiltered query),
   one after the other: the scan's matrix product is bound by memory bandwidth and already
   uses every core, so a text branch run beside it only slows both (measured: a fusion at
   100,000 rows took 1.44x its nearest branch with the scan on a background thread, 1.29x
   in sequence);
2. the filter keeps rows as the statement's ``WHERE`` does (SQL's three-valued logic,
   :func:`~hotdata_retrieval.engines.local.masks.predicate_mask`);
3. each branch is ordered by its raw score as the engine returns it (Float32), ties by key
   (text) or rowid (nearest: the fast-path rewrite's tie-break), rows without a distance
   last; one branch is then cut to the page; a fusion's branches are cut at the depth and
   ranked with ties sharing a rank (``RANK()``, :func:`~hotdata_retrieval.fusion.
   competition_ranks`) and fused by the method's reference fusion
   (:func:`~hotdata_retrieval.fusion.reference_fusion`): ``min_score``, the order by fused
   score descending and key ascending, the page;
4. the page's rows are read from the table by rowid, and for each branch the plan's
   ``page_scores`` names, the distance of every page row that branch did not return is
   computed from the row's vector with the distance functions' own NumPy kernel
   (:meth:`~hotdata_retrieval.engines.local.nearest.VectorColumnIndex.row_distances`), as
   the statement's final join computes it.

Only plans whose every step is the statement's own arithmetic are taken: reciprocal rank
fusion and the min-max combination (the reference computes each in the statement's order, so
scores are equal to the last bit), BM25 and nearest-neighbour branches, the table's own key
where a tie is cut by key, and finite raw scores under a score-based method. Anything else —
distribution-based score fusion (its mean and deviation are sums whose order DataFusion
chooses), ``vector_search`` branches, another key column, an infinite distance under min-max,
a filter the mask does not read as the ``WHERE`` does (a decimal column, an ``IN`` list of mixed
types, an empty ``IN`` list) or cannot compare, a table with a column named like a computed
one —
runs the statement. ``tests/test_native_search.py`` compares both forms on random corpora.
``SearchResult.sql`` is the statement either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from hotdata_retrieval.engines.checks import ValueKind
from hotdata_retrieval.engines.local._fusion import fuse
from hotdata_retrieval.engines.local._text_filters import TextFilter
from hotdata_retrieval.engines.local.bm25 import FILTER_SHARE, HitTest
from hotdata_retrieval.engines.local.distance import float32_distances, float64_query
from hotdata_retrieval.engines.local.fastpath import DISTANCE_COLUMN, TIE_COLUMN
from hotdata_retrieval.engines.local.hybrid import METRIC_FUNCTIONS
from hotdata_retrieval.engines.results import ColumnRows
from hotdata_retrieval.fusion import competition_ranks as reference_ranks
from hotdata_retrieval.fusion import fill_bounds, reference_fusion
from hotdata_retrieval.plan.search import (
    Bm25Search,
    BranchRanking,
    Fusion,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    debug_columns,
)

if TYPE_CHECKING:
    from hotdata_retrieval.engines.local.tables import LoadedTable

NATIVE_FUSIONS: tuple[type, ...] = (ReciprocalRankFusion, MinMaxFusion)
"""Fusion methods answered natively (exactly those classes, not subclasses: a subclass may
score differently)."""

COMPUTED_COLUMNS = frozenset({"score", DISTANCE_COLUMN, TIE_COLUMN})
"""Columns the statement computes; a table with a column of one of these names runs the
statement (the fast-path rewrite leaves it alone too)."""

Rows = Sequence[dict[str, Any]]

ORDERED_KEYS = frozenset({ValueKind.INTEGER, ValueKind.TEXT})
"""Key kinds whose order :meth:`LoadedTable.tie_order` gives as Python orders the keys, so
the fusion runs in NumPy (:func:`~hotdata_retrieval.engines.local._fusion.fuse`); other keys
are fused by the reference."""


class _Branch:
    """One branch's candidates, best first: rowids and raw scores (Float32 values as Python
    floats, ``None`` for a row without a distance)."""

    __slots__ = ("higher_is_better", "rowids", "scores")

    def __init__(
        self, rowids: np.ndarray, scores: list[float | None], higher_is_better: bool
    ) -> None:
        self.rowids = rowids
        self.scores = scores
        self.higher_is_better = higher_is_better

    def defined(self) -> tuple[np.ndarray, list[float]]:
        """The rows that have a raw score, and their scores (``WHERE _distance IS NOT
        NULL``)."""
        if None not in self.scores:  # the common case, checked in C
            return self.rowids, cast("list[float]", self.scores)
        kept = [index for index, score in enumerate(self.scores) if score is not None]
        return self.rowids[kept], [float(score) for score in self.scores if score is not None]


def answerable(plan: SearchPlan, loaded: LoadedTable) -> bool:
    """Whether ``plan`` over ``loaded`` is answered natively (see the module docstring)."""
    fusion = plan.fusion
    entry = loaded.entry
    kinds = loaded.column_kinds()
    if entry.rows == 0 or not COMPUTED_COLUMNS.isdisjoint(kinds):
        return False
    if plan.group_by is not None or plan.facets:
        # its candidates are (SearchPlan.candidates); the library groups or counts them
        return False
    if fusion is not None and type(fusion) not in NATIVE_FUSIONS:
        return False
    if (
        plan.tie_breakers
        or plan.formula is not None
        or (fusion is not None and fusion.ranking is not BranchRanking.COMPETITION)
    ):
        return False  # the native path orders by the ranking and the key alone
    if plan.key_column is None:
        return False
    if plan.filter is not None and not loaded.filter_reads_as_sql(plan.filter):
        return False
    cut_by_key = fusion is not None or isinstance(plan.branches[0], Bm25Search)
    if cut_by_key and (entry.key_column is None or plan.key_column != entry.key_column):
        return False  # the index cuts ties by the table's key; the statement by the plan's
    for branch in plan.branches:
        if isinstance(branch, Bm25Search):
            if branch.column not in entry.text_indexes:
                return False
        elif isinstance(branch, NearestNeighborSearch):
            if branch.exact:
                return False  # the statement scans every row; the index could be approximate
            if kinds.get(branch.column) is not ValueKind.VECTOR:
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


def native_rows(plan: SearchPlan, loaded: LoadedTable) -> Rows | None:
    """The result rows of ``plan``'s compiled statement over ``loaded``, computed natively, or
    ``None`` when the plan is not answered natively (the caller then runs the statement).

    Args:
        plan: the executed plan (:func:`~hotdata_retrieval.engines.results.executed_plan`):
            its projection holds the key, and for a fusion with ``include_branch_scores`` its
            result columns hold each branch's rank and raw score.
        loaded: the open table the plan searches.

    Returns:
        One mapping per row (a single branch's as :class:`~hotdata_retrieval.engines.results.
        ColumnRows`), column name to value, as the statement's rows come back from
        DataFusion (``pyarrow.Table.to_pylist``): the projection, then the raw score
        (``score`` or ``_distance``, a Float32 value as a float, ``None`` for a row without a
        vector) of one branch, or ``score`` (float) and the debug columns (rank int or
        ``None``, raw score float or ``None``) of a fusion.
    """
    if not answerable(plan, loaded):
        return None
    mask = None
    pushed = _text_filters(plan, loaded)
    if plan.filter is not None and len(pushed) < len(plan.branches):
        try:
            mask = loaded.passing_rows(plan.filter)
        except (pa.ArrowException, ValueError, TypeError):
            return None  # a value the column cannot be compared with: the statement says how
    if plan.fusion is None:
        return _single_rows(plan, loaded, mask, pushed)
    return _fused_rows(plan, loaded, mask, pushed)


def _text_filters(plan: SearchPlan, loaded: LoadedTable) -> dict[int, TextFilter | HitTest]:
    """Per text branch (by position) whose index evaluates the plan's filter itself (a
    filter the index holds the columns of: :func:`~hotdata_retrieval.engines.local.
    _text_filters.filter_query`), the filter as a query of that index when it keeps at most
    1 row in :data:`~hotdata_retrieval.engines.local.bm25.FILTER_SHARE` of a sample of the
    table's rows, or else as a test of the hits of a prefix of the index's order
    (:class:`~hotdata_retrieval.engines.local.bm25.HitTest`): either way no row mask over
    the table is computed for the branch."""
    if plan.filter is None:
        return {}
    chosen: dict[int, TextFilter | HitTest] = {}
    for position, branch in enumerate(plan.branches):
        if not isinstance(branch, Bm25Search):
            continue
        found = loaded.text_filter(plan.filter, branch.column)
        if found is None:
            continue
        if found.share * FILTER_SHARE <= 1:
            chosen[position] = found
        else:
            chosen[position] = _hit_test(found, loaded)
    return chosen


def _hit_test(found: TextFilter, loaded: LoadedTable) -> HitTest:
    """``found`` as a test of a search's hits, read from ``loaded``'s integer columns."""

    def keeps(rowids: np.ndarray) -> np.ndarray:
        return found.keeps(loaded.rows_of(rowids))

    return HitTest(keeps, found.share)


def _single_rows(
    plan: SearchPlan,
    loaded: LoadedTable,
    mask: np.ndarray | None,
    pushed: dict[int, TextFilter | HitTest],
) -> ColumnRows:
    """``SELECT <columns>, <raw score> ... ORDER BY <raw score>, <tie> LIMIT l OFFSET o``."""
    branch = plan.branches[0]
    bound = plan.limit + plan.offset
    if isinstance(branch, Bm25Search):
        found = _text_branch(loaded, branch, bound, mask, pushed.get(0))
    else:
        assert isinstance(branch, NearestNeighborSearch)
        found = _nearest_branch(loaded, branch, bound, mask, plan.key_column, with_nulls=True)
    end = plan.offset + plan.limit
    page = found.rowids[plan.offset : end]
    columns = {column: loaded.values_at(column, page) for column in plan.projection}
    columns[branch.raw_score_column] = found.scores[plan.offset : end]
    return ColumnRows(columns)


def _fused_rows(
    plan: SearchPlan,
    loaded: LoadedTable,
    mask: np.ndarray | None,
    pushed: dict[int, TextFilter | HitTest],
) -> Rows | None:
    """The fused statement's rows (module docstring, steps 1 to 4)."""
    fusion = plan.fusion
    assert fusion is not None and plan.key_column is not None  # answerable() holds
    depth = plan.depth
    ranked: list[_Branch] = []
    for position, branch in enumerate(plan.branches):
        if isinstance(branch, Bm25Search):
            ranked.append(_text_branch(loaded, branch, depth, mask, pushed.get(position)))
        else:
            assert isinstance(branch, NearestNeighborSearch)
            ranked.append(_nearest_branch(loaded, branch, depth, mask, plan.key_column))
    defined = [candidates.defined() for candidates in ranked]
    scores = [branch_scores for _, branch_scores in defined]
    if not isinstance(fusion, ReciprocalRankFusion) and not all(
        math.isfinite(score) for branch_scores in scores for score in branch_scores
    ):
        return None  # the statement's arithmetic on an infinity is its own (NaN): run it
    if loaded.column_kinds().get(plan.key_column) in ORDERED_KEYS:
        fused = fuse(
            fusion,
            [
                (rowids, np.array(branch_scores, dtype=np.float64))
                for rowids, branch_scores in defined
            ],
            loaded.tie_order(),
            limit=plan.limit,
            offset=plan.offset,
        )
        page, fused_scores, ranks, raw = fused.rowids, fused.scores, fused.ranks, fused.raw
    else:
        page, fused_scores, ranks, raw = _reference_page(plan, fusion, loaded, defined, ranked)
    rows = loaded.rows_at(plan.projection, page)
    completed = _page_scores(plan, loaded, page)
    # Read once from the plan, not per row: each branch's name and debug columns.
    debug = (
        [
            (name, *debug_columns(name, branch))
            for name, branch in zip(plan.branch_names, plan.branches)
        ]
        if plan.include_branch_scores
        else []
    )
    for position, (row, score) in enumerate(zip(rows, fused_scores)):
        row["score"] = score
        for index, (name, rank_column, raw_column) in enumerate(debug):
            row[rank_column] = ranks[index][position]
            value = raw[index][position]
            if value is None and name in completed:
                value = completed[name][position]
            row[raw_column] = value
    fill_bounds(plan, rows, scores)
    return rows


def _reference_page(
    plan: SearchPlan,
    fusion: Fusion,
    loaded: LoadedTable,
    defined: list[tuple[np.ndarray, list[float]]],
    ranked: list[_Branch],
) -> tuple[np.ndarray, list[float], list[list[int | None]], list[list[float | None]]]:
    """The page of the reference fusion over keys of a kind :func:`~hotdata_retrieval.
    engines.local._fusion.fuse` does not order (neither integers nor text): its rowids,
    fused scores, and per branch each row's rank and raw score (``None`` where missed)."""
    assert plan.key_column is not None
    keys = [loaded.values_at(plan.key_column, rowids) for rowids, _ in defined]
    hits = reference_fusion(
        fusion,
        keys,
        ranks=[
            reference_ranks(branch_scores, higher_is_better=candidates.higher_is_better)
            for (_, branch_scores), candidates in zip(defined, ranked)
        ],
        scores=[branch_scores for _, branch_scores in defined],
        limit=plan.limit,
        offset=plan.offset,
    )
    rowid_of: dict[Any, int] = {}
    for branch_keys, (rowids, _) in zip(keys, defined):
        rowid_of.update(zip(branch_keys, rowids.tolist()))
    page = np.array([rowid_of[hit.key] for hit in hits], dtype=np.int64)
    raw_of = [
        dict(zip(branch_keys, branch_scores))
        for branch_keys, (_, branch_scores) in zip(keys, defined)
    ]
    return (
        page,
        [hit.score for hit in hits],
        [[hit.ranks[index] for hit in hits] for index in range(len(defined))],
        [[raw_of[index].get(hit.key) for hit in hits] for index in range(len(defined))],
    )


def _page_scores(
    plan: SearchPlan, loaded: LoadedTable, page: np.ndarray
) -> dict[str, list[float | None]]:
    """Per branch ``page_scores`` names, the distance of each page row (rowids ``page``) by
    the branch's distance function, rounded to Float32 as the function's result, ``None``
    for a row without a vector: the statement's ``COALESCE(fused.<branch>_distance,
    <distance>(base.<column>, <vector>))`` where the branch did not return the row."""
    completed: dict[str, list[float | None]] = {}
    for name, branch in plan.page_scored_branches:
        distances = loaded.vector_index(branch.column).row_distances(
            METRIC_FUNCTIONS[branch.metric], branch.query_vector, page
        )
        completed[name] = [
            None if math.isnan(value) else value for value in float32_distances(distances).tolist()
        ]
    return completed


def _text_branch(
    loaded: LoadedTable,
    branch: Bm25Search,
    bound: int,
    mask: np.ndarray | None,
    where: TextFilter | HitTest | None = None,
) -> _Branch:
    """``bm25_search`` (without its k under a filter), the filter, then ``ORDER BY score DESC,
    <key> ASC LIMIT bound`` on the Float32 scores.

    Under a filter the index applies the mask to a growing prefix of its own order
    (:meth:`~hotdata_retrieval.engines.local.bm25.Bm25Index.search`): the kept rows scoring
    above the prefix's last hit are the first kept rows of the whole order, so the answer is
    the statement's, and every match is fetched only when the filter keeps too few. A filter
    the index evaluates itself (``where``, from :func:`_text_filters`) is a clause of the
    index's query instead, or tested on the prefix's hits alone (a mask of the table's rows,
    when the plan computed one anyway, is read in its place).
    """
    pushed = where if isinstance(where, TextFilter) else None
    rowids, scores = loaded.bm25[branch.column].search(
        branch.search_text,
        bound,
        tie_order=loaded.tie_order(),
        mask=None if pushed is not None else mask,
        where=None if pushed is None else pushed.query,
        spread=pushed is not None and pushed.postings,
        test=where if isinstance(where, HitTest) and mask is None else None,
        ranked=True,  # already ordered by (score descending, key), at most bound rows
    )
    # each float32 as the Python float that holds it exactly: what float() of it gives
    return _Branch(rowids, scores.tolist(), True)


def nearest_scan(
    loaded: LoadedTable,
    column: str,
    function: str,
    vector: np.ndarray,
    bound: int,
    mask: np.ndarray | None,
    *,
    with_nulls: bool,
    tie_key: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``bound`` rows nearest ``vector`` among those ``mask`` keeps, as the
    ``nearest_scan`` table function and the native search read them: ``(rowids, float64
    distances, Float32 distances)`` ordered by Float32 distance, then the table's key (its
    rowid without one: ``LoadedTable.tie_order``), as every store's ``ORDER BY <distance>,
    <key>`` orders them, so a tie at a branch's depth keeps the rows of lowest key (``tie_key``:
    the plan's key, when it is another column than the table's). The HNSW index
    serves only an unfiltered scan; with ``with_nulls`` a short answer is filled with rows
    without a vector (distance NaN), as ``ORDER BY _distance`` sorts their NULLs last.

    Raises:
        DimensionMismatchError: the vector's length is not the column's.
    """
    return loaded.vector_index(column).nearest_rounded(
        function,
        vector,
        bound,
        mask=mask,
        approximate=mask is None,
        with_nulls=with_nulls,
        tie_order=loaded.tie_order(tie_key),
    )


def _nearest_branch(
    loaded: LoadedTable,
    branch: NearestNeighborSearch,
    bound: int,
    mask: np.ndarray | None,
    tie_key: str | None,
    *,
    with_nulls: bool = False,
) -> _Branch:
    """The branch's :func:`nearest_scan` (ties by ``tie_key``, the plan's key), a distance
    beyond Float32 an infinity, an undefined one (NaN) NULL."""
    rowids, _, rounded = nearest_scan(
        loaded,
        branch.column,
        METRIC_FUNCTIONS[branch.metric],
        float64_query(branch.query_vector),
        bound,
        mask,
        with_nulls=with_nulls,
        tie_key=tie_key,
    )
    scores: list[float] = rounded.tolist()
    if not math.isnan(sum(scores)):  # no NaN among them, checked in C
        return _Branch(rowids, cast("list[float | None]", scores), False)
    return _Branch(rowids, [None if math.isnan(value) else value for value in scores], False)
