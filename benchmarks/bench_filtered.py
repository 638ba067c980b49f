"""Filtered search on the local engine: what a selective filter costs against the same search
unfiltered, and filtered exact nearest neighbours against NumPy floors and peer engines.

Run from the repository root::

    python benchmarks/bench_filtered.py [--rows 100000 ...] [--rounds N] [--no-contenders] \\
        [--cpu] [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s (seeded Zipf-like texts, 384-d standard-normal float32
vectors) plus three integer columns: ``bucket``, ``id % 100``, so the filter ``bucket = 7``
keeps 1% of the rows, ``bucket10``, ``id % 10``, so ``bucket10 = 7`` keeps 10%, and
``shuffled``, a seeded permutation of the ids. Each round times, in a rotating order (one
warm-up round, dropped), the text, nearest (cosine, exact) and hybrid (RRF, the default depth
of 200) plans through :meth:`LocalEngine.search` (the native path) unfiltered, with each
repeated filter (the same every round: the engine remembers its rows), with a filter the engine
has not seen at each selectivity (``shuffled BETWEEN low AND low + kept - 1``, ``low``
different in every call, so its rows are scattered over the table and no cache holds them:
labelled ``1% new`` and ``10% new``), and at each selectivity the filtered contenders
(``--no-contenders`` leaves out all but the local plans and the passing-rows floor):

- ``NumPy, product``: one float32 matrix-vector product over every row of the row-normalised
  matrix, the rows the filter drops set to minus infinity, a partial sort: what a scan that
  masks after scoring costs;
- ``NumPy, passing rows``: the passing rows gathered from the same matrix, one product over
  them, a partial sort: the floor of a filtered exact search (both floors evaluate the filter
  on the integer column in each call, as an engine must);
- ``DuckDB``: ``SELECT id ... WHERE bucket = 7 ORDER BY array_cosine_distance(embedding,
  $vector::FLOAT[384]) LIMIT 10``, brute force over a ``FLOAT[384]`` column (raw DuckDB, as
  in ``bench_engine.py``);
- ``LanceDB``: raw LanceDB (not the library's engine), the vector search with the filter as a
  prefilter and the vector index bypassed (an exact scan: the table has no vector index), its
  full-text search (LanceDB's own BM25 index and analysis) with the same prefilter, and its
  hybrid search (both, fused by its ``RRFReranker``, k = 60, each branch fetched 100 deep and
  the first 10 kept, as the local engine's fusion).

DuckDB's and LanceDB's nearest searches also run unfiltered, for their own ``filtered /
unfiltered``.

Every round each contender's keys are compared with the local engine's same plan at the same
filter: the exact scans should return the same top 10 (as a set: float32 ties may swap
places; a difference is printed and counted); LanceDB's text and hybrid searches score BM25
with their own index and cut ties at the 10th place in their own order, so their agreement is
reported as overlap@10. Reported, per table size: median latencies (25th to 75th percentile)
and the medians of the per-round ratios ``filtered / unfiltered`` (the local plans, DuckDB's
and LanceDB's nearest searches), each nearest or hybrid contender over ``NumPy, passing
rows``, and each peer over the local engine's same plan.

Targets (issue "filtered search at the speed of its selectivity"): a filter keeping 1% makes a
search no slower than unfiltered (ratio <= 1.0) and the filtered nearest search costs within a
small factor of its own floor. This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
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
    DIMENSIONS,
    LIMIT,
    TABLE,
    hybrid_plan,
    make_queries,
    make_table,
    nearest_branch,
    text_branch,
)

from hotdata_retrieval import Between, Comparison, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan import Predicate

KEPT_BUCKET = 7
SELECTIVITIES = {"1%": ("bucket", 100), "10%": ("bucket10", 10)}
"""Each filter: the column it tests (``id % buckets``) and that column's number of buckets."""
NEW = " new"
"""The suffix of a selectivity whose filter is new in every call (:func:`_new_filter`)."""
NEW_STEP = 7919
"""How far (a prime number of ``shuffled`` values) each new filter's range moves on."""
MARK_START = "<!-- filtered-benchmark:start -->"
MARK_END = "<!-- filtered-benchmark:end -->"
CONTENDERS_START = "<!-- filtered-contenders:start -->"
CONTENDERS_END = "<!-- filtered-contenders:end -->"
PLANS = ("text", "nearest", "hybrid")
LABELS = {
    "text": "local text (BM25)",
    "nearest": "local nearest (cosine, exact)",
    "hybrid": "local hybrid (RRF)",
    "product": "NumPy, product then mask",
    "passing": "NumPy, passing rows",
    "duckdb": "DuckDB nearest (exact)",
    "lancedb nearest": "LanceDB nearest (exact)",
    "lancedb text": "LanceDB text (BM25)",
    "lancedb hybrid": "LanceDB hybrid (RRF)",
}
COMPARED = {
    "product": "nearest",
    "passing": "nearest",
    "duckdb": "nearest",
    "lancedb nearest": "nearest",
    "lancedb text": "text",
    "lancedb hybrid": "hybrid",
}
"""Each contender's counterpart among the local engine's plans (same filter)."""
DISPLAY = (
    "nearest",
    "passing",
    "product",
    "duckdb",
    "lancedb nearest",
    "text",
    "lancedb text",
    "hybrid",
    "lancedb hybrid",
)
"""The order of a selectivity's rows in the contenders' table."""
EXACT = frozenset({"product", "passing", "duckdb", "lancedb nearest"})
"""Contenders whose top 10 must be the local engine's: exact scans of the same vectors."""

