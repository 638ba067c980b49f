"""Running a plan's steps (:mod:`hotdata_retrieval.plan.steps`) on the hits of its statement:
the one place every engine's ``search`` does it (through
:func:`~hotdata_retrieval.engines.results.search_result`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from hotdata_retrieval.diversity import maximal_marginal_relevance
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.results import SearchHit
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.plan.steps import Diversity, Highlight, PlanStep, Rerank, step_inputs

StepRunner = Callable[[PlanStep, SearchPlan, list[SearchHit], int], list[SearchHit]]


def _diversity(
    step: PlanStep, plan: SearchPlan, hits: list[SearchHit], following: int
) -> list[SearchHit]:
    assert isinstance(step, Diversity)
    branch = step.branch(plan)
    with_vector = [hit for hit in hits if hit.columns.get(branch.column) is not None]
    # A row without a vector has no similarity to anything: it follows the chosen rows.
    without = [hit for hit in hits if hit.columns.get(branch.column) is None]
    vectors = [hit.columns[branch.column] for hit in with_vector]
    if any(len(vector) != len(branch.query_vector) for vector in vectors):
        raise EngineError(
            f"a stored vector of column '{branch.column}' has another dimension than the "
            f"query's {len(branch.query_vector)}"
        )
    order = maximal_marginal_relevance(
        branch.query_vector, vectors, mmr_lambda=step.mmr_lambda, count=following
    )
    return [with_vector[position] for position in order] + without


def _rerank(
    step: PlanStep, plan: SearchPlan, hits: list[SearchHit], following: int
) -> list[SearchHit]:
    assert isinstance(step, Rerank)
    from hotdata_retrieval.embed.reranking import reranker_for

    reranker = reranker_for(step.model)
    query, column = step.query_text(plan), step.text_column(plan)
    scored = hits[: step.input_rows(plan, following)]
    texts = ["" if hit.columns.get(column) is None else str(hit.columns[column]) for hit in scored]
    scores = reranker.score([(query, text) for text in texts])
    if len(scores) != len(scored) or not all(math.isfinite(score) for score in scores):
        raise EngineError(
            f"reranker {step.model!r} returned {len(scores)} scores for {len(scored)} pairs, "
            "or a score that is not a finite number"
        )
    order = sorted(range(len(scored)), key=lambda position: -scores[position])
    return [attrs.evolve(scored[position], rerank_score=scores[position]) for position in order]


def _highlight(
    step: PlanStep, plan: SearchPlan, hits: list[SearchHit], following: int
) -> list[SearchHit]:
    assert isinstance(step, Highlight)
    from hotdata_retrieval.highlights import highlight

    query, columns = step.query_text(plan), step.text_columns(plan)
    size, count = step.fragment_size, step.fragments
    return [
        attrs.evolve(
            hit,
            highlights={
                column: highlight(query, str(hit.columns[column]), size=size, count=count)
                for column in columns
                if hit.columns.get(column) is not None
            },
        )
        for hit in hits
    ]


_RUNNERS: dict[str, StepRunner] = {
    Diversity.kind: _diversity,
    Rerank.kind: _rerank,
    Highlight.kind: _highlight,
}


def run_steps(plan: SearchPlan, hits: Sequence[SearchHit]) -> tuple[SearchHit, ...]:
    """``plan``'s page of ``hits`` (its statement's, from
    :func:`~hotdata_retrieval.plan.steps.statement_plan`, carrying the columns and vectors
    the steps read): each step run in order, then ``offset`` and ``limit`` applied, and each
    hit left with only the plan's own columns.

    Raises:
        EngineError: a stored vector of another dimension than the query's; a reranker
            that returned the wrong number of scores or a non-finite one.
        RerankerUnavailableError: the rerank step's model cannot be loaded.
        MissingExtraError: a step needs NumPy and it is not installed.
    """
    rows = list(hits)
    steps = plan.steps
    needs = [*step_inputs(plan)[1:], plan.limit + plan.offset]
    for step, following in zip(steps, needs):
        rows = _RUNNERS[step.kind](step, plan, rows, following)
    page = rows[plan.offset : plan.offset + plan.limit]
    projection = plan.projection
    return tuple(
        hit
        if set(hit.columns) == set(projection)
        else attrs.evolve(hit, columns={column: hit.columns[column] for column in projection})
        for hit in page
    )
