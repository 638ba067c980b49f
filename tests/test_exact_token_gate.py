"""The exact-token gate: on the tickets ``hdq demo`` loads, a bare error code or version as
the query (``E4012``, ``4.2.1``), hybrid search by every fusion method at its defaults must find
a ticket that quotes it in its top 5 as often as BM25 does (within :data:`MARGIN`) and at least
as often as the embedding alone, and rank the first such ticket no lower on average (MRR) than
the embedding alone.

The queries and their judgments come from the generated tickets: each error code of
``PROBLEMS`` and each value of the ``version`` column, relevant to the tickets whose body
contains it (a substring test, independent of any tokenizer or index). The database is built as
``hdq demo`` builds it (BM25 on ``body``, ``body`` embedded by the offline default model);
metrics by ir-measures. The full table, with ticket ids, is
``benchmarks/quality/bench_exact_tokens.py`` and ``docs/benchmarks.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ir_measures
import pytest

from hotdata_retrieval.demo import PROBLEMS, support_tickets
from hotdata_retrieval.embed import MiniLMEmbedder, default_embedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.search import Fusion, SearchPlan, make_fusion

TABLE = "tickets"
LIMIT = 10
MARGIN = 0.05
"""Less than one query in the subset's 17: hybrid may not lose a token BM25 finds."""
FOUND = ir_measures.Success @ 5
RECIPROCAL_RANK = ir_measures.RR @ 10


@pytest.fixture(scope="module")
def judged() -> tuple[list[str], list[ir_measures.Qrel]]:
    tickets = support_tickets()
    keys = [str(key) for key in tickets.column("id").to_pylist()]
    bodies = tickets.column("body").to_pylist()
    tokens = [problem.code for problem in PROBLEMS]
    tokens += sorted(set(tickets.column("version").to_pylist()))
    qrels = [
        ir_measures.Qrel(token, key, 1)
        for token in tokens
        for key, body in zip(keys, bodies)
        if token in body
    ]
    queries = [token for token in tokens if any(qrel.query_id == token for qrel in qrels)]
    return queries, qrels


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return default_embedder()


@pytest.fixture(scope="module")
def engine(embedder: MiniLMEmbedder) -> Iterator[LocalEngine]:
    with LocalEngine(embedder=embedder) as local:
        local.load_table(TABLE, support_tickets(), text_columns=["body"], embed_columns=["body"])
        yield local


def _measure(
    engine: LocalEngine,
    embedder: MiniLMEmbedder,
    judged: tuple[list[str], list[ir_measures.Qrel]],
    mode: str,
    fusion: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, float]:
    """Mean found@5 and MRR of every judged query through ``mode``'s plan (for ``hybrid``
    with ``fusion``, its branches fused by that method and options); a query whose run finds
    nothing scores 0."""
    queries, qrels = judged
    run: dict[str, dict[str, float]] = {}
    for query in queries:
        plan = engine.plan_search(
            TABLE, query, mode=mode, limit=LIMIT, embed_query=embedder.embed_query
        )
        if fusion is not None:
            method, options = fusion
            source: Fusion = make_fusion(
                method, plan.branches, depth=getattr(plan.source, "depth", None), **options
            )
            plan = SearchPlan(
                source=source, columns=[plan.key_column], key_column=plan.key_column, limit=LIMIT
            )
        result = engine.search(plan)
        run[query] = {str(hit.key): float(LIMIT - position) for position, hit in enumerate(result)}
    totals = {FOUND: 0.0, RECIPROCAL_RANK: 0.0}
    for metric in ir_measures.iter_calc(list(totals), qrels, run):
        totals[metric.measure] += metric.value
    return {str(measure): total / len(queries) for measure, total in totals.items()}


@pytest.fixture(scope="module")
def branches(
    engine: LocalEngine, embedder: MiniLMEmbedder, judged: tuple[list[str], list[ir_measures.Qrel]]
) -> dict[str, dict[str, float]]:
    text = _measure(engine, embedder, judged, "text")
    semantic = _measure(engine, embedder, judged, "semantic")
    # the premise: BM25 finds every quoted token, the embedding ranks them lower
    assert text[str(FOUND)] == 1.0 and text[str(RECIPROCAL_RANK)] == 1.0
    assert semantic[str(RECIPROCAL_RANK)] < text[str(RECIPROCAL_RANK)]
    return {"text": text, "semantic": semantic}


def _gate(hybrid: dict[str, float], branches: dict[str, dict[str, float]]) -> list[str]:
    """What ``hybrid`` falls short of: found@5 of text minus the margin and of semantic, MRR
    of semantic."""
    found, reciprocal = str(FOUND), str(RECIPROCAL_RANK)
    problems = []
    if hybrid[found] < branches["text"][found] - MARGIN:
        problems.append(
            f"found@5 {hybrid[found]:.3f} < text {branches['text'][found]:.3f} - {MARGIN}"
        )
    if hybrid[found] < branches["semantic"][found]:
        problems.append(f"found@5 {hybrid[found]:.3f} < semantic {branches['semantic'][found]:.3f}")
    if hybrid[reciprocal] < branches["semantic"][reciprocal]:
        problems.append(
            f"MRR {hybrid[reciprocal]:.3f} < semantic {branches['semantic'][reciprocal]:.3f}"
        )
    return problems


def test_the_queries_are_what_the_module_says(
    judged: tuple[list[str], list[ir_measures.Qrel]],
) -> None:
    queries, qrels = judged
    assert len(queries) == 17  # 12 error codes, 5 versions
    for query in queries:
        relevant = sum(qrel.query_id == query for qrel in qrels)
        assert 0 < relevant < 144 // 2  # a token some tickets quote, not most


@pytest.mark.parametrize("method", ["rrf", "min_max", "dbsf"])
def test_hybrid_finds_exact_tokens(
    engine: LocalEngine,
    embedder: MiniLMEmbedder,
    judged: tuple[list[str], list[ir_measures.Qrel]],
    branches: dict[str, dict[str, float]],
    method: str,
) -> None:
    hybrid = _measure(engine, embedder, judged, "hybrid", (method, {}))
    assert _gate(hybrid, branches) == [], f"{method} at its defaults"


def test_the_gate_catches_a_hybrid_that_ignores_bm25(
    engine: LocalEngine,
    embedder: MiniLMEmbedder,
    judged: tuple[list[str], list[ir_measures.Qrel]],
    branches: dict[str, dict[str, float]],
) -> None:
    # alpha 1: all the weight on the vector branch, so the fused order is the embedding's
    vector_only = _measure(engine, embedder, judged, "hybrid", ("min_max", {"alpha": 1.0}))
    assert _gate(vector_only, branches) != []