Runner = Callable[[str, list[float]], list[Any]]


def _filter(selectivity: str = "1%") -> Comparison:
    column, _ = SELECTIVITIES[selectivity]
    return Comparison(column=column, operator="=", value=KEPT_BUCKET)


def _new_filter(selectivity: str, rows: int, serial: int) -> Between:
    """The ``serial``-th filter keeping ``selectivity`` of ``rows`` rows, none seen before:
    a range of the ``shuffled`` column (a permutation of the ids, so the rows are scattered),
    moved on by :data:`NEW_STEP` each time."""
    kept = rows // SELECTIVITIES[selectivity][1]
    low = (serial * NEW_STEP) % (rows - kept + 1)
    return Between(column="shuffled", low=low, high=low + kept - 1)


def _plan(
    name: str,
    query: str,
    vector: list[float],
    selectivity: str | None,
    where: Predicate | None = None,
) -> SearchPlan:
    """The local engine's ``name`` plan (one of :data:`PLANS`), filtered at ``selectivity``
    (``None``: unfiltered) or by ``where``."""
    if where is None and selectivity is not None:
        where = _filter(selectivity)
    if name == "text":
        source: Any = text_branch(query)
    elif name == "nearest":
        source = nearest_branch(vector)
    else:
        source = hybrid_plan(query, vector).source
    return SearchPlan(source=source, columns=["id"], limit=LIMIT, filter=where)


def make_filtered_table(rows: int) -> pa.Table:
    """``bench_engine.py``'s table plus the ``bucket``, ``bucket10`` and ``shuffled``
    columns."""
    table = make_table(rows)
    ids = np.arange(rows, dtype=np.int64)
    for column, buckets in SELECTIVITIES.values():
        table = table.append_column(column, pa.array(ids % buckets))
    shuffled = np.random.default_rng(rows).permutation(rows).astype(np.int64)
    return table.append_column("shuffled", pa.array(shuffled))


# -- contenders ------------------------------------------------------------------------------


