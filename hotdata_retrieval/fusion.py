"""Reference fusions in pure Python: reciprocal rank fusion, min-max convex combination and
distribution-based score fusion.

This is the semantics the compiled SQL must reproduce, written as plainly as possible: the
test oracle for every engine, and the fusion used by any adapter that fuses on the client.

A candidate's fused score is ``sum_i weights[i] / (rank_constant + rank_i)`` over the
branches that returned it, ranks 1-based (Cormack, Clarke & Buettcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009, pp. 758-759).
Rows tied on a branch's raw score share that branch's rank — competition ranking, SQL's
``RANK()``: scores 9, 7, 7, 5 rank 1, 2, 2, 4 (:func:`competition_ranks`) — so a tie inside a
branch leaves the order to the other branches instead of to the key. Terms are added in branch
order, exactly as the SQL adds its ``COALESCE(...)`` terms, so the floating-point sums are
bit-identical and ties compare equal in both. The result is ordered by fused score
descending, then key ascending.

Keys must be of one kind across all lists — numbers (``int``/``float``, which compare and
hash as numbers: ``1 == 1.0``), or text, or another single type — and never ``None``: in SQL a
key column has one type, and mixing ``1`` with ``"1"`` would either fail to sort or keep one
document as two (:class:`KeyTypeError`).

Every fusion method has a reference here. :func:`reference_fusion` computes the reference
result of any plan fusion (a :class:`~hotdata_retrieval.plan.search.Fusion`), dispatching on
its class to the function :func:`register_reference_fusion` registered for it; reciprocal rank
fusion, :func:`min_max_fusion` and :func:`distribution_based_score_fusion` are registered
(``docs/fusion.md`` defines each exactly; the score-normalized ones use no NumPy, and share no
code with the SQL). A method that combines per-branch ranks (or raw scores) can build on
:func:`fuse_candidates`, which does the bookkeeping every method shares: the checks on keys and
ranks, the candidates' ranks per branch, and the final order.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.errors import KeyTypeError as KeyTypeError
from hotdata_retrieval.errors import PlanError, UnsupportedFeatureError
from hotdata_retrieval.plan.search import (
    DEFAULT_RANK_CONSTANT,
    DistributionBasedScoreFusion,
    Fusion,
    MinMaxFusion,
    NormalizedScoreFusion,
    ReciprocalRankFusion,
    SearchPlan,
    bound_columns,
    debug_columns,
)


def _key_kind(key: Any) -> str:
    if isinstance(key, bool):
        return "bool"
    if isinstance(key, (int, float)):
        return "number"
    return type(key).__name__


def competition_ranks(scores: Sequence[float], *, higher_is_better: bool = True) -> list[int]:
    """1-based competition ranks of ``scores``, already ordered best first: equal scores share
    the rank of the first of them, and the next distinct score skips as many ranks ("1224"),
    as SQL's ``RANK()`` does.

    Raises:
        PlanError: the scores are not ordered best first, or one is NaN.

    >>> competition_ranks([9.0, 7.0, 7.0, 5.0])
    [1, 2, 2, 4]
    >>> competition_ranks([0.1, 0.1, 0.3], higher_is_better=False)
    [1, 1, 3]
    """
    ranks: list[int] = []
    for position, score in enumerate(scores, start=1):
        if math.isnan(score):
            raise PlanError(f"score {position} is NaN", field="scores", value=score)
        if position > 1:
            previous = scores[position - 2]
            if (score > previous) if higher_is_better else (score < previous):
                raise PlanError(
                    f"scores must be ordered best first; {score!r} follows {previous!r}",
                    field="scores",
                    value=score,
                )
            if score == previous:
                ranks.append(ranks[-1])
                continue
        ranks.append(position)
    return ranks


@attrs.frozen(kw_only=True)
class FusedHit:
    """One fused result.

    Attributes:
        key: the candidate's key.
        score: the fused score (higher is better).
        ranks: the 1-based rank of the key in each branch, ``None`` where a branch missed it.
    """

    key: Any
    score: float
    ranks: tuple[int | None, ...]


def rank_branch(
    candidates: Iterable[tuple[Hashable, float]],
    *,
    higher_is_better: bool,
    depth: int | None = None,
    row_numbers: bool = False,
) -> tuple[list[Any], list[int]]:
    """One branch's ranking from ``(key, raw score)`` pairs, as the compiled SQL ranks it.

    Candidates are ordered best first (then by key ascending, which decides only the order of
    tied rows and which of them a ``depth`` cut keeps), cut to ``depth``, and given
    competition ranks: tied rows share a rank; with ``row_numbers``, consecutive ranks in
    that order (a fusion's ``ranking="row_number"``: ``ROW_NUMBER() OVER (ORDER BY <raw>,
    <key>)``).

    Returns:
        ``(keys, ranks)``, ready for :func:`reciprocal_rank_fusion`'s ``ranked_lists`` and
        ``ranks``.

    >>> rank_branch([("c", 2.0), ("a", 5.0), ("b", 2.0)], higher_is_better=True)
    (['a', 'b', 'c'], [1, 2, 2])
    >>> rank_branch([("c", 2.0), ("a", 5.0), ("b", 2.0)], higher_is_better=True,
    ...             row_numbers=True)
    (['a', 'b', 'c'], [1, 2, 3])
    """
    sign = -1.0 if higher_is_better else 1.0
    ordered = sorted(candidates, key=lambda item: (sign * item[1], item[0]))[:depth]
    if row_numbers:
        return [key for key, _ in ordered], list(range(1, len(ordered) + 1))
    ranks = competition_ranks([float(raw) for _, raw in ordered], higher_is_better=higher_is_better)
    return [key for key, _ in ordered], ranks


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    weights: Sequence[float] | None = None,
    rank_constant: float = DEFAULT_RANK_CONSTANT,
    limit: int | None = None,
    offset: int = 0,
    ranks: Sequence[Sequence[int]] | None = None,
    min_score: float | None = None,
) -> list[FusedHit]:
    """Fuse ranked key lists with weighted reciprocal rank fusion.

    Args:
        ranked_lists: one list of keys per branch, best first (already cut to the branch
            depth). A key may appear at most once per list.
        ranks: each list's 1-based ranks, parallel to its keys — :func:`competition_ranks`
            of the branch's raw scores, so tied rows share a rank. Default: the positions
            (1, 2, 3, ...: no ties).
        weights: one finite weight >= 0 per list (default all 1.0).
        rank_constant: RRF's k, > 0 (default 60).
        limit: number of hits to return after ``offset`` (default: all).
        offset: number of leading hits to skip.
        min_score: drop hits scoring below it before the page is cut (default: keep all).

    Returns:
        Hits ordered by fused score descending, then key ascending.

    Raises:
        PlanError: a weight count that does not match the lists, a negative or non-finite
            weight, a rank constant <= 0, a negative offset or limit, a key repeated within
            one list (in SQL that would multiply rows), or ranks that do not fit their list.
        KeyTypeError: a ``None`` key, or keys of different kinds.

    >>> [hit.key for hit in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])]
    ['b', 'a', 'c']
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise PlanError(
            f"got {counted(len(weights), 'weight')} for "
            f"{counted(len(ranked_lists), 'ranked list')}",
            field="weights",
            value=weights,
        )
    for weight in weights:
        if not math.isfinite(weight) or weight < 0:
            raise PlanError(
                f"weight must be finite and >= 0, got {weight!r}", field="weight", value=weight
            )
    if not math.isfinite(rank_constant) or rank_constant <= 0:
        raise PlanError(
            f"rank_constant must be > 0, got {rank_constant!r}",
            field="rank_constant",
            value=rank_constant,
        )

    by_key, _ = _candidates(ranked_lists, ranks, None, limit, offset)
    weight_values = [float(weight) for weight in weights]
    # Each branch's term, 0.0 where it missed the key, added in branch order.
    if len(weight_values) == 2:  # the hybrid search's two branches: the same sum, unrolled
        first_weight, second_weight = weight_values
        scored = [
            (
                (first_weight / (rank_constant + first) if first is not None else 0.0)
                + (second_weight / (rank_constant + second) if second is not None else 0.0),
                key,
                key_ranks,
            )
            for key, key_ranks in by_key.items()
            for first, second in (key_ranks,)
        ]
    else:
        scored = []
        for key, key_ranks in by_key.items():
            total: float | None = None
            for weight, rank in zip(weight_values, key_ranks):
                term = weight / (rank_constant + rank) if rank is not None else 0.0
                total = term if total is None else total + term
            assert total is not None  # a candidate is in at least one list
            scored.append((total, key, key_ranks))
    return _page(scored, limit, offset, min_score)


