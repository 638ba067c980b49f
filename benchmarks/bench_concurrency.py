"""Throughput of concurrent callers: the local engine's exact nearest and hybrid searches with 1
and 4 threads calling at once, with and without the BLAS gate, beside LanceDB's.

Run from the repository root::

    python benchmarks/bench_concurrency.py [--rows 100000] [--rounds 5] [--searches 48] \\
        [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s (seeded Zipf-like texts, 384-d standard-normal float32
vectors), loaded into the local engine (BM25 on ``body``) and into raw LanceDB (its own
full-text index on ``body``, no vector index). Each contender answers ``--searches`` queries
per measurement, split over 1 caller or over 4 threads calling at once (one
``LocalEngine`` shared by the threads, as a server holds one; one LanceDB table); its
throughput is searches per second of wall time. Contenders:

- ``local nearest``: a cosine ``NearestNeighborSearch`` plan, ``limit`` 10, exact, through
  :meth:`LocalEngine.search`, with the products under the process's BLAS gate
  (``engines/local/_blas.py``: on every core alone, one BLAS thread a product while searches
  overlap);
- ``local nearest, BLAS on every core``: the same with the gate bypassed (every product asks
  BLAS for every core, NumPy's default: what the engine did before the gate);
- ``local hybrid``: their reciprocal rank fusion with a BM25 branch (depth 100), gated;
- ``LanceDB nearest``: its exact cosine search (the vector index bypassed);
- ``LanceDB hybrid``: its hybrid search fused by its ``RRFReranker``, each branch 100 deep.

Rounds rotate the contenders' order (one warm-up round, dropped); each round measures every
contender with 1 caller then with 4, each measurement from BLAS's own thread count (the gate's
one-thread limit, which a lone caller lifts after 8 searches, is lifted first). Reported: the
median throughput, the median of the per-round ratios ``4 callers / 1 caller`` (target >= 1.0:
concurrency does not cost total throughput) and each local contender's 4-caller throughput
over LanceDB's same plan (target > 1.0). This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _report
import pyarrow as pa
from bench_engine import (
    DIMENSIONS,
    LIMIT,
    TABLE,
    hybrid_plan,
    make_queries,
    make_table,
    nearest_branch,
)

from hotdata_retrieval import SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local import nearest as nearest_module
from hotdata_retrieval.engines.local._blas import BLAS_GATE

CALLERS = (1, 4)
DEPTH = 100
MARK_START = "<!-- concurrency-benchmark:start -->"
MARK_END = "<!-- concurrency-benchmark:end -->"
LABELS = {
    "local nearest": "local nearest (cosine, exact)",
    "local nearest ungated": "local nearest, BLAS on every core (no gate)",
    "local hybrid": "local hybrid (RRF)",
    "lancedb nearest": "LanceDB nearest (exact)",
    "lancedb hybrid": "LanceDB hybrid (RRF)",
}
PEER = {
    "local nearest": "lancedb nearest",
    "local nearest ungated": "lancedb nearest",
    "local hybrid": "lancedb hybrid",
}

Runner = Callable[[str, list[float]], Any]


def local_runners(engine: LocalEngine) -> dict[str, Runner]:
    def nearest(query: str, vector: list[float]) -> Any:
        plan = SearchPlan(source=nearest_branch(vector), columns=["id"], limit=LIMIT)
        return engine.search(plan).keys

    def ungated(query: str, vector: list[float]) -> Any:
        return nearest(query, vector)

    def hybrid(query: str, vector: list[float]) -> Any:
        return engine.search(hybrid_plan(query, vector)).keys

    return {"local nearest": nearest, "local nearest ungated": ungated, "local hybrid": hybrid}


def lancedb_runners(table: Any) -> dict[str, Runner]:
    def nearest(query: str, vector: list[float]) -> Any:
        search = (
            table.search(vector, vector_column_name="embedding")
            .distance_type("cosine")
            .bypass_vector_index()
            .select(["id", "_distance"])
            .limit(LIMIT)
        )
        return search.to_arrow().column("id").to_pylist()

    def hybrid(query: str, vector: list[float]) -> Any:
        search = (
            table.search(query_type="hybrid", vector_column_name="embedding", fts_columns="body")
            .vector(vector)
            .text(query)
            .distance_type("cosine")
            .bypass_vector_index()
            .select(["id"])
            .limit(DEPTH)
        )
        return search.to_arrow().column("id").to_pylist()[:LIMIT]

    return {"lancedb nearest": nearest, "lancedb hybrid": hybrid}


@contextlib.contextmanager
def _gate_bypassed() -> Any:
    """The local engine's products without the BLAS gate (NumPy's default thread count)."""
    saved = nearest_module.blas_product
    nearest_module.blas_product = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        nearest_module.blas_product = saved


def throughput(run: Runner, queries: list[tuple[str, list[float]]], callers: int) -> float:
    """Searches per second of wall time: ``queries`` split over ``callers`` threads."""
    shares = [queries[start::callers] for start in range(callers)]
    barrier = threading.Barrier(callers + 1)
    errors: list[BaseException] = []

    def work(share: list[tuple[str, list[float]]]) -> None:
        barrier.wait()
        try:
            for query, vector in share:
                run(query, vector)
        except BaseException as error:  # reported after the threads join
            errors.append(error)

    threads = [threading.Thread(target=work, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return len(queries) / elapsed


def measure(rows: int, rounds: int, searches: int, directory: Path) -> dict[str, Any]:
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb
    from lancedb.index import FTS

    print(f"{rows:,} rows: generating and loading ...", file=sys.stderr)
    table = make_table(rows)
    engine = LocalEngine(directory / "local")
    engine.load_table(TABLE, table, key_column="id", text_columns=["body"])
    fixed = table.set_column(
        table.schema.get_field_index("embedding"),
        "embedding",
        table.column("embedding").cast(pa.list_(pa.float32(), DIMENSIONS)),
    )
    lance = lancedb.connect(directory / "lancedb")
    lance_table = lance.create_table(TABLE, fixed)
    lance_table.create_index("body", config=FTS())
    del table, fixed
    runners = {**local_runners(engine), **lancedb_runners(lance_table)}
    queries = make_queries(searches)
    names = list(runners)
    results: dict[tuple[str, int], list[float]] = {(n, c): [] for n in names for c in CALLERS}
    for round_number in range(rounds + 1):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            bypass = _gate_bypassed() if name.endswith("ungated") else contextlib.nullcontext()
            with bypass:
                for callers in CALLERS:
                    # each measurement starts from BLAS's own thread count: a lone caller's
                    # steady state, not the one-thread limit the last 4-caller run left
                    BLAS_GATE.restore()
                    # LanceDB's exact scan costs 20x the local one: a quarter of the searches
                    asked = queries if name.startswith("local") else queries[: searches // 4]
                    rate = throughput(runners[name], asked, callers)
                    if round_number:
                        results[(name, callers)].append(rate)
        print(f"  round {round_number}/{rounds}", file=sys.stderr)
    engine.close()
    return {"rows": rows, "rounds": rounds, "searches": searches, "results": results}


def report(result: dict[str, Any], when: str, load: str) -> str:
    results = result["results"]
    names = list(LABELS)
    lines = [
        f"Measured {when} on {_report.machine('numpy', 'threadpoolctl', 'lancedb')}; "
        f"load average {load} at the start; `{_report.command()}`. "
        f"{result['rows']:,} rows, 384-d, limit 10; {result['rounds']} rounds after one "
        f"warm-up round.",
        "",
        "| contender | 1 caller, searches/s | 4 callers, searches/s | 4 callers / 1 caller "
        "| target | 4 callers / LanceDB's |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        one, four = results[(name, 1)], results[(name, 4)]
        ratio = statistics.median(b / a for a, b in zip(one, four))
        peer = PEER.get(name)
        over = "-"
        target = "-"
        if peer is not None:
            over = f"{statistics.median(four) / statistics.median(results[(peer, 4)]):.1f}x"
            if not name.endswith("ungated"):
                target = f">= 1.0x ({'met' if ratio >= 1.0 else 'not met'})"
        lines.append(
            f"| {LABELS[name]} | {statistics.median(one):,.1f} | {statistics.median(four):,.1f} "
            f"| {ratio:.2f}x | {target} | {over} |"
        )
    lines += [
        "",
        "- throughput: searches per second of wall time, the searches split over the callers "
        f"(threads sharing one engine); local contenders {result['searches']} searches a "
        f"measurement, LanceDB {result['searches'] // 4}; medians over the rounds, and of the "
        "per-round ratios.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--searches", type=int, default=48)
    parser.add_argument("--write", type=Path, help="rewrite this file's marked section")
    arguments = parser.parse_args(argv)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    with tempfile.TemporaryDirectory() as scratch:
        result = measure(arguments.rows, arguments.rounds, arguments.searches, Path(scratch))
    _report.publish(report(result, when, load), arguments.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
