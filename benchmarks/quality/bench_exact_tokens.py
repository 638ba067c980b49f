"""Exact tokens on the demo corpus: found@5 and MRR of bare error codes, versions and ticket
ids, for text alone, semantic alone, and hybrid by every fusion method at its defaults.

Run from the repository root (needs ``pip install 'hotdata-retrieval[tune]'``)::

    python benchmarks/quality/bench_exact_tokens.py [--json PATH] [--write docs/benchmarks.md]

What it does:

1. Generates the support tickets ``hdq demo`` loads (:func:`hotdata_retrieval.demo.
   support_tickets`, same arguments) and loads them as ``hdq demo`` does, into an in-memory
   local database: BM25 on ``body``, ``body`` embedded by :func:`hotdata_retrieval.embed.
   default_embedder` (the offline all-MiniLM-L6-v2; nothing is downloaded).
2. Derives the queries and their judgments from the generated table, never by hand
   (:func:`exact_token_queries`): every error code of :data:`hotdata_retrieval.demo.PROBLEMS`
   and every value of the ``version`` column, each relevant to the tickets whose ``body``
   quotes it; and every value of the ``ticket`` column (``TCK-1076``), relevant to the ticket
   it names.
3. Runs each query, top 10, as ``hdq search`` would route it: ``text`` (BM25), ``semantic``
   (nearest neighbours of the embedded query), and ``hybrid``, whose two branches are fused by
   reciprocal rank fusion (the router's plan as it is), the min-max convex combination and
   distribution-based score fusion (each over the router's branches at its defaults,
   :func:`hotdata_retrieval.plan.search.make_fusion`).
4. Scores every run with ir-measures (trec_eval's definitions): ``Success@5`` (found@5: a
   relevant ticket in the top 5) and ``RR@10`` (reciprocal rank of the first relevant ticket
   in the top 10; its mean is the MRR) and ``P@5`` (the share of the top 5 that is relevant),
   per kind of token; a query a run misses scores 0 (:func:`hotdata_retrieval.tuning.
   measure_run`).

This script reports; the CI gate is ``tests/test_exact_token_gate.py``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # measure the checked-out tree
sys.path.insert(0, str(ROOT / "benchmarks"))

import _report  # noqa: E402  the scripts' shared reporting helpers

from hotdata_retrieval import tuning  # noqa: E402
from hotdata_retrieval.cli.demo import DEMO_TABLE  # noqa: E402
from hotdata_retrieval.demo import PROBLEMS, support_tickets  # noqa: E402
from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402
from hotdata_retrieval.plan.search import SearchPlan, make_fusion  # noqa: E402

if TYPE_CHECKING:
    import pyarrow as pa

MEASURES = ("Success@5", "RR@10", "P@5")
LIMIT = 10
METHODS = ("text", "semantic", "rrf", "min_max", "dbsf")
"""The runs compared: the two single branches, then hybrid by each fusion method."""
FUSIONS = ("rrf", "min_max", "dbsf")
KINDS = ("error code", "version", "ticket id")
MARK_START = "<!-- exact-token-benchmark:start -->"
MARK_END = "<!-- exact-token-benchmark:end -->"


def exact_token_queries(
    tickets: pa.Table,
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, dict[str, int]]]:
    """The exact-token queries of the demo ``tickets`` and their judgments.

    Returns:
        ``(queries, qrels)``: ``queries`` maps each kind (:data:`KINDS`) to its
        ``(query id, query text)`` pairs; ``qrels`` maps a query id to the relevant tickets'
        ``id`` (as a string) → grade 1. An error code or version is relevant to every ticket
        whose ``body`` contains it (a code or version no body quotes is left out); a ticket
        id is relevant to the ticket whose ``ticket`` column it is.
    """
    keys = [str(key) for key in tickets.column("id").to_pylist()]
    bodies = tickets.column("body").to_pylist()
    quoted = {
        "error code": [problem.code for problem in PROBLEMS],
        "version": sorted(set(tickets.column("version").to_pylist())),
    }
    queries: dict[str, list[tuple[str, str]]] = {kind: [] for kind in KINDS}
    qrels: dict[str, dict[str, int]] = {}
    for kind, tokens in quoted.items():
        for token in tokens:
            relevant = {key: 1 for key, body in zip(keys, bodies) if token in body}
            if relevant:
                queries[kind].append((token, token))
                qrels[token] = relevant
    for key, ticket in zip(keys, tickets.column("ticket").to_pylist()):
        queries["ticket id"].append((ticket, ticket))
        qrels[ticket] = {key: 1}
    return queries, qrels


def method_runs(
    engine: LocalEngine, queries: Sequence[tuple[str, str]], embed_query: Callable[[str], Any]
) -> dict[str, dict[str, dict[str, float]]]:
    """Each method's top :data:`LIMIT` of every query, as ir-measures runs (method → query id
    → ticket id → a score that falls with the position)."""
    runs: dict[str, dict[str, dict[str, float]]] = {method: {} for method in METHODS}

    def record(method: str, query_id: str, plan: SearchPlan) -> None:
        result = engine.search(plan)
        runs[method][query_id] = {
            str(hit.key): float(LIMIT - position) for position, hit in enumerate(result)
        }

    for query_id, text in queries:
        for mode in ("text", "semantic"):
            plan = engine.plan_search(
                DEMO_TABLE, text, mode=mode, limit=LIMIT, embed_query=embed_query
            )
            record(mode, query_id, plan)
        routed = engine.plan_search(
            DEMO_TABLE, text, mode="hybrid", limit=LIMIT, embed_query=embed_query
        )
        record("rrf", query_id, routed)
        depth = getattr(routed.source, "depth", None)
        for method in FUSIONS[1:]:
            plan = SearchPlan(
                source=make_fusion(method, routed.branches, depth=depth),
                columns=[routed.key_column],
                key_column=routed.key_column,
                limit=LIMIT,
            )
            record(method, query_id, plan)
    return runs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--write", type=Path, metavar="PATH", help="rewrite its marked section")
    options = parser.parse_args(argv)

    from hotdata_retrieval.embed import default_embedder

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    started = time.perf_counter()
    tickets = support_tickets()
    queries, qrels = exact_token_queries(tickets)
    embedder = default_embedder()
    rows: dict[str, dict[str, dict[str, float]]] = {method: {} for method in METHODS}
    misses: dict[str, dict[str, list[str]]] = {kind: {} for kind in KINDS}
    with LocalEngine(embedder=embedder) as engine:
        engine.load_table(DEMO_TABLE, tickets, text_columns=["body"], embed_columns=["body"])
        for kind in KINDS:
            print(f"{kind}: {len(queries[kind])} queries ...", file=sys.stderr)
            runs = method_runs(engine, queries[kind], embedder.embed_query)
            query_ids = [query_id for query_id, _ in queries[kind]]
            for method in METHODS:
                values = tuning.measure_run(runs[method], qrels, query_ids, MEASURES)
                rows[method][kind] = {name: float(values[name].mean()) for name in MEASURES}
                misses[kind][method] = [
                    query_id for query_id, found in zip(query_ids, values["Success@5"]) if not found
                ]
    results = {
        "when": when,
        "load_average": load,
        "embedder": str(embedder.name),
        "tickets": tickets.num_rows,
        "queries": {kind: len(queries[kind]) for kind in KINDS},
        "relevant": {
            kind: sum(len(qrels[query_id]) for query_id, _ in queries[kind]) for kind in KINDS
        },
        "rows": rows,
        "misses": misses,
        "seconds": time.perf_counter() - started,
    }
    body = report(results)
    print(body)
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if options.write is not None:
        _report.write_section(options.write, body, MARK_START, MARK_END)


LABELS = {
    "text": "text (BM25)",
    "semantic": "semantic (nearest)",
    "rrf": "hybrid, rrf",
    "min_max": "hybrid, min_max",
    "dbsf": "hybrid, dbsf",
}
SHOWN_MISSES = 8
"""A run that misses more queries than this is reported by count, not by name."""


def report(results: dict[str, Any]) -> str:
    """The marked section of ``docs/benchmarks.md``: the run's conditions, one row per method
    with found@5 and MRR per kind of token, and the queries each run misses in its top 5."""
    counts = ", ".join(
        f"{results['queries'][kind]} {kind}s ({results['relevant'][kind]} relevant tickets)"
        for kind in KINDS
    )
    lines = [
        f"Measured {results['when']} on {_report.machine()}; load average "
        f"{results['load_average']} at the start; {results['seconds']:.0f} s in all.",
        f"Embedder `{results['embedder']}`; metrics by ir-measures "
        f"{_report.package_version('ir-measures')} (pytrec_eval provider): found@5 = "
        "`Success@5`, MRR = mean `RR@10`, precision@5 = `P@5`.",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        f"{results['tickets']} demo tickets; {counts}; top 10 per query.",
        "",
        "| token | method | found@5 | MRR | precision@5 |",
        "|---|---|---:|---:|---:|",
    ]
    for kind in KINDS:
        for method in METHODS:
            values = results["rows"][method][kind]
            lines.append(
                f"| {kind} | {LABELS[method]} | {values['Success@5']:.3f} "
                f"| {values['RR@10']:.3f} | {values['P@5']:.3f} |"
            )
    lines.append("")
    for kind in KINDS:
        total = results["queries"][kind]
        missed = []
        for method in METHODS:
            names = results["misses"][kind][method]
            if not names:
                missed.append(f"{method} none")
            elif len(names) > SHOWN_MISSES:
                missed.append(f"{method} {len(names)} of {total}")
            else:
                missed.append(f"{method} {', '.join(f'`{name}`' for name in names)}")
        lines.append(f"- {kind}s not found in the top 5: " + "; ".join(missed) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