def fuse_candidates(
    ranked_lists: Sequence[Sequence[Hashable]],
    score: Callable[[Sequence[int | None], Sequence[float | None]], float],
    *,
    ranks: Sequence[Sequence[int]] | None = None,
    scores: Sequence[Sequence[float]] | None = None,
    limit: int | None = None,
    offset: int = 0,
    min_score: float | None = None,
) -> list[FusedHit]:
    """Fuse ranked key lists with any per-candidate score: the shared half of every method.

    Each candidate (a key in at least one list) gets ``score(ranks, raw)``: its 1-based rank
    in each list and its raw score there (``None`` where a list misses it, and every raw score
    ``None`` when ``scores`` is not given). Hits are ordered by that score descending, then
    key ascending, and sliced to the page.

    Args:
        ranked_lists: one list of keys per branch, best first (cut to the branch depth); a key
            at most once per list.
        score: the fused score of one candidate.
        ranks: each list's competition ranks (default: the positions 1, 2, 3, ...).
        scores: each list's raw scores, parallel to its keys (for score-based methods).
        limit: number of hits to return after ``offset`` (default: all).
        offset: number of leading hits to skip.
        min_score: drop hits scoring below it before the page is cut (default: keep all).

    Raises:
        PlanError: a negative offset or limit, a key repeated within one list, ranks or
            scores that do not fit their list.
        KeyTypeError: a ``None`` key, or keys of different kinds.

    >>> hits = fuse_candidates([["a", "b"], ["b"]], lambda ranks, raw: -min(
    ...     rank for rank in ranks if rank is not None))
    >>> [(hit.key, hit.score, hit.ranks) for hit in hits]
    [('a', -1, (1, None)), ('b', -1, (2, 1))]
    """
    by_key, raw_by_key = _candidates(ranked_lists, ranks, scores, limit, offset)
    unknown: list[float | None] = [None] * len(ranked_lists)
    scored = [
        (score(key_ranks, raw_by_key.get(key, unknown)), key, key_ranks)
        for key, key_ranks in by_key.items()
    ]
    return _page(scored, limit, offset, min_score)


