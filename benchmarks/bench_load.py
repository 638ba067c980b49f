"""Loading and holding a table on the local engine: ``load_table`` against its raw floor, the
resident memory of a process that opens the table and searches it, and a small ``hdq load``
into a database that holds a large table against the same load into an empty one.

Run from the repository root::

    python benchmarks/bench_load.py [--rows 20000 100000] [--rounds N] \
        [--large-rows 1250000] [--runs N] [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s (seeded Zipf-like texts, 384-d standard-normal float32
vectors). Each round times, in alternating order, :meth:`LocalEngine.load_table` (key check,
vector check, Parquet write, BM25 index, catalog commit with its fsyncs) into a fresh directory
and its floor: the same texts indexed by tantivy directly (one writer thread per core, its
default tokenizer, a rowid fast field) plus ``pyarrow.parquet.write_table`` of the same table.
Reported: the median of the per-round ratios ``load_table / floor``, and rows per second.

Memory: a fresh process imports the library, records its resident set size (the baseline),
opens the loaded table and runs text, nearest and hybrid searches; reported is its resident
set size over the baseline against the vectors' float32 size.

Targets (issue "filtered search at the speed of its selectivity, one copy of the vectors,
loads at the floor"): ``load_table`` <= 1.5x the floor at 100,000 rows; resident memory after
opening and searching <= 1.5x the vectors' float32 size plus 100 MiB.

Writing beside a large table: a database holding ``--large-rows`` rows of the same table (BM25
on ``body``; 1,250,000 rows is 2.1 GB on disk) and an empty one each take ``--small-rows`` rows
(100) as table ``small`` by ``hdq load --replace --embedder hashing``, a fresh process each
time, the two databases in alternating order, ``--runs`` times after one warm-up each (the
first load creates ``small``; every timed one replaces it). Reported: each command's median
wall time and peak resident set size (``getrusage`` in a small parent process), and the
median of the per-run ratios ``into the large database / into the empty one``. Target (issue
"no agent input or hostile file can take down, outlast or fill a store"): about 1x, a write
reads only the tables it changes. Before that change a load read every table of the
database first.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _report
import pyarrow.parquet as pq
import tantivy
from bench_engine import DIMENSIONS, TABLE, make_table

MARK_START = "<!-- load-benchmark:start -->"
MARK_END = "<!-- load-benchmark:end -->"
LARGE_START = "<!-- load-beside-large:start -->"
LARGE_END = "<!-- load-beside-large:end -->"

_MEMORY_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[2])
from bench_engine import hybrid_plan, make_queries, nearest_branch, text_branch, rss_mb
from hotdata_retrieval import SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
queries = make_queries(5)
baseline = rss_mb()
engine = LocalEngine(sys.argv[1])
engine.indexes("docs")  # a table is opened on first use
opened = rss_mb()
for query, vector in queries:
    engine.search(SearchPlan(source=text_branch(query)))
    engine.search(SearchPlan(source=nearest_branch(vector)))
    engine.search(hybrid_plan(query, vector))
print(json.dumps({"baseline": baseline, "opened": opened, "searched": rss_mb()}))
"""


def _floor(data: Any, directory: Path) -> None:
    """Raw tantivy (one writer thread per core) plus ``pq.write_table``: what any load of
    these rows costs at least."""
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("rowid", stored=True, fast=True, indexed=False)
    builder.add_text_field("text", stored=False)
    (directory / "index").mkdir()
    index = tantivy.Index(builder.build(), path=str(directory / "index"))
    writer = index.writer(heap_size=128 * 1024 * 1024, num_threads=os.cpu_count() or 1)
    for rowid, text in enumerate(data.column("body").to_pylist()):
        document = tantivy.Document()
        document.add_unsigned("rowid", rowid)
        document.add_text("text", text)
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    pq.write_table(data, directory / "data.parquet")


