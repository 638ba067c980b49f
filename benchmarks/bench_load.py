"""Loading and holding a table on the local engine: ``load_table`` against its raw floor, and
the resident memory of a process that opens the table and searches it.

Run from the repository root::

    python benchmarks/bench_load.py [--rows 20000 100000] [--rounds N] [--write docs/benchmarks.md]

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
opening and searching <= 1.5x the vectors' float32 size plus 100 MiB. This script reports; it
asserts nothing about time.
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

_MEMORY_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[2])
from bench_engine import hybrid_plan, make_queries, nearest_branch, text_branch, rss_mb
from hotdata_retrieval import SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
queries = make_queries(5)
baseline = rss_mb()
engine = LocalEngine(sys.argv[1])
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    results = []
    for rows in options.rows:
        print(f"{rows:,} rows ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="hdq-bench-load-") as directory:
            results.append(measure(rows, options.rounds, Path(directory)))
    body = report(results, when, load)
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