def _candidates(
    ranked_lists: Sequence[Sequence[Hashable]],
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    limit: int | None,
    offset: int,
) -> tuple[dict[Hashable, list[int | None]], dict[Hashable, list[float | None]]]:
    """The arguments of :func:`fuse_candidates` checked, and each candidate's rank in each
    list and (with ``scores``) its raw score there, ``None`` where a list misses it."""
    if offset < 0 or (limit is not None and limit < 0):
        raise PlanError(f"limit and offset must be >= 0, got {limit!r}, {offset!r}", field="limit")
    if ranks is not None and len(ranks) != len(ranked_lists):
        raise PlanError(
            f"got {counted(len(ranks), 'rank list')} for "
            f"{counted(len(ranked_lists), 'ranked list')}",
            field="ranks",
            value=ranks,
        )
    if scores is not None and (
        len(scores) != len(ranked_lists)
        or any(len(raw) != len(keys) for raw, keys in zip(scores, ranked_lists))
    ):
        raise PlanError(
            "scores must give one raw score per key of each ranked list",
            field="scores",
            value=scores,
        )
    by_key: dict[Hashable, list[int | None]] = {}
    raw_by_key: dict[Hashable, list[float | None]] = {}
    if _plain_keys(ranked_lists):
        # Keys that can be neither None, NaN, of another kind nor repeated: only the ranks
        # are checked, then each key's entry is filled in, in the same order as below.
        count = len(ranked_lists)
        for branch, keys in enumerate(ranked_lists):
            branch_ranks = list(range(1, len(keys) + 1)) if ranks is None else list(ranks[branch])
            _check_ranks(branch_ranks, len(keys), branch)
            for key, rank in zip(keys, branch_ranks):
                entry = by_key.get(key)
                if entry is None:
                    entry = by_key[key] = [None] * count
                entry[branch] = rank
            if scores is not None:
                for key, raw_score in zip(keys, scores[branch]):
                    raw = raw_by_key.get(key)
                    if raw is None:
                        raw = raw_by_key[key] = [None] * count
                    raw[branch] = raw_score
    else:
        _collect_candidates(ranked_lists, ranks, scores, by_key, raw_by_key)
    return by_key, raw_by_key