def numpy_floors(matrix: np.ndarray, column: np.ndarray) -> tuple[Runner, Runner]:
    """The two NumPy floors of the filtered nearest search over ``matrix`` (row-normalised
    float32), keeping the rows where ``column`` is :data:`KEPT_BUCKET`."""

    def top(scores: np.ndarray) -> np.ndarray:
        best = np.argpartition(-scores, LIMIT)[:LIMIT]
        return best[np.argsort(-scores[best], kind="stable")]

    def product(query: str, vector: list[float]) -> list[Any]:
        query32 = np.asarray(vector, dtype=np.float32)
        scores = matrix @ (query32 / np.linalg.norm(query32))
        scores[column != KEPT_BUCKET] = -np.inf
        return top(scores).tolist()

    def passing(query: str, vector: list[float]) -> list[Any]:
        kept = np.flatnonzero(column == KEPT_BUCKET)
        query32 = np.asarray(vector, dtype=np.float32)
        scores = matrix[kept] @ (query32 / np.linalg.norm(query32))
        return kept[top(scores)].tolist()

    return product, passing


def label_of(name: str, selectivity: str | None) -> str:
    """A call's label: the contender or plan, then the filter's selectivity or ``unfiltered``."""
    return f"{name} {selectivity or 'unfiltered'}"


def duckdb_runner(duck: Any, column: str | None) -> Runner:
    """DuckDB's exact nearest search, with the filter on ``column`` (``None``: unfiltered)."""
    where = "" if column is None else f" WHERE {column} = {KEPT_BUCKET}"
    statement = (
        f"SELECT id FROM docs{where} ORDER BY array_cosine_distance("
        f"embedding, $vector::FLOAT[{DIMENSIONS}]) LIMIT {LIMIT}"
    )

    def duckdb(query: str, vector: list[float]) -> list[Any]:
        return [row[0] for row in duck.execute(statement, {"vector": vector}).fetchall()]

    return duckdb


def lancedb_runners(table: Any, column: str | None, depth: int) -> dict[str, Runner]:
    """LanceDB's searches with the filter on ``column`` as a prefilter; ``None``: its exact
    nearest search alone, unfiltered."""

    def nearest(query: str, vector: list[float]) -> list[Any]:
        search = (
            table.search(vector, vector_column_name="embedding")
            .distance_type("cosine")
            .bypass_vector_index()
        )
        if column is not None:
            search = search.where(where, prefilter=True)
        search = search.select(["id", "_distance"]).limit(LIMIT)
        return search.to_arrow().column("id").to_pylist()

    if column is None:
        return {"lancedb nearest": nearest}
    where = f"{column} = {KEPT_BUCKET}"

    def text(query: str, vector: list[float]) -> list[Any]:
        search = (
            table.search(query, query_type="fts", fts_columns="body")
            .where(where, prefilter=True)
            .select(["id", "_score"])
            .limit(LIMIT)
        )
        return search.to_arrow().column("id").to_pylist()

    def hybrid(query: str, vector: list[float]) -> list[Any]:
        search = (
            table.search(query_type="hybrid", vector_column_name="embedding", fts_columns="body")
            .vector(vector)
            .text(query)
            .distance_type("cosine")
            .bypass_vector_index()
            .where(where, prefilter=True)
            .select(["id"])
            .limit(depth)  # each branch this deep, as the local fusion's depth
        )
        return search.to_arrow().column("id").to_pylist()[:LIMIT]

    return {"lancedb nearest": nearest, "lancedb text": text, "lancedb hybrid": hybrid}


class Peers:
    """DuckDB and LanceDB holding the same table, opened in ``directory`` and closed after."""

    def __init__(self, table: pa.Table, directory: Path) -> None:
        # LanceDB 0.40 logs a deprecation warning for every hybrid search that selects columns
        # (its branches cannot select their score columns); read before lancedb is imported
        os.environ.setdefault("LANCEDB_LOG", "error")
        import duckdb
        import lancedb
        from lancedb.index import FTS

        fixed = table.set_column(
            table.schema.get_field_index("embedding"),
            "embedding",
            table.column("embedding").cast(pa.list_(pa.float32(), DIMENSIONS)),
        )
        self.duck = duckdb.connect()
        self.duck.register("arrow_docs", fixed.drop_columns(["body"]))
        self.duck.execute("CREATE TABLE docs AS SELECT * FROM arrow_docs")
        self.duck.unregister("arrow_docs")
        self.lance = lancedb.connect(directory / "lancedb")
        self.lance_table = self.lance.create_table(TABLE, fixed)
        self.lance_table.create_index("body", config=FTS())

    def runners(self, column: str | None, depth: int) -> dict[str, Runner]:
        return {
            "duckdb": duckdb_runner(self.duck, column),
            **lancedb_runners(self.lance_table, column, depth),
        }

    def close(self) -> None:
        self.duck.close()