def measure(rows: int, rounds: int, directory: Path) -> dict[str, Any]:
    from hotdata_retrieval.engines.local import LocalEngine

    data = make_table(rows)
    loads: list[float] = []
    floors: list[float] = []
    ratios: list[float] = []
    for round_index in range(rounds + 1):
        elapsed: dict[str, float] = {}
        order = ("load", "floor") if round_index % 2 else ("floor", "load")
        for name in order:
            target = directory / f"{name}-{round_index}"
            target.mkdir()
            start = time.perf_counter()
            if name == "load":
                with LocalEngine(target / "db") as engine:
                    engine.load_table(TABLE, data, key_column="id", text_columns=["body"])
            else:
                _floor(data, target)
            elapsed[name] = time.perf_counter() - start
            if name == "load" and round_index == rounds:
                continue  # the last loaded database is kept for the memory probe
            shutil.rmtree(target)
        if round_index == 0:
            continue  # warm-up
        loads.append(elapsed["load"])
        floors.append(elapsed["floor"])
        ratios.append(elapsed["load"] / elapsed["floor"])
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEMORY_PROBE,
            str(directory / f"load-{rounds}" / "db"),
            str(Path(__file__).resolve().parent),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    memory = json.loads(probe.stdout.strip().splitlines()[-1])
    return {
        "rows": rows,
        "load_s": statistics.median(loads),
        "floor_s": statistics.median(floors),
        "ratio": statistics.median(ratios),
        "vectors_mb": rows * DIMENSIONS * 4 / 2**20,
        "opened_mb": memory["opened"] - memory["baseline"],
        "searched_mb": memory["searched"] - memory["baseline"],
    }


def report(results: list[dict[str, Any]], when: str, load: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('tantivy', 'pyarrow', 'numpy')}; load average "
        f"{load}; `{_report.command()}`. {DIMENSIONS}-d float32 vectors, BM25 on `body`.",
        "",
        "| rows | `load_table` s | floor s | `load_table` / floor | rows/s | vectors MiB "
        "| resident after opening MiB | after searching MiB | target MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        target = 1.5 * row["vectors_mb"] + 100
        lines.append(
            f"| {row['rows']:,} | {row['load_s']:.2f} | {row['floor_s']:.2f} | "
            f"{row['ratio']:.2f}x | {row['rows'] / row['load_s']:,.0f} | "
            f"{row['vectors_mb']:,.0f} | {row['opened_mb']:,.0f} | {row['searched_mb']:,.0f} | "
            f"{target:,.0f} |"
        )
    lines += [
        "",
        "Resident memory is the searching process's resident set size over its baseline "
        "after importing the library; the target is 1.5x the vectors' float32 size plus "
        "100 MiB.",
    ]
    return "\n".join(lines)


_TIMED_COMMAND = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_, stderr = process.communicate()
elapsed = time.perf_counter() - start
if process.returncode:
    sys.exit(stderr.decode())
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the one child, reaped
print(json.dumps({"seconds": elapsed, "peak_kb": usage.ru_maxrss}))
"""
"""Runs a command and reports its wall time and peak resident set size. A process of its
own, small: a child's peak counts the memory of the process it was started from (Linux keeps
the larger of the two at ``exec``), and this script's holds the large table it built."""


def _timed_load(source: Path, database: Path) -> tuple[float, float]:
    """One ``hdq load`` of ``source`` into ``database`` as a fresh process: its wall seconds
    and its peak resident set size in MiB."""
    command = [sys.executable, "-m", "hotdata_retrieval", "load", str(source)]
    command += ["--database", str(database), "--table", "small", "--replace"]
    command += ["--embedder", "hashing"]
    probe = subprocess.run(  # from the root, ``-m`` runs the checked-out tree
        [sys.executable, "-c", _TIMED_COMMAND, *command],
        capture_output=True,
        text=True,
        cwd=_report.ROOT,
    )
    if probe.returncode:
        raise RuntimeError(f"hdq load failed: {probe.stderr}")
    measured = json.loads(probe.stdout)
    return measured["seconds"], measured["peak_kb"] / 1024  # kilobytes on Linux