def _page(
    scored: list[tuple[float, Hashable, list[int | None]]],
    limit: int | None,
    offset: int,
    min_score: float | None,
) -> list[FusedHit]:
    """The page of ``scored`` candidates (fused score, key, ranks): those scoring at least
    ``min_score``, by score descending then key ascending, ``offset`` skipped, ``limit``
    kept."""
    if min_score is not None:
        scored = [candidate for candidate in scored if candidate[0] >= min_score]
    scored.sort(key=lambda candidate: (-candidate[0], candidate[1]))
    end = None if limit is None else offset + limit
    # Hits are made for the page only: a fusion ranks every candidate of every branch.
    return [
        FusedHit(key=key, score=value, ranks=tuple(key_ranks))
        for value, key, key_ranks in scored[offset:end]
    ]


def _plain_keys(ranked_lists: Sequence[Sequence[Hashable]]) -> bool:
    """Whether every key of every list is an ``int`` (exactly: no bool) or every one a
    ``str``, and no list repeats a key: keys :func:`fuse_candidates` need not check one by
    one (C-speed set operations over each list)."""
    kinds: set[type] = set()
    for keys in ranked_lists:
        kinds.update(map(type, keys))
        if len(kinds) > 1 or len(set(keys)) != len(keys):
            return False
    return not kinds or kinds == {int} or kinds == {str}


def _collect_candidates(
    ranked_lists: Sequence[Sequence[Hashable]],
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    by_key: dict[Hashable, list[int | None]],
    raw_by_key: dict[Hashable, list[float | None]],
) -> None:
    """Fill ``by_key`` (each key's rank per list) and ``raw_by_key`` (its raw score per list,
    with ``scores``), checking every key and the ranks list by list
    (:func:`fuse_candidates`'s errors)."""
    first_key: Any = None
    first_kind = ""
    for branch, keys in enumerate(ranked_lists):
        branch_ranks = list(range(1, len(keys) + 1)) if ranks is None else list(ranks[branch])
        _check_ranks(branch_ranks, len(keys), branch)
        for position, (key, rank) in enumerate(zip(keys, branch_ranks)):
            if key is None:
                raise KeyTypeError(f"ranked list {branch} holds a None key", field="key")
            if key != key:  # NaN: it equals no key, not even itself, so it cannot be merged
                raise KeyTypeError(
                    f"ranked list {branch} holds a NaN key, which equals no key (not even itself)",
                    field="key",
                    value=key,
                )
            if first_key is None:
                first_key = key
                first_kind = _key_kind(key)
            elif type(key) is not type(first_key) and _key_kind(key) != first_kind:
                raise KeyTypeError(
                    f"keys of different kinds cannot be fused: {first_key!r} "
                    f"({type(first_key).__name__}) and {key!r} ({type(key).__name__}); "
                    "give every key the type of the key column",
                    field="key",
                    value=key,
                )
            entry = by_key.setdefault(key, [None] * len(ranked_lists))
            if entry[branch] is not None:
                raise PlanError(
                    f"key {key!r} appears twice in ranked list {branch}", field="key", value=key
                )
            entry[branch] = rank
            if scores is not None:
                raw = raw_by_key.setdefault(key, [None] * len(ranked_lists))
                raw[branch] = scores[branch][position]


FusionT = TypeVar("FusionT", bound=Fusion, contravariant=True)


class ReferenceFusion(Protocol[FusionT]):
    """The reference semantics of one fusion method (see :func:`reference_fusion`)."""

    def __call__(
        self,
        fusion: FusionT,
        ranked_lists: Sequence[Sequence[Hashable]],
        *,
        ranks: Sequence[Sequence[int]] | None,
        scores: Sequence[Sequence[float]] | None,
        limit: int | None,
        offset: int,
    ) -> list[FusedHit]:
        """The fused hits of ``fusion`` over the branches' ranked key lists."""
        ...


_REFERENCES: dict[type[Fusion], ReferenceFusion[Any]] = {}


def register_reference_fusion(
    fusion_type: type[Fusion], function: ReferenceFusion[Any]
) -> ReferenceFusion[Any]:
    """Make ``function`` the reference of ``fusion_type`` (and of its subclasses that have no
    reference of their own); returns ``function``.

    Raises:
        PlanError: ``fusion_type`` is not a :class:`~hotdata_retrieval.plan.search.Fusion`
            subclass.
    """
    if not (isinstance(fusion_type, type) and issubclass(fusion_type, Fusion)):
        raise PlanError(f"{fusion_type!r} is not a Fusion subclass", field="fusion")
    _REFERENCES[fusion_type] = function
    return function


