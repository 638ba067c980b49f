"""Filtered search on the local engine: what a selective filter costs against the same search
unfiltered.

Run from the repository root::

    python benchmarks/bench_filtered.py [--rows 100000] [--rounds N] [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s (seeded Zipf-like texts, 384-d standard-normal float32
vectors) plus ``bucket``, ``id % 100``: the filter ``bucket = 7`` keeps 1% of the rows. Each
round times, in a rotating order, the text, nearest (cosine, exact) and hybrid (RRF) plans with
and without the filter through :meth:`LocalEngine.search` (the native path), and the NumPy
float32 floor of the filtered nearest search (gather the kept rows, one product, a partial
sort). Reported: median latencies, and the medians of the per-round ratios ``filtered /
unfiltered`` per plan and ``filtered nearest / its floor``. The first round is a warm-up.

Targets (issue "filtered search at the speed of its selectivity"): a filter keeping 1% makes a
search no slower than unfiltered (ratio <= 1.0) and the filtered nearest search costs within a
small factor of its own floor. This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _report
import numpy as np
import pyarrow as pa
from bench_engine import (
    LIMIT,
    TABLE,
    hybrid_plan,
    make_queries,
    make_table,
    nearest_branch,
    text_branch,
)

from hotdata_retrieval import Comparison, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine

KEPT_BUCKET = 7
BUCKETS = 100
MARK_START = "<!-- filtered-benchmark:start -->"
MARK_END = "<!-- filtered-benchmark:end -->"
PLANS = ("text", "nearest", "hybrid")


def _filter() -> Comparison:
    return Comparison(column="bucket", operator="=", value=KEPT_BUCKET)


def _plans(query: str, vector: list[float], filtered: bool) -> dict[str, SearchPlan]:
    where = _filter() if filtered else None
    hybrid = hybrid_plan(query, vector)
    return {
        "text": SearchPlan(source=text_branch(query), limit=LIMIT, filter=where),
        "nearest": SearchPlan(source=nearest_branch(vector), limit=LIMIT, filter=where),
        "hybrid": SearchPlan(source=hybrid.source, limit=LIMIT, filter=where),
    }


def measure(rows: int, rounds: int, directory: Path) -> dict[str, Any]:
    table = make_table(rows).append_column(
        "bucket", pa.array(np.arange(rows, dtype=np.int64) % BUCKETS)
    )
    engine = LocalEngine(directory / "filtered")
    engine.load_table(TABLE, table, text_columns=["body"])
    kept = np.flatnonzero(np.arange(rows) % BUCKETS == KEPT_BUCKET)
    matrix = np.asarray(
        table["embedding"].combine_chunks().flatten().to_numpy(), dtype=np.float32
    ).reshape(rows, -1)
    queries = make_queries(rounds + 1)

    def floor(vector: list[float]) -> None:
        rows_kept = matrix[kept]
        query = np.asarray(vector, dtype=np.float32)
        scores = rows_kept @ (query / np.linalg.norm(query))
        scores /= np.linalg.norm(rows_kept, axis=1)
        np.argpartition(-scores, LIMIT)[:LIMIT]

    timings: dict[str, list[float]] = {name: [] for name in ("floor",)}
    for name in PLANS:
        timings[f"{name} filtered"] = []
        timings[f"{name} unfiltered"] = []
    ratios: dict[str, list[float]] = {name: [] for name in (*PLANS, "floor")}
    for round_index, (query, vector) in enumerate(queries):
        calls: list[tuple[str, Callable[[], Any]]] = []
        for filtered in (True, False):
            for name, plan in _plans(query, vector, filtered).items():
                label = f"{name} {'filtered' if filtered else 'unfiltered'}"
                calls.append((label, lambda plan=plan: engine.search(plan)))
        calls.append(("floor", lambda vector=vector: floor(vector)))
        shift = round_index % len(calls)
        elapsed: dict[str, float] = {}
        for label, call in calls[shift:] + calls[:shift]:
            start = time.perf_counter()
            call()
            elapsed[label] = time.perf_counter() - start
        if round_index == 0:
            continue  # warm-up
        for label, seconds in elapsed.items():
            timings[label].append(seconds)
        for name in PLANS:
            ratios[name].append(elapsed[f"{name} filtered"] / elapsed[f"{name} unfiltered"])
        ratios["floor"].append(elapsed["nearest filtered"] / elapsed["floor"])
    engine.close()
    return {
        "rows": rows,
        "medians": {label: statistics.median(values) for label, values in timings.items()},
        "ratios": {name: statistics.median(values) for name, values in ratios.items()},
    }


def report(result: dict[str, Any], when: str, load: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('numpy', 'tantivy', 'datafusion')}; load average "
        f"{load}; `{_report.command()}`. {result['rows']:,} rows, 384-d, limit {LIMIT}, the "
        f"filter keeping 1% of the rows (`bucket = {KEPT_BUCKET}`).",
        "",
        "| plan | filtered (ms) | unfiltered (ms) | filtered / unfiltered |",
        "|---|---:|---:|---:|",
    ]
    medians = result["medians"]
    for name in PLANS:
        lines.append(
            f"| {name} | {medians[f'{name} filtered'] * 1e3:.2f} | "
            f"{medians[f'{name} unfiltered'] * 1e3:.2f} | {result['ratios'][name]:.2f}x |"
        )
    lines += [
        "",
        f"Filtered nearest against its NumPy floor (gather the kept rows, one product): "
        f"{result['ratios']['floor']:.2f}x (floor {medians['floor'] * 1e3:.2f} ms).",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        result = measure(options.rows, options.rounds, Path(directory))
    when = datetime.date.today().isoformat()
    body = report(result, when, _report.load_average())
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