def measure_beside_large(
    large_rows: int, small_rows: int, runs: int, directory: Path
) -> dict[str, Any]:
    """A small ``hdq load`` into a database holding a large table and into an empty one."""
    from hotdata_retrieval.engines.local import LocalEngine

    large = directory / "large"
    start = time.perf_counter()
    with LocalEngine(large) as engine:
        engine.load_table(TABLE, make_table(large_rows), key_column="id", text_columns=["body"])
    built = time.perf_counter() - start
    if hasattr(os, "sync"):
        os.sync()  # the large table's 2 GB written back before the timing, not during it
    size = sum(path.stat().st_size for path in large.rglob("*") if path.is_file())
    source = directory / "small.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for key in range(small_rows):
            handle.write(json.dumps({"id": key, "body": f"small document {key} red fox"}) + "\n")
    databases = {"large": large, "empty": directory / "empty"}
    seconds: dict[str, list[float]] = {name: [] for name in databases}
    peaks: dict[str, list[float]] = {name: [] for name in databases}
    ratios: list[float] = []
    for run in range(runs + 1):
        order = ("large", "empty") if run % 2 else ("empty", "large")
        elapsed = {}
        for name in order:
            elapsed[name], peak = _timed_load(source, databases[name])
            if run:  # the first run of each is a warm-up (it creates the table)
                seconds[name].append(elapsed[name])
                peaks[name].append(peak)
        if run:
            ratios.append(elapsed["large"] / elapsed["empty"])
    return {
        "large_rows": large_rows,
        "small_rows": small_rows,
        "runs": runs,
        "large_gb": size / 1e9,
        "build_s": built,
        "seconds": {name: statistics.median(values) for name, values in seconds.items()},
        "peak_mb": {name: statistics.median(values) for name, values in peaks.items()},
        "ratio": statistics.median(ratios),
        "ratio_range": (_report.quantile(ratios, 0.25), _report.quantile(ratios, 0.75)),
    }


def report_beside_large(result: dict[str, Any], when: str, load: str) -> str:
    low, high = result["ratio_range"]
    seconds, peaks = result["seconds"], result["peak_mb"]
    return "\n".join(
        [
            f"Measured {when} on {_report.machine('pyarrow', 'tantivy')}; load average {load}; "
            f"`{_report.command()}`. The large table: {result['large_rows']:,} rows "
            f"({result['large_gb']:.1f} GB on disk, {DIMENSIONS}-d float32 vectors, BM25 on "
            f"`body`; built in {result['build_s']:.0f} s). {result['runs']} timed runs of "
            "each after one warm-up, in alternating order.",
            "",
            f"| `hdq load` of {result['small_rows']} rows into | median s | median peak RSS MiB |",
            "|---|---:|---:|",
            f"| an empty database | {seconds['empty']:.2f} | {peaks['empty']:,.0f} |",
            f"| the database holding the large table | {seconds['large']:.2f} | "
            f"{peaks['large']:,.0f} |",
            "",
            f"Into the large database / into the empty one: {result['ratio']:.2f}x (25th to "
            f"75th percentile of the per-run ratios {low:.2f}x to {high:.2f}x); target about 1x.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=int, nargs="*", default=[20_000, 100_000], help="none: skip load_table"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--large-rows",
        type=int,
        default=1_250_000,
        help="rows of the large table a small load is written beside (0: skip)",
    )
    parser.add_argument("--small-rows", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5, help="timed small loads into each")
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    if options.rounds < 1 or options.runs < 1:
        parser.error("--rounds and --runs must be at least 1")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    results = []
    for rows in options.rows:
        print(f"{rows:,} rows ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="hdq-bench-load-") as directory:
            results.append(measure(rows, options.rounds, Path(directory)))
    if results:
        _report.publish(report(results, when, load), options.write, MARK_START, MARK_END)
    if options.large_rows:
        print(f"{options.small_rows} rows beside {options.large_rows:,} ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="hdq-bench-beside-") as directory:
            result = measure_beside_large(
                options.large_rows, options.small_rows, options.runs, Path(directory)
            )
        body = report_beside_large(result, when, load)
        _report.publish(body, options.write, LARGE_START, LARGE_END)


if __name__ == "__main__":
    main()