def reference_fusion(
    fusion: Fusion,
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    ranks: Sequence[Sequence[int]] | None = None,
    scores: Sequence[Sequence[float]] | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[FusedHit]:
    """The reference result of a plan's ``fusion`` over its branches' ranked key lists, one
    list per branch in ``fusion.branches`` order (as :func:`rank_branch` gives them).

    Args:
        fusion: the plan's fusion; its class picks the registered reference function.
        ranked_lists: one list of keys per branch, best first, cut to the depth.
        ranks: each list's competition ranks (default: positions).
        scores: each list's raw scores, for methods that use them.
        limit: number of hits to return after ``offset`` (default: all).
        offset: number of leading hits to skip.

    Returns:
        Hits ordered by fused score descending, then key ascending.

    Raises:
        UnsupportedFeatureError: no reference function is registered for the fusion's class.
        PlanError: as the method's function raises.
    """
    for cls in type(fusion).__mro__:
        function = _REFERENCES.get(cls)
        if function is not None:
            return function(
                fusion, ranked_lists, ranks=ranks, scores=scores, limit=limit, offset=offset
            )
    raise UnsupportedFeatureError(
        f"fusion method {type(fusion).method!r} ({type(fusion).__name__})", "the reference fusion"
    )


def _reciprocal_rank_reference(
    fusion: ReciprocalRankFusion,
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    limit: int | None,
    offset: int,
) -> list[FusedHit]:
    return reciprocal_rank_fusion(
        ranked_lists,
        weights=[float(weight) for weight in fusion.weights],
        rank_constant=fusion.rank_constant,
        limit=limit,
        offset=offset,
        ranks=ranks,
        min_score=fusion.min_score,
    )


register_reference_fusion(ReciprocalRankFusion, _reciprocal_rank_reference)


def _similarities(raw: Sequence[float], higher_is_better: bool) -> list[float]:
    """A branch's raw scores as Float64 similarities: a score as is, a distance negated."""
    return [float(value) if higher_is_better else -float(value) for value in raw]


def _min_max_bounds(similarities: Sequence[float]) -> tuple[float, float]:
    return min(similarities), max(similarities)


def _distribution_bounds(similarities: Sequence[float]) -> tuple[float, float]:
    mean = statistics.fmean(similarities)
    deviation = statistics.stdev(similarities) if len(similarities) > 1 else 0.0
    spread = DistributionBasedScoreFusion.standard_deviations * deviation
    return mean - spread, mean + spread


def _normalized_fusion(
    ranked_lists: Sequence[Sequence[Hashable]],
    scores: Sequence[Sequence[float]],
    *,
    higher_is_better: Sequence[bool],
    weights: Sequence[float],
    bounds: Callable[[Sequence[float]], tuple[float, float]],
    equal_scores_value: float,
    ranks: Sequence[Sequence[int]] | None,
    limit: int | None,
    offset: int,
    min_score: float | None,
) -> list[FusedHit]:
    """The shared half of the score-normalized methods: similarities, per-branch bounds,
    ``(s - low) / (high - low)`` (``equal_scores_value`` when ``high == low``), weighted and
    added in branch order with 0 for a missed branch."""
    if len(higher_is_better) != len(ranked_lists) or len(weights) != len(ranked_lists):
        raise PlanError(
            f"got {counted(len(weights), 'weight')} and "
            f"{counted(len(higher_is_better), 'score direction')} for "
            f"{counted(len(ranked_lists), 'ranked list')}",
            field="weights",
            value=weights,
        )
    for weight in weights:
        if not math.isfinite(weight) or weight < 0:
            raise PlanError(
                f"weight must be finite and >= 0, got {weight!r}", field="weight", value=weight
            )
    for position, raw in enumerate(scores):
        for value in raw:
            if not math.isfinite(value):
                raise PlanError(
                    f"ranked list {position} has a score that is not finite: {value!r}",
                    field="scores",
                    value=value,
                )
    ranges: list[tuple[float, float] | None] = [
        bounds(_similarities(raw, better)) if raw else None
        for raw, better in zip(scores, higher_is_better)
    ]

    def score(key_ranks: Sequence[int | None], raw: Sequence[float | None]) -> float:
        total: float | None = None
        for branch, value in enumerate(raw):
            term = 0.0
            extent = ranges[branch]
            if value is not None and extent is not None:
                low, high = extent
                similarity = float(value) if higher_is_better[branch] else -float(value)
                normalized = (
                    equal_scores_value if high == low else (similarity - low) / (high - low)
                )
                term = float(weights[branch]) * normalized
            total = term if total is None else total + term
        assert total is not None
        return total

    return fuse_candidates(
        ranked_lists,
        score,
        ranks=ranks,
        scores=scores,
        limit=limit,
        offset=offset,
        min_score=min_score,
    )


def min_max_fusion(
    ranked_lists: Sequence[Sequence[Hashable]],
    scores: Sequence[Sequence[float]],
    *,
    higher_is_better: Sequence[bool],
    weights: Sequence[float],
    ranks: Sequence[Sequence[int]] | None = None,
    limit: int | None = None,
    offset: int = 0,
    min_score: float | None = None,
) -> list[FusedHit]:
    """Fuse ranked lists by min-max normalized, weighted scores
    (:class:`~hotdata_retrieval.plan.search.MinMaxFusion`).

    Each list's raw scores become similarities (a score as is; a distance, lower is nearer,
    negated), are normalized to ``(s - min) / (max - min)`` over the list, 1 for every key
    of a list whose scores are all equal, and ``score = Σ weights[i] · normalized_i`` with 0
    for a list that misses the key, added in list order in Float64.

    Args:
        ranked_lists: one list of keys per branch, best first, cut to the depth.
        scores: each list's raw scores, parallel to its keys.
        higher_is_better: per list, whether its raw score is a score (``True``) or a
            distance.
        weights: the multiplier of each list's normalized score (a plan's
            ``branch_weights``: convex, summing to 1).
        ranks: each list's competition ranks (reported in the hits; default positions).
        limit: number of hits to return after ``offset`` (default: all).
        offset: number of leading hits to skip.
        min_score: drop hits scoring below it before the page is cut (default: keep all).

    Raises:
        PlanError: counts that do not match the lists, a negative or non-finite weight or
            score, and as :func:`fuse_candidates`.

    >>> hits = min_max_fusion([["a", "b"], ["b", "c"]], [[3.0, 1.0], [0.1, 0.5]],
    ...                       higher_is_better=[True, False], weights=[0.25, 0.75])
    >>> [(hit.key, hit.score) for hit in hits]
    [('b', 0.75), ('a', 0.25), ('c', 0.0)]
    """
    return _normalized_fusion(
        ranked_lists,
        scores,
        higher_is_better=higher_is_better,
        weights=weights,
        bounds=_min_max_bounds,
        equal_scores_value=MinMaxFusion.equal_scores_value,
        ranks=ranks,
        limit=limit,
        offset=offset,
        min_score=min_score,
    )


def distribution_based_score_fusion(
    ranked_lists: Sequence[Sequence[Hashable]],
    scores: Sequence[Sequence[float]],
    *,
    higher_is_better: Sequence[bool],
    weights: Sequence[float],
    ranks: Sequence[Sequence[int]] | None = None,
    limit: int | None = None,
    offset: int = 0,
    min_score: float | None = None,
) -> list[FusedHit]:
    """Fuse ranked lists by distribution-based score fusion
    (:class:`~hotdata_retrieval.plan.search.DistributionBasedScoreFusion`, Qdrant's
    ``dbsf``).

    As :func:`min_max_fusion`, but each list is normalized over ``mean ∓ 3 sd`` with sd the
    sample standard deviation (:func:`statistics.stdev`, divisor ``n - 1``), unclamped, and
    a list of one key, or of equal scores, gives 0.5.

    >>> hits = distribution_based_score_fusion([["a", "b", "c"], ["b"]],
    ...     [[2.0, 1.0, 0.0], [0.3]], higher_is_better=[True, False], weights=[1.0, 1.0])
    >>> [(hit.key, round(hit.score, 4)) for hit in hits]
    [('b', 1.0), ('a', 0.6667), ('c', 0.3333)]
    """
    return _normalized_fusion(
        ranked_lists,
        scores,
        higher_is_better=higher_is_better,
        weights=weights,
        bounds=_distribution_bounds,
        equal_scores_value=DistributionBasedScoreFusion.equal_scores_value,
        ranks=ranks,
        limit=limit,
        offset=offset,
        min_score=min_score,
    )


def _normalized_score_reference(
    fusion: NormalizedScoreFusion,
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    limit: int | None,
    offset: int,
) -> list[FusedHit]:
    if scores is None:
        raise PlanError(
            f"the {fusion.method!r} fusion needs each ranked list's raw scores",
            field="scores",
        )
    function = (
        distribution_based_score_fusion
        if isinstance(fusion, DistributionBasedScoreFusion)
        else min_max_fusion
    )
    return function(
        ranked_lists,
        scores,
        higher_is_better=[branch.higher_is_better for branch in fusion.branches],
        weights=fusion.branch_weights,
        ranks=ranks,
        limit=limit,
        offset=offset,
        min_score=fusion.min_score,
    )


register_reference_fusion(MinMaxFusion, _normalized_score_reference)
register_reference_fusion(DistributionBasedScoreFusion, _normalized_score_reference)


def _check_ranks(ranks: Sequence[int], length: int, branch: int) -> None:
    """Competition ranks of a list of ``length``: 1-based, non-decreasing, each at most its
    position, and a new rank only where its position starts (``1, 1, 3``, never
    ``1, 1, 2``)."""
    if len(ranks) != length:
        raise PlanError(
            f"ranked list {branch} has {counted(length, 'key')} and {counted(len(ranks), 'rank')}",
            field="ranks",
            value=ranks,
        )
    previous: Any = None
    for position, rank in enumerate(ranks, start=1):
        valid = (type(rank) is int or (isinstance(rank, int) and not isinstance(rank, bool))) and (
            rank == 1 if previous is None else rank in (previous, position)
        )
        previous = rank
        if not valid:
            raise PlanError(
                f"rank {rank!r} at position {position} of ranked list {branch} is not a "
                "competition rank (1-based; a tie repeats the rank, the next row takes its "
                "position)",
                field="ranks",
                value=ranks,
            )


class _Descending:
    """A sort key that inverts the order of the value it wraps."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.value == other.value)

    def __hash__(self) -> int:  # pragma: no cover - sort keys are never hashed
        return hash(self.value)


def _sql_sort_key(value: Any, descending: bool) -> tuple[Any, ...]:
    """``value``'s place in ``ORDER BY <column> ASC|DESC`` with each direction's default NULL
    placement in PostgreSQL and DataFusion: NULLs last ascending, first descending."""
    if value is None:
        return (1,) if not descending else (0,)
    return (0, value) if not descending else (1, _Descending(value))


_Row = TypeVar("_Row", bound=Mapping[str, Any])


def ordered_rows(
    rows: Iterable[_Row],
    *,
    ranking: Sequence[tuple[str, bool]],
) -> list[_Row]:
    """``rows`` in the order of ``ORDER BY <column> ASC|DESC, ...``: the reference of a plan's
    final order (its ranking column, its ``tie_breakers``, its key).

    Args:
        rows: result rows, each holding every column named in ``ranking``.
        ranking: ``(column, descending)`` pairs, most significant first. NULLs sort last
            ascending and first descending, as PostgreSQL and DataFusion sort them by default
            (and as the compiled SQL asks every dialect to).

    Returns:
        The rows, sorted (stable: rows equal on every column keep their order).

    >>> ordered_rows([{"s": 1, "t": None}, {"s": 1, "t": 2}, {"s": 3, "t": 1}],
    ...              ranking=[("s", True), ("t", False)])
    [{'s': 3, 't': 1}, {'s': 1, 't': 2}, {'s': 1, 't': None}]
    """
    return sorted(
        rows,
        key=lambda row: tuple(
            _sql_sort_key(row[column], descending) for column, descending in ranking
        ),
    )


@attrs.frozen(kw_only=True)
class BranchTerm:
    """One branch's part of a fused score.

    Attributes:
        normalized: the branch's value on the fusion's common scale before its weight: the
            reciprocal rank ``1 / (rank_constant + rank)`` (RRF), the normalized similarity
            ``(s - low) / (high - low)`` (min-max, DBSF); ``None`` where the branch did not
            return the row.
        contribution: the weighted value the fused score adds for the branch:
            ``weight / (rank_constant + rank)`` or ``weight * normalized``; 0.0 where the
            branch did not return the row. A row's contributions, added in branch order, are
            its fused score.
    """

    normalized: float | None
    contribution: float


def branch_bounds(
    fusion: Fusion, scores: Sequence[Sequence[float]]
) -> list[tuple[float, float] | None]:
    """Per branch, the ``(low, high)`` a score-normalized fusion normalizes its similarities
    over, computed from the branch's raw scores (its candidates, cut to the depth), as the
    reference fusion computes them; ``None`` for a branch without candidates, and for every
    branch of a rank-based fusion (RRF), which has no bounds."""
    if not isinstance(fusion, NormalizedScoreFusion):
        return [None] * len(fusion.branches)
    bounds = (
        _distribution_bounds
        if isinstance(fusion, DistributionBasedScoreFusion)
        else _min_max_bounds
    )
    return [
        bounds(_similarities(raw, branch.higher_is_better)) if raw else None
        for raw, branch in zip(scores, fusion.branches)
    ]


def explain_terms(
    fusion: Fusion,
    ranks: Sequence[int | None],
    raw_scores: Sequence[float | None],
    bounds: Sequence[tuple[float | None, float | None] | None],
) -> list[BranchTerm]:
    """Each branch's term of one row's fused score, in branch order, computed as the fused
    score computes it (the SQL's terms and the reference's), so the contributions added in
    branch order give the fused score.

    Args:
        fusion: the plan's fusion (RRF, min-max or DBSF).
        ranks: the row's 1-based rank in each branch, ``None`` where a branch missed it.
        raw_scores: the row's raw score in each branch (a BM25 score or a distance).
        bounds: per branch, the ``(low, high)`` of a score-normalized fusion
            (:func:`branch_bounds`, or the bounds the statement returned); unused for RRF.

    Raises:
        UnsupportedFeatureError: a fusion method of another kind, whose terms are its own.
        PlanError: a score-normalized branch that returned the row without its bounds.
    """
    terms: list[BranchTerm] = []
    if isinstance(fusion, ReciprocalRankFusion):
        for rank, weight in zip(ranks, fusion.weights):
            if rank is None:
                terms.append(BranchTerm(normalized=None, contribution=0.0))
                continue
            terms.append(
                BranchTerm(
                    normalized=1.0 / (fusion.rank_constant + rank),
                    contribution=float(weight) / (fusion.rank_constant + rank),
                )
            )
        return terms
    if not isinstance(fusion, NormalizedScoreFusion):
        raise UnsupportedFeatureError(
            f"fusion method {type(fusion).method!r} ({type(fusion).__name__})",
            "explained scores",
        )
    for index, (rank, raw, extent, weight, branch) in enumerate(
        zip(ranks, raw_scores, bounds, fusion.branch_weights, fusion.branches)
    ):
        if rank is None or raw is None:
            terms.append(BranchTerm(normalized=None, contribution=0.0))
            continue
        if extent is None or extent[0] is None or extent[1] is None:
            raise PlanError(
                f"branch {index} returned the row but its normalization bounds are missing",
                field="bounds",
                value=extent,
            )
        low, high = float(extent[0]), float(extent[1])
        similarity = float(raw) if branch.higher_is_better else -float(raw)
        normalized = fusion.equal_scores_value if high == low else (similarity - low) / (high - low)
        terms.append(BranchTerm(normalized=normalized, contribution=float(weight) * normalized))
    return terms


def fill_bounds(
    plan: SearchPlan, rows: list[dict[str, Any]], scores: Sequence[Sequence[float]]
) -> None:
    """Complete ``rows`` (a fusion's result rows) in place, for an engine that fuses in the
    library (the local engine's native path, LanceDB, turbopuffer), when the plan explains
    its scores: each branch's normalization bounds (the columns of
    :func:`~hotdata_retrieval.plan.search.bound_columns`), computed from ``scores`` (each
    branch's raw scores, its candidates cut to the depth) by :func:`branch_bounds`, on every
    row where the branch returned it (``None`` elsewhere, as the statement's join leaves
    them)."""
    fusion = plan.fusion
    if fusion is None or not plan.explain_scores:
        return
    extents = branch_bounds(fusion, scores)
    for name, branch, extent in zip(plan.branch_names, plan.branches, extents):
        columns = bound_columns(name, fusion)
        if not columns:
            continue
        rank_column = debug_columns(name, branch)[0]
        for row in rows:
            returned = extent is not None and row.get(rank_column) is not None
            row[columns[0]] = extent[0] if returned and extent is not None else None
            row[columns[1]] = extent[1] if returned and extent is not None else None
