"""Text search on the local engine against raw tantivy, in CPU time, at k = 10 and k = 1000.

Run from the repository root::

    python benchmarks/bench_text.py [--rows 100000] [--rounds N] [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s (seeded Zipf-like texts of about 30 tokens over a 5,000-word
vocabulary, queries of 3 tokens), loaded with :meth:`LocalEngine.load_table` (a BM25 index on
``body``). Each round, for one query, in a rotating order:

- ``engine``: a :class:`Bm25Search` plan through :meth:`LocalEngine.search` (the native path:
  plan checks, the index search, the page's rows, typed hits), projecting ``id``, limit k;
- ``raw tantivy``: the floor any caller of tantivy pays for the same answer: the query text
  analysed by the library's analysis, a disjunction of term queries, tantivy's top k, the
  rowids read from the ``rowid`` fast field in one batch and the keys looked up from a NumPy
  copy of ``id``, on an index of the same texts written by tantivy directly (same schema of
  rowid and text, same analyzer).

Both run in one process, on one core's CPU time (``time.process_time``), so machine load moves
both alike; the engine's keys are checked against the floor's each round (as sets: ties at
the k-th place may be cut in another order by tantivy). Reported: medians (25th to 75th
percentile) in ms and the median of the per-round ratios ``engine / raw tantivy``.

Targets (issue 50): text at k = 10 at most 1.3x raw tantivy, at k = 1000 at most 2x. This
script reports; it asserts nothing about time.
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
from _baselines import raw_tantivy_index, raw_tantivy_search
from bench_engine import TABLE, make_queries, text_branch
from bench_filtered import NEW, SELECTIVITIES, _filter, _new_filter, make_filtered_table

from hotdata_retrieval import SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan import Predicate

MARK_START = "<!-- text-benchmark:start -->"
MARK_END = "<!-- text-benchmark:end -->"
LIMITS = (10, 1000)
TARGETS = {10: 1.3, 1000: 2.0}


def measure(rows: int, rounds: int, directory: Path) -> dict[str, Any]:
    print(f"{rows:,} rows: generating and loading ...", file=sys.stderr)
    table = make_filtered_table(rows).drop_columns(["embedding"])
    engine = LocalEngine(directory / "engine")
    engine.load_table(TABLE, table, key_column="id", text_columns=["body"])
    raw = raw_tantivy_search(
        raw_tantivy_index(directory / "raw", table.column("body").to_pylist()),
        np.asarray(table.column("id").to_numpy()),
    )
    serials = iter(range(1 << 30))

    def searcher(label: str | None) -> Callable[[str, int], list[Any]]:
        """The engine's search, unfiltered (``None``) or under the filter ``label`` names."""

        def search(query: str, k: int) -> list[Any]:
            where: Predicate | None = None
            if label is not None:
                selectivity = label.removesuffix(NEW)
                new = label.endswith(NEW)
                where = (
                    _new_filter(selectivity, rows, next(serials)) if new else _filter(selectivity)
                )
            plan = SearchPlan(source=text_branch(query), columns=["id"], limit=k, filter=where)
            return engine.search(plan).keys

        return search

    filters = [selectivity + new for selectivity in SELECTIVITIES for new in ("", NEW)]
    calls: dict[str, Callable[[str, int], list[Any]]] = {
        "engine": searcher(None),
        "raw tantivy": raw,
        **{label: searcher(label) for label in filters},
    }
    order = [(name, k) for name in ("engine", "raw tantivy") for k in LIMITS]
    order += [(label, LIMITS[0]) for label in filters]
    queries = [query for query, _ in make_queries(rounds + 1)]
    samples: dict[tuple[str, int], list[float]] = {call: [] for call in order}
    same = {k: 0 for k in LIMITS}
    print(f"{rows:,} rows: {rounds} rounds ...", file=sys.stderr)
    try:
        for round_index, query in enumerate(queries):
            shift = round_index % len(order)
            found: dict[tuple[str, int], list[Any]] = {}
            elapsed: dict[tuple[str, int], float] = {}
            for name, k in order[shift:] + order[:shift]:
                start = time.process_time()
                found[name, k] = calls[name](query, k)
                elapsed[name, k] = time.process_time() - start
            for k in LIMITS:
                same[k] += set(found["engine", k]) == set(found["raw tantivy", k])
            if round_index == 0:
                continue  # warm-up
            for call, seconds in elapsed.items():
                samples[call].append(seconds * 1e3)
    finally:
        engine.close()

    def per_round(numerator: tuple[str, int], denominator: tuple[str, int]) -> list[float]:
        return [a / b for a, b in zip(samples[numerator], samples[denominator], strict=True)]

    ratios: dict[Any, list[float]] = {
        k: per_round(("engine", k), ("raw tantivy", k)) for k in LIMITS
    }
    for label in filters:
        ratios[label] = per_round((label, LIMITS[0]), ("engine", LIMITS[0]))
    return {
        "rows": rows,
        "rounds": rounds,
        "checked": len(queries),
        "filters": filters,
        "median_ms": {f"{name} k={k}": statistics.median(v) for (name, k), v in samples.items()},
        "p25_ms": {f"{name} k={k}": _report.quantile(v, 0.25) for (name, k), v in samples.items()},
        "p75_ms": {f"{name} k={k}": _report.quantile(v, 0.75) for (name, k), v in samples.items()},
        "ratio": {k: statistics.median(v) for k, v in ratios.items()},
        "ratio_p25": {k: _report.quantile(v, 0.25) for k, v in ratios.items()},
        "ratio_p75": {k: _report.quantile(v, 0.75) for k, v in ratios.items()},
        "same": same,
    }


