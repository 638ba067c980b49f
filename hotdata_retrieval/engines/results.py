"""Typed search results, the same for every engine."""

from __future__ import annotations

import functools
import json
import math
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval import _words
from hotdata_retrieval.engines.checks import (
    NO_COLUMN_FACTS,
    ColumnFacts,
    ValueKind,
    check_side_table_key,
    with_typed_values,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.extras import missing_extra, require_extra
from hotdata_retrieval.fusion import explain_terms, ordered_rows
from hotdata_retrieval.plan._cursor import Cursor, ranking_fingerprint
from hotdata_retrieval.plan.formula import (
    FUSED_SCORE_COLUMN,
    formula_score,
    formula_terms,
    term_columns,
)
from hotdata_retrieval.plan.search import FACET_VALUES, SearchPlan, bound_columns, debug_columns
from hotdata_retrieval.plan.steps import statement_plan

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


@attrs.frozen(kw_only=True)
class BranchScore:
    """What one branch said about a hit.

    Attributes:
        rank: 1-based rank within the branch, ``None`` if the branch did not return the hit.
        raw_score: the branch's own score — BM25 ``score`` (higher is better) or
            ``_distance`` (lower is nearer) — ``None`` if the branch did not return the hit,
            unless the plan's ``page_scores`` names the branch: then the distance computed
            for the hit's row (``None`` only for a row without a vector).
        computed: ``raw_score`` was computed for the hit's row (``page_scores``): the branch
            did not return the hit, so it has no rank.
        normalized: with the plan's ``explain_scores``, the branch's value on the fusion's
            common scale before its weight — the reciprocal rank ``1 / (k + rank)`` (RRF), the
            normalized similarity (min-max, DBSF) — and ``None`` where the branch did not
            return the hit (:class:`~hotdata_retrieval.fusion.BranchTerm`); ``None`` without
            ``explain_scores``.
        contribution: with ``explain_scores``, what the branch adds to the hit's fused score
            (its weighted ``normalized``; 0.0 where it did not return the hit): a hit's
            contributions, added in branch order, are its fused score. ``None`` without
            ``explain_scores``.
    """

    rank: int | None
    raw_score: float | None
    computed: bool = False
    normalized: float | None = None
    contribution: float | None = None

    @property
    def returned(self) -> bool:
        """Whether the branch returned the hit (it has a rank there)."""
        return self.rank is not None


@attrs.frozen(kw_only=True)
class SearchHit:
    """One result row.

    A hit carries either a score or a distance, never a distance under the name of a score:

    Attributes:
        key: the row's key (the plan's ``key_column``); ``None`` for a plan without one.
        columns: the requested table columns, by name (the key included if requested).
        score: higher is better — the fused score of a fusion, or a single text branch's BM25
            score; ``None`` for a single vector branch.
        distance: lower is nearer — a single vector branch's distance (the engine's
            ``_distance``); ``None`` otherwise.
        branches: per branch name, its rank and raw score.
        fused_score: with a score formula, the fusion's own score, which the formula
            rescored (``score`` is the formula's); ``None`` without one.
        terms: with a score formula, each term's value in term order
            (:class:`~hotdata_retrieval.plan.formula.ScoreFormula`): they add up to
            ``score``; empty without one.
        rerank_score: the plan's rerank step's score of the hit (higher is more relevant;
            the hits are in its order), ``None`` without one.
        highlights: with the plan's highlight step, per text column ``{"matches": [[start,
            end], ...], "fragments": [{"start", "end", "text", "matches"}, ...]}``, offsets
            in characters (code points) of the stored text (:mod:`hotdata_retrieval.
            highlights`); empty otherwise.
    """

    key: Any
    columns: Mapping[str, Any]
    score: float | None = None
    distance: float | None = None
    branches: Mapping[str, BranchScore]
    rerank_score: float | None = None
    highlights: Mapping[str, Any] = attrs.field(factory=dict)
    fused_score: float | None = None
    terms: tuple[float, ...] = ()

    @property
    def explained(self) -> bool:
        """Whether the hit says what its score is made of: explained branch scores
        (``explain_scores``) or a score formula's terms."""
        return self.fused_score is not None or any(
            branch.contribution is not None for branch in self.branches.values()
        )

    def explanation(self) -> dict[str, Any]:
        """What the hit's score is made of, as JSON-ready data (the doors' one form):
        ``{"score", "branches": {name: {"rank", "raw_score", "normalized", "contribution"}}}``
        and, with a score formula, ``"fused_score"`` and ``"terms"`` (their values in term
        order, adding up to ``score``). A branch that did not return the hit has ``rank``
        and ``normalized`` ``null`` and ``contribution`` 0. Empty for a hit that is not
        :attr:`explained`."""
        if not self.explained:
            return {}
        document: dict[str, Any] = {"score": self.score}
        if self.fused_score is not None:
            document["fused_score"] = self.fused_score
            document["terms"] = list(self.terms)
        document["branches"] = {
            name: {
                "rank": branch.rank,
                "raw_score": branch.raw_score,
                "normalized": branch.normalized,
                "contribution": branch.contribution,
            }
            for name, branch in self.branches.items()
        }
        return document

    @property
    def ranking_value(self) -> float | None:
        """The value the hits are ordered by: :attr:`score` (descending) or :attr:`distance`
        (ascending)."""
        return self.distance if self.score is None else self.score

    def __hash__(self) -> int:
        # The columns and highlights are mappings (unhashable); equal hits have equal keys
        # and scores, so hashing those alone keeps hash and equality consistent.
        return hash(
            (self.key, self.score, self.distance, self.rerank_score, self.fused_score, self.terms)
        )


@attrs.frozen(kw_only=True)
class VectorScan:
    """What one nearest-neighbour branch scanned and left out, where an engine reports it
    (the SQLite engine, whose vectors may be JSON text of any quality).

    Attributes:
        branch: the branch's name.
        column: the vector column.
        scanned: rows that passed the plan's filter.
        without_vector: of those, rows whose vector is NULL (no candidate on any engine).
        skipped: of those, rows whose vector has no distance to the query: malformed JSON,
            a non-number or non-finite component, another dimension than the query's.
    """

    branch: str
    column: str
    scanned: int
    without_vector: int
    skipped: int


class ColumnRows(Sequence[dict[str, Any]]):
    """Result rows held as columns — column name to its values, one per row, in order — and
    read as one mapping of column name to value per row (what ``pyarrow.Table.to_pylist``
    gives) only when a row is read: an engine that answers natively hands its page over so,
    and a search's hits are built from it only when they are read (:class:`SearchResult`).

    Args:
        columns: column name → its values (lists of one length).
    """

    __slots__ = ("_columns", "_size")

    def __init__(self, columns: Mapping[str, list[Any]]) -> None:
        self._columns = dict(columns)
        self._size = len(next(iter(self._columns.values()))) if self._columns else 0

    def column(self, name: str) -> list[Any]:
        """Column ``name``'s values, one per row (the list held: do not change it).

        Raises:
            KeyError: no such column.
        """
        return self._columns[name]

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return {name: values[index] for name, values in self._columns.items()}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = list(self._columns)
        for values in zip(*self._columns.values()):
            yield dict(zip(names, values))


def _column(rows: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    """One column of result rows, as a list."""
    if not rows:
        return []
    if isinstance(rows, ColumnRows):
        return rows.column(name)
    return [row[name] for row in rows]


class _LazyHits:
    """A page's hits not built yet: how to build them, and the keys they will carry (read
    without building them: :attr:`SearchResult.keys`)."""

    __slots__ = ("build", "keys")

    def __init__(self, build: Callable[[], tuple[SearchHit, ...]], keys: list[Any]) -> None:
        self.build = build
        self.keys = keys


@attrs.frozen(kw_only=True)
class SearchResult:
    """The hits of one search, best first, with the SQL that produced them.

    Attributes:
        hits: best first. An engine may hand them over unbuilt (a single branch's page of
            the local engine's native path): they are built on first read, once, and a
            result's :attr:`keys`, length and cursor are known without building them.
        sql: the statement (a string). It may be given as a zero-argument function that
            renders it: an engine that answers without reading SQL text (the local engine's
            native path) then renders it only when :attr:`sql` is first read, once.
        ranked_by: the engine's name of the ranking value: ``score`` (higher is better) or
            ``_distance`` (lower is nearer).
        underfilled: why the page holds fewer rows than the plan's ``limit``, or ``None``
            when it is full. Every shape the compiler writes lets a filter apply before a
            branch's bound (``docs/sql-shapes.md``), so a short page means no more rows match.
        vector_scans: per nearest-neighbour branch, the rows it scanned and left out, where
            the engine reports them (empty otherwise).
        next_after: a cursor token for the page after this one (the plan's ``after=``): the
            last hit's ranking value and key, for a full page of a plan with a key, no
            tie-breakers and no groups; ``None`` otherwise, and after a short page (the
            ranking has ended). It may be given as a zero-argument function computing it,
            called when :attr:`next_after` is first read, once.
        facets: per column of the plan's ``facets``, in order, its values among the rows the
            ranking considered (the plan's candidates: a fusion's first ``depth`` fused rows,
            a single branch's first ``depth`` rows, all passing the filter) mapped to how
            many of those rows hold them: the
            :data:`~hotdata_retrieval.plan.search.FACET_VALUES` most frequent, by count
            descending, ties by value ascending; NULL not counted. Empty without facets.
        facets_cut: per facet column, how many more values those rows hold than
            :attr:`facets` reports (0 when none were cut).
    """

    _hits: tuple[SearchHit, ...] | _LazyHits = attrs.field(alias="hits", eq=False, repr=False)
    _statement: str | Callable[[], str] = attrs.field(alias="sql", eq=False, repr=False)
    ranked_by: str = "score"
    underfilled: str | None = None
    vector_scans: tuple[VectorScan, ...] = ()
    _next_after: str | Callable[[], str | None] | None = attrs.field(
        default=None, alias="next_after"
    )
    facets: Mapping[str, Mapping[Any, int]] = attrs.field(factory=dict)
    facets_cut: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def hits(self) -> tuple[SearchHit, ...]:
        """The hits, best first (built on first read when they were handed over unbuilt,
        then kept)."""
        hits = self._hits
        if isinstance(hits, _LazyHits):
            hits = hits.build()
            object.__setattr__(self, "_hits", hits)  # the one built tuple
        return hits

    @property
    def next_after(self) -> str | None:
        """The cursor token for the next page (see the class's attributes; computed on first
        read when it was given as a function, then kept)."""
        token = self._next_after
        if callable(token):
            token = token()
            object.__setattr__(self, "_next_after", token)  # the one computed token
        return token

    @property
    def sql(self) -> str:
        """The statement that produced the hits (rendered on first access when it was given
        as a function, then kept)."""
        statement = self._statement
        if not isinstance(statement, str):
            statement = statement()
            object.__setattr__(self, "_statement", statement)  # the one cached rendering
        return statement

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchResult):
            return NotImplemented
        return (
            self.hits,
            self.sql,
            self.ranked_by,
            self.underfilled,
            self.vector_scans,
        ) == (other.hits, other.sql, other.ranked_by, other.underfilled, other.vector_scans)

    def __hash__(self) -> int:
        return hash((self.hits, self.sql, self.ranked_by, self.underfilled, self.vector_scans))

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (and copied) as built values: hits, statement and cursor handed over as
        # functions are built first, so a result pickles whether or not they were read.
        return (
            _restored_result,
            (
                {
                    "hits": self.hits,
                    "sql": self.sql,
                    "ranked_by": self.ranked_by,
                    "underfilled": self.underfilled,
                    "vector_scans": self.vector_scans,
                    "next_after": self.next_after,
                    "facets": self.facets,
                    "facets_cut": self.facets_cut,
                },
            ),
        )

    def __repr__(self) -> str:
        return (
            f"SearchResult(hits={self.hits!r}, sql={self.sql!r}, ranked_by={self.ranked_by!r}, "
            f"underfilled={self.underfilled!r}, vector_scans={self.vector_scans!r})"
        )

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        hits = self._hits
        return len(hits.keys) if isinstance(hits, _LazyHits) else len(hits)

    @property
    def keys(self) -> list[Any]:
        """The hits' keys, best first."""
        hits = self._hits
        if isinstance(hits, _LazyHits):
            return list(hits.keys)
        return [hit.key for hit in hits]

    @property
    def descending(self) -> bool:
        """Whether higher values rank first (a score) rather than lower (a distance)."""
        return self.ranked_by != "_distance"

    def to_list(self) -> list[dict[str, Any]]:
        """The hits as rows, best first: one dict per hit holding its requested columns, then
        its ranking value as ``score`` (higher is better) or ``distance`` (lower is nearer),
        then per branch ``<branch>_rank`` (1-based, ``None`` where the branch missed the hit)
        and ``<branch>_raw_score`` (its BM25 score or distance) for a fusion, and with
        explained scores ``<branch>_normalized`` and ``<branch>_contribution``.

        Raises:
            PlanError: a requested column has the name of one of those values (rename it in
                the plan's columns).
        """
        value_name = self.ranked_by.lstrip("_")
        rows = []
        for hit in self.hits:
            row = dict(hit.columns)
            added: dict[str, Any] = {value_name: hit.ranking_value}
            if hit.rerank_score is not None:
                added["rerank_score"] = hit.rerank_score
            if hit.highlights:
                added["highlights"] = dict(hit.highlights)
            if hit.fused_score is not None:
                added[FUSED_SCORE_COLUMN] = hit.fused_score
                for index, term in enumerate(hit.terms, start=1):
                    added[f"formula_term_{index}"] = term
            if len(hit.branches) > 1:
                for name, branch in hit.branches.items():
                    added[f"{name}_rank"] = branch.rank
                    added[f"{name}_raw_score"] = branch.raw_score
                    if branch.contribution is not None:
                        added[f"{name}_normalized"] = branch.normalized
                        added[f"{name}_contribution"] = branch.contribution
            for name, value in added.items():
                if name in row:
                    raise PlanError(
                        f"the result column {name!r} is also a requested column; choose "
                        "other names in the plan's columns",
                        field="columns",
                        value=name,
                    )
                row[name] = value
            rows.append(row)
        return rows

    def to_arrow(self) -> pa.Table:
        """The rows of :meth:`to_list` as an Arrow table (types inferred from the values: a
        rank column is int64, a score or distance float64; an empty result has no columns).

        Raises:
            PlanError: as :meth:`to_list`.
            MissingExtraError: pyarrow is not installed (the ``pandas`` extra brings it).
        """
        try:
            import pyarrow as pa
        except ImportError:
            raise missing_extra(
                "pandas", missing=["pyarrow"], needed_by="SearchResult.to_arrow()"
            ) from None
        return pa.Table.from_pylist(self.to_list())

    def to_pandas(self) -> pd.DataFrame:
        """The rows of :meth:`to_list` as a pandas data frame, best first (the ``pandas``
        extra).

        Raises:
            PlanError: as :meth:`to_list`.
            MissingExtraError: pandas or pyarrow is not installed.
        """
        require_extra("pandas", needed_by="SearchResult.to_pandas()")
        return self.to_arrow().to_pandas()


def hits_from_rows(
    plan: SearchPlan, requested: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
) -> tuple[SearchHit, ...]:
    """Turn result rows of ``plan`` (compiled with the key projected and, for a fusion, with
    branch scores included) into hits carrying only the ``requested`` columns.

    A row of a single vector branch whose distance is NULL (its vector is NULL) is no
    candidate and is left out; the SQL sorts such rows after every row with a distance, so
    leaving them out never leaves a gap (``docs/sql-shapes.md``, "Undefined distances").
    """
    names = plan.branch_names
    vectors = plan.vector_columns if plan.include_vectors else frozenset()
    hits = []
    single = plan.fusion is None
    plan_branches = plan.branches
    # Read once, not per row: each is computed from the plan on every access.
    first = plan_branches[0]
    raw_column_of_first = first.raw_score_column
    higher_is_better = first.higher_is_better
    debug = [debug_columns(name, branch) for name, branch in zip(names, plan_branches)]
    key_column = plan.key_column
    page_scored = frozenset(plan.page_scores)
    fusion = plan.fusion
    explained = fusion is not None and plan.explain_scores
    bounds = [bound_columns(name, fusion) for name in names] if fusion is not None else []
    formula_terms = () if plan.formula is None else term_columns(plan.formula)
    for position, row in enumerate(rows, start=plan.offset + 1):
        score: float | None = None
        distance: float | None = None
        if single:
            raw = row[raw_column_of_first]
            if raw is None and not higher_is_better:
                continue
            branches = {names[0]: BranchScore(rank=position, raw_score=raw)}
            if higher_is_better:
                score = None if raw is None else float(raw)
            else:
                distance = float(raw)
        else:
            branches = {}
            for name, (rank_column, raw_column) in zip(names, debug):
                if not plan.include_branch_scores:
                    branches[name] = BranchScore(rank=None, raw_score=None)
                    continue
                rank = row[rank_column]
                raw = row[raw_column]
                branches[name] = BranchScore(
                    rank=None if rank is None else int(rank),
                    raw_score=raw,
                    computed=rank is None and raw is not None and name in page_scored,
                )
            if explained:
                assert fusion is not None
                branches = _explained(fusion, branches, row, bounds)
            score = None if row["score"] is None else float(row["score"])
        fused_score = None
        terms: tuple[float, ...] = ()
        if formula_terms:
            fused_score = float(row[FUSED_SCORE_COLUMN])
            terms = tuple(float(row[name]) for name in formula_terms)
        hits.append(
            SearchHit(
                key=None if key_column is None else row[key_column],
                columns={
                    column: returned_vector(row[column]) if column in vectors else row[column]
                    for column in requested
                },
                score=score,
                distance=distance,
                branches=branches,
                fused_score=fused_score,
                terms=terms,
            )
        )
    return tuple(hits)


def _explained(
    fusion: Any,
    branches: dict[str, BranchScore],
    row: Mapping[str, Any],
    bounds: Sequence[tuple[str, ...]],
) -> dict[str, BranchScore]:
    """``branches`` with each one's normalized value and contribution
    (:func:`~hotdata_retrieval.fusion.explain_terms`), its bounds read from ``row``."""
    scores = list(branches.values())
    terms = explain_terms(
        fusion,
        [branch.rank for branch in scores],
        [branch.raw_score for branch in scores],
        [(row[columns[0]], row[columns[1]]) if columns else None for columns in bounds],
    )
    return {
        name: attrs.evolve(branch, normalized=term.normalized, contribution=term.contribution)
        for (name, branch), term in zip(branches.items(), terms)
    }


def formula_page(plan: SearchPlan, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page of a plan with a score formula, for an engine that fuses in the library
    (LanceDB, turbopuffer): ``rows`` are every fused candidate (``score`` the fused score,
    with the formula's columns and the tie-breakers' columns), each rescored by the formula
    (:func:`~hotdata_retrieval.plan.formula.formula_terms`, as the statement computes it:
    ``fused_score``, ``formula_term_<i>`` and ``score`` the final score), those below the
    fusion's ``min_score`` dropped, ordered by the final score, the tie-breakers and the key
    (:func:`~hotdata_retrieval.fusion.ordered_rows`), and cut to the page."""
    formula, fusion, key = plan.formula, plan.fusion, plan.key_column
    assert formula is not None and fusion is not None and key is not None
    names = term_columns(formula)
    kept = []
    for row in rows:
        values = formula_terms(formula, float(row["score"]), row)
        row[FUSED_SCORE_COLUMN] = row["score"]
        row.update(zip(names, values))
        row["score"] = formula_score(values)
        if fusion.min_score is None or row["score"] >= fusion.min_score:
            kept.append(row)
    ranking = [
        ("score", True),
        *((breaker.column, breaker.descending) for breaker in plan.tie_breakers),
        (key, False),
    ]
    return ordered_rows(kept, ranking=ranking)[plan.offset : plan.offset + plan.limit]


def fill_page_scores(
    plan: SearchPlan, rows: list[dict[str, Any]], stored: Sequence[Mapping[str, Any]]
) -> None:
    """Complete ``rows`` (a fusion's result rows, with its debug columns) in place, for an
    engine that fuses in the library (LanceDB, turbopuffer): for each branch the plan's
    ``page_scores`` names, a row the branch did not return (its rank ``None``) gets the
    branch's distance computed from the row's stored vector (``stored[i][<column>]``, in any
    form a store returns one) to the query, both read as Float32 as the engines read them,
    by :meth:`~hotdata_retrieval.plan.search.DistanceMetric.distance`, the result rounded to
    Float32 as the engines report theirs; ``None`` for a row without a vector.

    Raises:
        EngineError: a stored vector that is not a list of numbers, or whose length is not
            the query's.
    """
    for name, branch in plan.page_scored_branches:
        rank_column, raw_column = debug_columns(name, branch)
        query = [_float32(value) for value in branch.query_vector]
        for row, values in zip(rows, stored):
            if row.get(rank_column) is not None or row.get(raw_column) is not None:
                continue
            vector = returned_vector(values.get(branch.column))
            if vector is None:
                row[raw_column] = None
                continue
            if len(vector) != len(query):
                raise EngineError(
                    f"a stored vector of column '{branch.column}' has "
                    f"{_words.counted(len(vector), 'dimension')}, the query {len(query)}"
                )
            distance = branch.metric.distance([_float32(value) for value in vector], query)
            row[raw_column] = _float32(distance)


def _float32(value: float) -> float:
    """``value`` rounded to the nearest Float32 (an infinity beyond its range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def returned_vector(value: Any) -> list[float] | None:
    """A returned vector as a list of floats, whatever the store's own form: a list or tuple
    (local engine, LanceDB, DuckDB), a little-endian float32 blob (sqlite-vec), pgvector's
    text (``'[1,2,3]'``), a NumPy array; ``None`` stays ``None``.

    Raises:
        EngineError: a value that is no list of numbers in any of those forms.
    """
    if value is None:
        return None
    try:
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            return [float(x) for x in struct.unpack(f"<{len(raw) // 4}f", raw)]
        if isinstance(value, str):
            value = json.loads(value)
        if hasattr(value, "tolist"):
            value = value.tolist()
        return [float(x) for x in value]
    except (ValueError, TypeError, struct.error):
        raise EngineError(
            f"a returned vector is not a list of numbers: {str(value)[:60]!r}"
        ) from None


def executed_plan(
    plan: SearchPlan,
    kinds: Mapping[str, ValueKind] | None = None,
    facts: ColumnFacts = NO_COLUMN_FACTS,
) -> SearchPlan:
    """The plan an engine runs for :meth:`search`: ``plan``'s statement (without its steps,
    fetching their candidates: :func:`~hotdata_retrieval.plan.steps.statement_plan`) with
    its key projected and, for a fusion, each branch's rank and raw score included — unless a
    projected column is named like one of those debug columns (say ``text_rank``), in which
    case the user's column wins and branch ranks are not reported. Every engine expands a
    plan through this one function, so engines cannot differ in what they accept.

    Args:
        plan: the caller's plan, checked against its table.
        kinds: the table's column kinds, where the engine knows them: each filter value
            written as text for a date or timestamp column is then the value it reads as
            (:func:`~hotdata_retrieval.engines.checks.with_typed_values`; text for a number
            column stays text, which SQL reads as the column's own type), so every engine
            compares ``'2024-03-01T05:00:00+02:00'`` as the instant it names, and a store that
            holds dates as text (SQLite) compares them in one spelling.
        facts: what the engine knows of the columns besides their kinds
            (:class:`~hotdata_retrieval.engines.checks.ColumnFacts`), used with ``kinds``
            only: each number compared with a float32 column is rounded to float32, so
            ``f = 2.1`` holds for a float32 2.1 on every engine; a float compared with an
            integer column, or an integer float64 does not hold compared with a float64
            column, is the exactly equivalent comparison, so ``n = 2.0**53`` keeps no row
            holding 2**53 + 1 on any engine; a literal past a column's range (its integer
            type's, nanoseconds' years, a decimal's digits) keeps every row or none; a number
            compared with a decimal column is compared exactly.

    Raises:
        PlanError: a value such a store cannot compare with its column; a float whose exact
            comparison with an unsigned column needs an integer past INT64_MAX.
    """
    cursor = plan.cursor
    if cursor is None:
        return _executed_plan(plan, kinds, facts)
    # The executed plan ranks as the caller's; its cursor carries its own fingerprint.
    executed = _executed_plan(attrs.evolve(plan, after=None), kinds, facts)
    token = attrs.evolve(cursor, fingerprint=ranking_fingerprint(executed)).token()
    return attrs.evolve(executed, after=token)


def _executed_plan(
    plan: SearchPlan, kinds: Mapping[str, ValueKind] | None, facts: ColumnFacts
) -> SearchPlan:
    plan = _default_names(statement_plan(plan))
    requested = plan.projection
    key = plan.key_column
    columns = requested if key is None or key in requested else (key, *requested)
    if not columns:
        raise PlanError(
            "the plan names no row to return: it has no key_column and no columns; pass "
            "key_column= (the column that names a row) or columns=",
            field="columns",
            value=None,
        )
    # One evolve (each one validates the whole plan again): the typed filter, the columns and
    # the branch scores together; without the branch scores when they collide with a column.
    changes: dict[str, Any] = {"columns": columns}
    if kinds is not None and plan.filter is not None:
        changes["filter"] = with_typed_values(plan.filter, kinds, facts, numbers=False)
    include = plan.fusion is not None
    if (
        columns == plan.columns
        and include == plan.include_branch_scores
        and changes.get("filter", plan.filter) is plan.filter
    ):
        return plan  # nothing to change (the typed filter is the plan's own when it is)
    try:
        return attrs.evolve(plan, **changes, include_branch_scores=include)
    except PlanError:
        return attrs.evolve(plan, **changes)


def _default_names(plan: SearchPlan) -> SearchPlan:
    """``plan`` with its result columns under their own names (``score``, ``_distance``,
    the branch debug columns): the names a caller chooses are for the SQL it runs itself;
    hits carry scores and distances by meaning. A tie-breaker on a branch's chosen name reads
    that branch's debug column."""
    if plan.score_name == "score" and all(branch.result_name is None for branch in plan.branches):
        return plan  # nothing renamed (the usual plan), without naming its branches
    renamed = {
        branch.result_name: debug_columns(name, branch)[1]
        for name, branch in zip(plan.branch_names, plan.branches)
        if branch.result_name is not None
    }
    if not renamed and plan.score_name == "score":
        return plan
    branches = [attrs.evolve(branch, result_name=None) for branch in plan.branches]
    fusion = plan.fusion
    source = branches[0] if fusion is None else attrs.evolve(fusion, branches=branches)
    breakers = [
        attrs.evolve(breaker, column=renamed.get(breaker.column, breaker.column))
        for breaker in plan.tie_breakers
    ]
    # A tie-breaker on a chosen name reads the branch's debug column, computed only with
    # branch scores; otherwise executed_plan adds them where no projected column collides.
    reads_debug = any(breaker.column in renamed for breaker in plan.tie_breakers)
    return attrs.evolve(
        plan,
        source=source,
        score_name="score",
        tie_breakers=breakers,
        # a branch whose distance page_scores computes carries it in its debug column now
        include_branch_scores=plan.include_branch_scores or reads_debug or bool(plan.page_scores),
    )


def search_result(
    plan: SearchPlan,
    executed: SearchPlan,
    rows: Sequence[dict[str, Any]],
    statement: str | Callable[[], str],
) -> SearchResult:
    """The typed result of running ``executed`` (from :func:`executed_plan`) for ``plan``.

    Args:
        plan: the caller's plan (its projection is what each hit carries).
        executed: the plan that ran.
        rows: the result rows, as mappings of column name to value (or :class:`ColumnRows`).
        statement: the SQL that ran (:attr:`SearchResult.sql`), or a zero-argument function
            rendering it when the engine answered without it.

    Raises:
        EngineError: a key came back twice (the plan's key column is not unique).
        PlanError: a key came back twice from a fusion over a table and its side table,
            which needs ``rows_from`` (:func:`~hotdata_retrieval.engines.checks.
            check_side_table_key`).
    """
    facets: dict[str, dict[Any, int]] = {}
    cut: dict[str, int] = {}
    if plan.facets:
        rows, facets, cut = _facet_rows(plan, rows)
    hits: tuple[SearchHit, ...] | _LazyHits
    lazy = _lazy_hits(plan, executed, rows)
    if lazy is not None:
        hits, keys = lazy, lazy.keys
        after: str | Callable[[], str | None] | None = functools.partial(
            _lazy_next_after, plan, executed, rows, len(keys)
        )
    else:
        if plan.steps:
            from hotdata_retrieval.engines._steps import run_steps

            hits = run_steps(plan, hits_from_rows(executed, executed.projection, rows))
        else:
            hits = hits_from_rows(executed, plan.projection, rows)
        keys = [hit.key for hit in hits]
        # computed when read: its ranking fingerprint encodes the plan (a query vector too)
        after = functools.partial(next_after, plan, hits)
    seen: set[Any] = set()
    for key in keys if plan.key_column is not None else ():
        if key in seen:
            check_side_table_key(plan, key)
            where = (
                "in the table"
                if plan.single_table is not None
                else "across the tables the plan reads (a union's members, or rows_from's, "
                "share it)"
            )
            raise EngineError(
                f"key {key!r} of key column '{plan.key_column}' came back twice: the key "
                f"is not unique {where}, so the search would return a row more than once; "
                "search with a key unique in every table it reads",
                sql=statement if isinstance(statement, str) else statement(),
            )
        seen.add(key)
    return SearchResult(
        hits=hits,
        sql=statement,
        ranked_by=executed.ranking_column,
        underfilled=_underfilled(
            plan,
            len(keys),
            None if plan.group_by is None or isinstance(hits, _LazyHits) else _groups(plan, hits),
        ),
        next_after=after,
        facets=facets,
        facets_cut=cut,
    )


def _lazy_hits(
    plan: SearchPlan, executed: SearchPlan, rows: Sequence[dict[str, Any]]
) -> _LazyHits | None:
    """The hits of ``rows`` handed over unbuilt (:class:`SearchResult`), with their keys, for
    a plan whose hits are its rows one for one and whose building cannot fail: one branch,
    no score formula, no returned vectors (a vector of another form is refused when read),
    no steps or groups (which read the hits), and no row without a raw score (a vector
    branch leaves such rows out); ``None`` for any other plan (built at once)."""
    if (
        plan.steps
        or plan.group_by is not None
        or executed.fusion is not None
        or executed.formula is not None
        or (executed.include_vectors and executed.vector_columns)
    ):
        return None
    branch = executed.branches[0]
    if not branch.higher_is_better and None in _column(rows, branch.raw_score_column):
        return None
    key = executed.key_column
    keys = [None] * len(rows) if key is None else _column(rows, key)
    return _LazyHits(lambda: hits_from_rows(executed, plan.projection, rows), keys)


def bounded_facets(
    counted: Mapping[str, Mapping[Any, int]],
) -> tuple[dict[str, dict[Any, int]], dict[str, int]]:
    """Each facet's values ``counted`` (column → value → count, NULL left out before) cut to
    the :data:`~hotdata_retrieval.plan.search.FACET_VALUES` most frequent, by count
    descending, ties by value ascending; and per column how many values were cut."""
    facets: dict[str, dict[Any, int]] = {}
    cut: dict[str, int] = {}
    for name, counts in counted.items():
        ordered_values = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        facets[name] = dict(ordered_values[:FACET_VALUES])
        cut[name] = max(0, len(ordered_values) - FACET_VALUES)
    return facets, cut


def _facet_rows(
    plan: SearchPlan, rows: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, dict[Any, int]], dict[str, int]]:
    """A faceted statement's rows read apart (``docs/sql-shapes.md``, "Facets"): the page's
    rows (their place in the ranking within ``offset`` and ``offset + limit``), in order,
    and the count each facet value's first row carries."""
    page = [
        row for row in rows if plan.offset < int(row["_rank_position"]) <= plan.offset + plan.limit
    ]
    counted: dict[str, dict[Any, int]] = {}
    for index, facet in enumerate(plan.facets, 1):
        values = counted.setdefault(facet, {})
        for row in rows:
            if row[f"_facet_row_{index}"] == 1 and row[facet] is not None:
                values[row[facet]] = int(row[f"_facet_count_{index}"])
    facets, cut = bounded_facets(counted)
    return page, facets, cut


def facet_counts(
    plan: SearchPlan, ranked: Sequence[SearchHit]
) -> tuple[dict[str, dict[Any, int]], dict[str, int]]:
    """``plan``'s facets counted in the library over ``ranked``, the hits of its
    :meth:`~hotdata_retrieval.plan.search.SearchPlan.candidates` (the reference of the
    faceted statement, for an engine that ranks in the library or natively): hits without
    a ranking value and NULL values are not counted."""
    counted: dict[str, dict[Any, int]] = {facet: {} for facet in plan.facets}
    for hit in ranked:
        if hit.ranking_value is None:
            continue
        for facet in plan.facets:
            value = hit.columns[facet]
            if value is not None:
                counted[facet][value] = counted[facet].get(value, 0) + 1
    return bounded_facets(counted)


def next_after(plan: SearchPlan, hits: Sequence[SearchHit]) -> str | None:
    """The cursor token continuing ``plan``'s ranking after ``hits`` (its page), or ``None``:
    a short page (the ranking ended), or a plan a cursor cannot continue (no key,
    tie-breakers, groups, steps)."""
    return _next_after(plan, len(hits), hits[-1] if hits else None)


def _lazy_next_after(
    plan: SearchPlan, executed: SearchPlan, rows: Sequence[dict[str, Any]], count: int
) -> str | None:
    """:func:`next_after` of the page of ``count`` hits built from ``rows``, read from its
    last hit alone."""
    if not count:
        return None
    last = hits_from_rows(executed, plan.projection, rows[count - 1 : count])
    return _next_after(plan, count, last[-1] if last else None)


def _next_after(plan: SearchPlan, count: int, last: SearchHit | None) -> str | None:
    """:func:`next_after` of a page of ``count`` hits, the last of them ``last``."""
    if last is None or count < plan.limit:
        return None
    return _after_hit(plan, count, last)


def hits_after(plan: SearchPlan, hits: Sequence[SearchHit]) -> list[str | None]:
    """Per hit of ``plan``'s page ``hits``, the cursor token continuing the ranking after that
    hit (the plan's ``after=``): the last hit's is :func:`next_after`'s, ``None`` on a short
    page (the ranking ended there; a full page's last hit has a token even when no row
    follows, whose page is empty); every hit's is ``None`` for a plan a cursor cannot
    continue (no key, tie-breakers, groups or steps) and for a hit without a finite ranking
    value or with a key neither text nor a whole number. For a door whose answer is a list
    of hits, with no place for the page's own :attr:`SearchResult.next_after` (DDN)."""
    tokens: list[str | None] = [
        _after_hit(plan, position + 1, hit) for position, hit in enumerate(hits)
    ]
    if tokens and len(hits) < plan.limit:
        tokens[-1] = None
    return tokens


def _after_hit(plan: SearchPlan, served: int, hit: SearchHit) -> str | None:
    """The cursor token continuing ``plan``'s ranking after ``hit``, the ``served``-th hit of
    its page, or ``None`` where a cursor cannot continue it."""
    if plan.key_column is None or plan.tie_breakers or plan.group_by is not None or plan.steps:
        return None
    value = hit.ranking_value
    if value is None or not math.isfinite(value) or not isinstance(hit.key, (str, int)):
        return None
    cursor = plan.cursor
    before = plan.offset if cursor is None else cursor.served
    return Cursor(
        value=float(value),
        key=hit.key,
        served=before + served,
        fingerprint=ranking_fingerprint(plan),
    ).token()


def cursor_hits(plan: SearchPlan, ranked: Sequence[SearchHit]) -> tuple[SearchHit, ...]:
    """The page of ``plan`` (with a cursor) taken from ``ranked``, the hits of its
    :meth:`~hotdata_retrieval.plan.search.SearchPlan.candidates` best first: the hits ranked
    after the cursor's value and key, ``limit`` of them, each with the plan's own columns
    (the library's reference of the statement, ``docs/sql-shapes.md``, "Cursors").

    Raises:
        PlanError: the cursor's key is text and the table's keys whole numbers, or the
            reverse (a forged token), naming ``after``.
    """
    cursor = plan.cursor
    assert cursor is not None  # only a plan with a cursor continues one
    higher = plan.fusion is not None or plan.branches[0].higher_is_better
    page = []
    for hit in ranked:
        value = hit.ranking_value
        if value is None:
            continue
        _check_cursor_key(plan, hit.key)
        if value == cursor.value:
            if not hit.key > cursor.key:
                continue
        elif (value > cursor.value) if higher else (value < cursor.value):
            continue
        page.append(hit)
        if len(page) == plan.limit:
            break
    requested = plan.projection
    return tuple(
        attrs.evolve(hit, columns={name: hit.columns[name] for name in requested}) for hit in page
    )


def _check_cursor_key(plan: SearchPlan, key: Any) -> None:
    """Refuse a cursor whose key is not of the kind of the table's keys (text against whole
    numbers, or the reverse): no token the table's ranking returned holds it, and the two
    do not compare.

    Raises:
        PlanError: naming ``after``.
    """
    cursor = plan.cursor
    assert cursor is not None  # only a plan with a cursor continues one
    text = isinstance(cursor.key, str)
    if isinstance(key, str) if text else (isinstance(key, int) and not isinstance(key, bool)):
        return
    raise PlanError(
        "after is not a cursor token a result returned as next_after: its key "
        f"{cursor.key!r:.40} is {'text' if text else 'a whole number'}, the key column "
        f"{plan.key_column!r} holds {type(key).__name__} values",
        field="after",
        value=plan.after,
    )


def result_from_candidates(plan: SearchPlan, candidates: SearchResult) -> SearchResult:
    """The result of grouped ``plan``, or of ``plan`` with a cursor, from the result of its
    :meth:`~hotdata_retrieval.plan.search.SearchPlan.candidates`, for an engine that ranks
    in the library or natively: :func:`grouped_result`; for facets the page sliced from
    the candidates and their :func:`facet_counts`; else the hits after the cursor
    (:func:`cursor_hits`) and the token after them."""
    if plan.group_by is not None:
        return grouped_result(plan, candidates)
    if plan.facets:
        facets, cut = facet_counts(plan, candidates.hits)
        requested = plan.projection
        page = tuple(
            attrs.evolve(hit, columns={name: hit.columns[name] for name in requested})
            for hit in candidates.hits[plan.offset : plan.offset + plan.limit]
        )
        return attrs.evolve(
            candidates,
            hits=page,
            underfilled=_underfilled(plan, len(page)),
            next_after=next_after(plan, page),
            facets=facets,
            facets_cut=cut,
        )
    hits = cursor_hits(plan, candidates.hits)
    return attrs.evolve(
        candidates,
        hits=hits,
        underfilled=_underfilled(plan, len(hits)),
        next_after=next_after(plan, hits),
    )


def grouped_hits(plan: SearchPlan, ranked: Sequence[SearchHit]) -> tuple[SearchHit, ...]:
    """The page of grouped ``plan`` formed from ``ranked``, the hits of its
    :meth:`~hotdata_retrieval.plan.search.SearchPlan.candidates` best first: the library's
    reference of the grouped statement (``docs/sql-shapes.md``, "Groups"), for an engine
    that ranks in the library (LanceDB, turbopuffer) or answers natively (the local
    engine). Hits whose group value is ``None`` are left out; each group keeps its first
    ``group_size`` hits, groups in the order of their first hit, the groups ``offset + 1``
    to ``offset + limit`` returned, each hit carrying the plan's own columns and a single
    branch's rank as its place on the page, as the statement's rows do."""
    group = plan.group_by
    assert group is not None  # only a grouped plan has groups
    members: dict[Any, list[SearchHit]] = {}
    for hit in ranked:
        if hit.ranking_value is None:
            continue
        value = hit.columns[group]
        if value is None:
            continue
        kept = members.setdefault(group_key(value), [])
        if len(kept) < plan.group_size:
            kept.append(hit)
    page = list(members.values())[plan.offset : plan.offset + plan.limit]
    requested = plan.projection
    hits = []
    for position, hit in enumerate((hit for kept in page for hit in kept), plan.offset + 1):
        branches = dict(hit.branches)
        if plan.fusion is None:
            ((name, score),) = branches.items()
            branches = {name: attrs.evolve(score, rank=position)}
        hits.append(
            attrs.evolve(
                hit, columns={name: hit.columns[name] for name in requested}, branches=branches
            )
        )
    return tuple(hits)


def grouped_result(plan: SearchPlan, candidates: SearchResult) -> SearchResult:
    """The result of grouped ``plan`` from its candidates' result (:func:`grouped_hits`):
    their statement, the page of groups, and why it holds fewer than ``limit`` groups."""
    hits = grouped_hits(plan, candidates.hits)
    return attrs.evolve(
        candidates,
        hits=hits,
        underfilled=_underfilled(plan, len(hits), _groups(plan, hits)),
        # the candidates' token continues their ungrouped ranking, not these groups
        next_after=next_after(plan, hits),
    )


def _groups(plan: SearchPlan, hits: Sequence[SearchHit]) -> int:
    """The number of groups on a page of grouped ``plan``."""
    group = plan.group_by
    assert group is not None
    return len({group_key(hit.columns[group]) for hit in hits})


_NAN_GROUP = object()
"""The one group of every NaN value (:func:`group_key`)."""


def group_key(value: Any) -> Any:
    """``value`` as the key of its group, as SQL's ``PARTITION BY`` compares group values:
    every NaN is one group (a float NaN equals nothing, not even another NaN, so as a dict
    key each NaN row would start a group of its own), and -0.0 and 0.0 are one group, as
    Python's ``==`` and ``hash`` already take them.

    >>> group_key(float("nan")) is group_key(float("nan"))
    True
    >>> group_key(-0.0) == group_key(0.0) and group_key("a") == "a"
    True
    """
    if isinstance(value, float) and value != value:
        return _NAN_GROUP
    return value


def _underfilled(plan: SearchPlan, returned: int, groups: int | None = None) -> str | None:
    if groups is not None:
        if groups >= plan.limit:
            return None
        found = _words.counted(groups, "group")
        if returned == 0 and plan.offset > 0:
            return f"{found} for a limit of {plan.limit} at offset {plan.offset}"
        return (
            f"{found} for a limit of {plan.limit}: only {plan.offset + groups} groups "
            f"among the first {plan.depth} candidates"
        )
    if returned >= plan.limit:
        return None
    # A short page that is not empty ends the ranking: exactly offset + returned rows exist.
    # An empty page past offset 0 says only that at most offset rows do.
    beyond = returned == 0 and plan.offset > 0
    total = plan.offset if beyond else plan.offset + returned
    one = total == 1
    passing = ""
    if plan.filter is not None:
        passing = " and passes the filter" if one else " and pass the filter"
    bound = f"at most {total}" if beyond else f"only {total}"
    page = f"{_words.counted(returned, 'row')} for a limit of {plan.limit}"
    if beyond:
        page += f" at offset {plan.offset}"
    if plan.fusion is None:
        branch = plan.branches[0]
        if branch.higher_is_better:
            what = "matches the query" if one else "match the query"
        else:
            what = "has a vector" if one else "have a vector"
        return f"{page}: {bound} {'row' if one else 'rows'} {what}{passing}"
    if plan.fusion.min_score is not None:
        scored = "fused row scores" if one else "fused rows score"
        return f"{page}: {bound} {scored} at least the minimum {plan.fusion.min_score!r}{passing}"
    return (
        f"{page}: the branches found {bound} {'candidate' if one else 'candidates'} in all{passing}"
    )


def _restored_result(fields: dict[str, Any]) -> SearchResult:
    """A :class:`SearchResult` from the fields its ``__reduce__`` gave (unpickling)."""
    return SearchResult(**fields)