# -- measuring -------------------------------------------------------------------------------


def measure(
    rows: int,
    rounds: int,
    directory: Path,
    *,
    contenders: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    print(f"{rows:,} rows: generating and loading ...", file=sys.stderr)
    table = make_filtered_table(rows)
    engine = LocalEngine(directory / "filtered")
    engine.load_table(TABLE, table, key_column="id", text_columns=["body"])
    vectors = np.asarray(
        table["embedding"].combine_chunks().flatten().to_numpy(), dtype=np.float32
    ).reshape(rows, -1)
    matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    del vectors
    selectivities = tuple(SELECTIVITIES)
    depth = hybrid_plan("w1", [1.0] * DIMENSIONS).depth
    peers = Peers(table, directory) if contenders else None
    # label -> (selectivity or None, the contender's or plan's name, runner)
    calls: dict[str, tuple[str | None, str, Runner]] = {}
    for selectivity in (None, *selectivities):
        for name in PLANS:
            calls[label_of(name, selectivity)] = (
                selectivity,
                name,
                lambda query, vector, selectivity=selectivity, name=name: (
                    engine.search(_plan(name, query, vector, selectivity)).keys
                ),
            )
        runners: dict[str, Runner] = {}
        if selectivity is not None:
            column_name: str | None = SELECTIVITIES[selectivity][0]
            product, passing = numpy_floors(matrix, table.column(column_name).to_numpy())
            # without the peers, the floor of the local engine's 1% ratios alone
            runners = {"product": product, "passing": passing} if peers else {"passing": passing}
        else:
            column_name = None
        if peers is not None:
            runners.update(peers.runners(column_name, depth))
        for name, runner in runners.items():
            calls[label_of(name, selectivity)] = (selectivity, name, runner)
    serials = iter(range(1 << 30))
    for selectivity in selectivities:
        for name in PLANS:
            new = selectivity + NEW
            calls[label_of(name, new)] = (
                new,
                name,
                lambda query, vector, selectivity=selectivity, name=name: (
                    engine.search(
                        _plan(
                            name,
                            query,
                            vector,
                            selectivity,
                            _new_filter(selectivity, rows, next(serials)),
                        )
                    ).keys
                ),
            )
    del table

    queries = make_queries(rounds + 1)
    labels = list(calls)
    print(f"{rows:,} rows: {rounds} rounds of {len(labels)} calls ...", file=sys.stderr)
    timings: dict[str, list[float]] = {label: [] for label in labels}
    same: dict[str, int] = {label: 0 for label in labels}
    overlap: dict[str, int] = {label: 0 for label in labels}
    try:
        for round_index, (query, vector) in enumerate(queries):
            shift = round_index % len(labels)
            keys: dict[str, list[Any]] = {}
            elapsed: dict[str, float] = {}
            for label in labels[shift:] + labels[:shift]:
                _, _, runner = calls[label]
                start = clock()
                keys[label] = runner(query, vector)
                elapsed[label] = clock() - start
            for label, (selectivity, name, _) in calls.items():
                if name in COMPARED:
                    local = keys[label_of(COMPARED[name], selectivity)]
                    found = set(keys[label])
                    same[label] += found == set(local)
                    overlap[label] += len(found & set(local))
                    if name in EXACT and found != set(local):
                        print(
                            f"  round {round_index}: {label} {keys[label]} != local {local}",
                            file=sys.stderr,
                        )
            if round_index == 0:
                continue  # warm-up
            for label, seconds in elapsed.items():
                timings[label].append(seconds * 1e3)
    finally:
        engine.close()
        if peers is not None:
            peers.close()

    def ratios(numerator: str, denominator: str) -> list[float]:
        return [a / b for a, b in zip(timings[numerator], timings[denominator], strict=True)]

    per_round: dict[str, list[float]] = {}
    for label, (selectivity, name, _) in calls.items():
        if name in COMPARED and name not in ("product", "passing"):
            local = label_of(COMPARED[name], selectivity)
            per_round[f"{label} / local"] = ratios(label, local)
        if selectivity is None:
            continue
        if label_of(name, None) in calls:
            per_round[f"{label} / unfiltered"] = ratios(label, label_of(name, None))
        floor = label_of("passing", selectivity.removesuffix(NEW))
        if name != "passing" and name not in ("text", "lancedb text") and floor in calls:
            per_round[f"{label} / floor"] = ratios(label, floor)
    return {
        "rows": rows,
        "rounds": rounds,
        "depth": depth,
        "checked": len(queries),
        "calls": {label: (selectivity, name) for label, (selectivity, name, _) in calls.items()},
        "median_ms": {label: statistics.median(values) for label, values in timings.items()},
        "p25_ms": {label: _report.quantile(values, 0.25) for label, values in timings.items()},
        "p75_ms": {label: _report.quantile(values, 0.75) for label, values in timings.items()},
        "ratios": {label: statistics.median(values) for label, values in per_round.items()},
        "same": same,
        "overlap": overlap,
    }


# -- report ----------------------------------------------------------------------------------


def report(results: list[dict[str, Any]], when: str, load: str, *, cpu: bool = False) -> str:
    """The local engine's plans filtered at 1% and 10%, by a repeated filter and by one new
    in every call, against unfiltered (the section the targets read); ``cpu``: timed in CPU
    time."""
    clock = "CPU time per search (`time.process_time`)" if cpu else "wall-clock time"
    lines = [
        f"Measured {when} on {_report.machine('numpy', 'tantivy', 'datafusion')}; load average "
        f"{load}; `{_report.command()}`; {clock}. "
        + ", ".join(f"{result['rows']:,}" for result in results)
        + f" rows, 384-d, limit {LIMIT}; repeated filters `bucket = {KEPT_BUCKET}` (1% of the "
        f"rows) and `bucket10 = {KEPT_BUCKET}` (10%), the same every round; new filters "
        "`shuffled BETWEEN low AND high` keeping as many rows, a different range in every "
        "call (rows scattered over the table, never seen before).",
    ]
    for result in results:
        medians = result["median_ms"]
        ratios = result["ratios"]
        if len(results) > 1:
            lines += ["", f"{result['rows']:,} rows:"]
        lines += [
            "",
            "| plan | filter | filtered (ms) | unfiltered (ms) | filtered / unfiltered "
            "| / NumPy passing rows |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for name in PLANS:
            for selectivity in SELECTIVITIES:
                for new in ("", NEW):
                    label = label_of(name, selectivity + new)
                    kind = "new each call" if new else "repeated"
                    lines.append(
                        f"| {name} | {selectivity} {kind} | {medians[label]:.2f} "
                        f"| {medians[f'{name} unfiltered']:.2f} "
                        f"| {ratios[f'{label} / unfiltered']:.2f}x "
                        f"| {_ratio(ratios.get(f'{label} / floor'))} |"
                    )
        lines += [
            "",
            "NumPy passing rows (evaluate the filter, gather the kept rows of the row-normalised "
            f"matrix, one product): {medians['passing 1%']:.2f} ms at 1%, "
            f"{medians['passing 10%']:.2f} ms at 10%.",
        ]
    return "\n".join(lines)


def report_contenders(
    results: list[dict[str, Any]], when: str, load: str, *, cpu: bool = False
) -> str:
    """Every contender at 1% and 10%, one table per row count (``cpu``: in CPU time)."""
    clock = "; CPU time per call (`time.process_time`)" if cpu else ""
    lines = [
        f"Measured {when} on "
        f"{_report.machine('numpy', 'tantivy', 'datafusion', 'duckdb', 'lancedb')}; load "
        f"average {load} at the start; `{_report.command()}`{clock}. 384-d, limit {LIMIT}; "
        "filters "
        f"`bucket = {KEPT_BUCKET}` (1% of the rows) and `bucket10 = {KEPT_BUCKET}` (10%).",
    ]
    for result in results:
        checked = result["checked"]
        lines += [
            "",
            f"**{result['rows']:,} rows** ({result['rounds']} rounds after one warm-up round, "
            f"every call once per round; fusion depth {result['depth']}):",
            "",
            "| filter | contender | median ms (25th to 75th percentile) | filtered / unfiltered "
            "| / NumPy passing rows | / local engine | same top 10 as local | overlap@10 |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        shown = sorted(
            result["calls"].items(),
            key=lambda item: (
                [None, *(s + new for s in SELECTIVITIES for new in ("", NEW))].index(item[1][0]),
                DISPLAY.index(item[1][1]),
            ),
        )
        for label, (selectivity, name) in shown:
            ratios = result["ratios"]
            cells = [
                selectivity or "none",
                LABELS[name],
                f"{result['median_ms'][label]:,.2f} ({result['p25_ms'][label]:,.2f} to "
                f"{result['p75_ms'][label]:,.2f})",
                *(
                    _ratio(ratios.get(f"{label} / {kind}"))
                    for kind in ("unfiltered", "floor", "local")
                ),
                f"{result['same'][label]}/{checked}" if name in COMPARED else "-",
                f"{result['overlap'][label] / (LIMIT * checked):.3f}" if name in COMPARED else "-",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "- ratios: medians of the per-round ratios; `/ NumPy passing rows`: over the floor at "
        "the same filter (text plans have no floor here); `/ local engine`: over the local "
        "engine's same plan at the same filter.",
        "- LanceDB: its searches with the filter as a prefilter (`where(..., prefilter=True)`), "
        "the nearest search with the vector index bypassed (an exact scan; the table has no "
        "vector index), the hybrid search fetching each branch as deep as the local fusion's "
        "depth and fusing with its `RRFReranker` (k = 60).",
        "- same top 10: rounds (warm-up included) in which the contender's 10 keys were the "
        "local engine's (as a set); overlap@10: the share of the local engine's top 10 the "
        "contender returned. The NumPy floors, DuckDB and LanceDB's nearest search are exact "
        "scans and should agree (a difference is printed). LanceDB's text and hybrid searches "
        "rank by its own BM25 index, and rows tied at the 10th place (common in a fusion: RRF "
        "gives rows of equal ranks in opposite branches equal scores) are cut by key on the "
        "local engine, in LanceDB's own order there: they are compared, not checked.",
    ]
    return "\n".join(lines)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000], help="table sizes (rows)")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds per size")
    parser.add_argument(
        "--contenders",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the NumPy product floor, DuckDB and LanceDB beside the local engine "
        "(default); --no-contenders times the local engine and its passing-rows floor only",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time each call in CPU time (time.process_time: every thread's, BLAS's too), "
        "not wall-clock time, for a machine whose other load would otherwise be timed",
    )
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked sections of this file"
    )
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write every median and ratio, unrounded"
    )
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    results = []
    for rows in options.rows:
        with tempfile.TemporaryDirectory(prefix="hdq-bench-") as directory:
            results.append(
                measure(
                    rows,
                    options.rounds,
                    Path(directory),
                    contenders=options.contenders,
                    clock=time.process_time if options.cpu else time.perf_counter,
                )
            )
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    _report.publish(
        report(results, when, load, cpu=options.cpu), options.write, MARK_START, MARK_END
    )
    if options.contenders:
        print()
        body = report_contenders(results, when, load, cpu=options.cpu)
        _report.publish(body, options.write, CONTENDERS_START, CONTENDERS_END)


if __name__ == "__main__":
    main()