def report(results: list[dict[str, Any]], when: str, load: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('tantivy', 'numpy', 'pyarrow')}; load average "
        f"{load} at the start; `{_report.command()}`. CPU time per search (`time.process_time`)"
        "; ratios are medians of the per-round ratios (25th to 75th percentile).",
        "",
        "| rows | k | engine ms | raw tantivy ms | engine / raw tantivy | target | same keys |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        medians, p25, p75 = result["median_ms"], result["p25_ms"], result["p75_ms"]
        for k in LIMITS:
            cells = []
            for name in ("engine", "raw tantivy"):
                label = f"{name} k={k}"
                cells.append(f"{medians[label]:.2f} ({p25[label]:.2f} to {p75[label]:.2f})")
            ratio = result["ratio"][k]
            met = "met" if ratio <= TARGETS[k] else "not met"
            lines.append(
                f"| {result['rows']:,} | {k} | {cells[0]} | {cells[1]} | {ratio:.2f}x "
                f"({result['ratio_p25'][k]:.2f} to {result['ratio_p75'][k]:.2f}) "
                f"| <= {TARGETS[k]}x ({met}) | {result['same'][k]}/{result['checked']} |"
            )
    lines += [
        "",
        "Filtered text at k = 10 against the same search unfiltered (engine):",
        "",
        "| rows | filter | filtered ms | unfiltered ms | filtered / unfiltered | target |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for result in results:
        unfiltered = result["median_ms"][f"engine k={LIMITS[0]}"]
        for label in result["filters"]:
            kind = "new each call" if label.endswith(NEW) else "repeated"
            ratio = result["ratio"][label]
            met = "met" if ratio <= 1.0 else "not met"
            lines.append(
                f"| {result['rows']:,} | {label.removesuffix(NEW)} {kind} "
                f"| {result['median_ms'][f'{label} k={LIMITS[0]}']:.2f} | {unfiltered:.2f} "
                f"| {ratio:.2f}x ({result['ratio_p25'][label]:.2f} to "
                f"{result['ratio_p75'][label]:.2f}) | <= 1.0x ({met}) |"
            )
    lines += [
        "",
        f"- {results[0]['rounds']} rounds after one warm-up round, each search once per round "
        "in a rotating order; same keys: rounds (warm-up included) whose engine keys were the "
        "floor's, as a set.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000], help="table sizes")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds per size")
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    results = []
    for rows in options.rows:
        with tempfile.TemporaryDirectory(prefix="hdq-bench-") as directory:
            results.append(measure(rows, options.rounds, Path(directory)))
    _report.publish(report(results, when, load), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
