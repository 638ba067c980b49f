"""Maximal marginal relevance: the order the diversity step gives a search's candidates.

The reference is LangChain's ``maximal_marginal_relevance``
(``langchain_core.vectorstores.utils``): the tests check that both choose the same rows in
the same order. It is written here on NumPy with the same definition (Carbonell & Goldstein,
"The use of MMR, diversity-based reranking for reordering documents and producing
summaries", SIGIR 1998):

- similarity is cosine similarity, 0 where either vector has norm 0;
- the first row chosen is the one most similar to the query;
- each next row maximises ``mmr_lambda * sim(row, query) - (1 - mmr_lambda) *
  max(sim(row, chosen))`` among the rows not chosen yet;
- ties go to the earlier candidate (the statement's order).

The order of the first ``k`` rows does not depend on ``k``: asking for more extends the list,
so pages cut from it are slices of one ordering.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hotdata_retrieval._words import counted
from hotdata_retrieval.errors import PlanError


def _numpy() -> Any:
    try:
        import numpy as np
    except ImportError:
        from hotdata_retrieval.extras import missing_extra

        raise missing_extra("local", missing=["numpy"], needed_by="diversity") from None
    return np


def _cosine(np: Any, matrix: Any, vector: Any) -> Any:
    """Cosine similarity of each row of ``matrix`` with ``vector``; 0 where a norm is 0."""
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = (matrix @ vector) / norms
    similarity[~np.isfinite(similarity)] = 0.0
    return similarity


def maximal_marginal_relevance(
    query_vector: Sequence[float],
    vectors: Sequence[Sequence[float]],
    *,
    mmr_lambda: float,
    count: int,
) -> list[int]:
    """The positions in ``vectors`` of the ``count`` rows maximal marginal relevance chooses,
    in the order it chooses them (module docstring).

    Args:
        query_vector: the query embedding, ``d`` numbers.
        vectors: the candidates' embeddings, each ``d`` numbers, in the statement's order.
        mmr_lambda: 0 (difference from the rows chosen alone) to 1 (similarity to the query
            alone).
        count: rows to choose; fewer when there are fewer candidates.

    Returns:
        Positions into ``vectors``, each once.

    Raises:
        PlanError: a vector whose length is not the query's.
        MissingExtraError: NumPy is not installed.
    """
    np = _numpy()
    count = min(count, len(vectors))
    if count <= 0:
        return []
    query = np.asarray(query_vector, dtype=np.float64)
    for position, vector in enumerate(vectors):
        if len(vector) != len(query):
            raise PlanError(
                f"candidate {position + 1} of {len(vectors)} has a vector of "
                f"{counted(len(vector), 'dimension')}, the query {len(query)}",
                field="vectors",
                value=position,
            )
    matrix = np.asarray(vectors, dtype=np.float64)
    relevance = _cosine(np, matrix, query)
    chosen = [int(np.argmax(relevance))]
    redundancy = _cosine(np, matrix, matrix[chosen[0]])
    available = np.ones(len(matrix), dtype=bool)
    available[chosen[0]] = False
    while len(chosen) < count:
        scores = mmr_lambda * relevance - (1 - mmr_lambda) * redundancy
        scores[~available] = -np.inf
        best = int(np.argmax(scores))
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, _cosine(np, matrix, matrix[best]))
    return chosen
