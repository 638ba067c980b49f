"""Peak memory of loading a table of vectors into the SQL stores (SQLite, DuckDB, PostgreSQL).

Run from the repository root::

    python benchmarks/bench_store_load.py [--rows 100000 300000] \
        [--engines sqlite duckdb postgres] [--source .] [--batch-rows N] \
        [--words 6] [--label TEXT] [--write docs/benchmarks.md]

The table: ``id`` (int64 key), ``body`` (``--words`` words a row drawn from eight, 6 by
default, BM25-indexed, one row in 50 NULL) and
``embedding`` (384-d standard-normal float32 vectors, seeded; one row in 50 NULL). Each
load runs in a fresh Python process (the library imported from ``--source``, so a checkout
of an earlier commit can be measured side by side), which reads the table whole from an
Arrow IPC file this script wrote (so nothing its construction freed is in the process),
hands anything freed back to the system (glibc's ``malloc_trim``), resets the process's
peak to its present size (``/proc/self/clear_refs``, 5), records its resident set size
(``VmRSS`` from ``/proc/self/status``: the baseline, the table held), calls ``load_table``
into a new database and records its peak resident set size since the reset (``VmHWM``): the
load's own peak, not the table's construction's. Reported per engine and row count: the
peak, the growth over the baseline (what the load itself held), and the vectors' float32
size beside them. PostgreSQL runs on a throwaway ``pgserver`` server started by that process;
only the client process is measured (the server is another process).

Target (issue "a million rows"): a load holds memory that grows with its batch
(:data:`~hotdata_retrieval.engines.checks.LOAD_BATCH_ROWS` rows), not with the table, so the
growth over the baseline stays about flat from 100,000 to 300,000 rows.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DIMENSIONS = 384
ENGINES = ("sqlite", "duckdb", "postgres")

_CHILD = r"""
import contextlib, ctypes, gc, json, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, sys.argv[4])  # the library of --source, before any installed one
import hotdata_retrieval
from hotdata_retrieval.engines import checks

assert Path(hotdata_retrieval.__file__).resolve().is_relative_to(Path(sys.argv[4]).resolve())
if int(sys.argv[5]):
    checks.LOAD_BATCH_ROWS = int(sys.argv[5])

import pyarrow as pa

rows, engine_name, table_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with pa.OSFile(table_file) as handle:
    data = pa.ipc.open_file(handle).read_all()


def status_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field}")


def settled_baseline_kib():
    # The resident set once what building the table freed is handed back to the system
    # (glibc's malloc_trim) and the peak is reset to it (clear_refs 5): the peak read after
    # the load is then the load's own, not the table's construction's.
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    return status_kib("VmRSS")


with tempfile.TemporaryDirectory() as directory:
    if engine_name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        def opened(stack):
            return SqliteEngine(Path(directory) / "store.sqlite")
    elif engine_name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        def opened(stack):
            return DuckdbEngine(Path(directory) / "store.duckdb")
    else:
        from hotdata_retrieval.engines.postgres import PostgresEngine, throwaway_server

        def opened(stack):
            return PostgresEngine(stack.enter_context(throwaway_server()))
    with contextlib.ExitStack() as stack:
        engine = stack.enter_context(opened(stack))
        baseline = settled_baseline_kib()
        started = time.perf_counter()
        engine.load_table("docs", data, key_column="id", text_columns=["body"])
        seconds = time.perf_counter() - started
        peak = status_kib("VmHWM")
        stored = engine.sql("SELECT count(*) AS n FROM docs").column(0)[0].as_py()
print(json.dumps(
    {"baseline_kib": baseline, "peak_kib": peak, "stored": stored, "seconds": seconds}
))
"""


def write_table(path: Path, rows: int, words: int = 6) -> None:
    """Write the benchmark's table of ``rows`` rows (``words`` words a text) to ``path`` as
    an Arrow IPC file, which each measured process reads whole: its baseline then holds the
    table and nothing its construction left behind."""
    import numpy as np
    import pyarrow as pa

    generator = np.random.default_rng(7)
    vectors = generator.standard_normal((rows, DIMENSIONS), dtype=np.float32)
    missing = np.arange(rows) % 50 == 49
    embedding = pa.ListArray.from_arrays(
        pa.array(np.arange(0, (rows + 1) * DIMENSIONS, DIMENSIONS, dtype=np.int32)),
        pa.array(vectors.reshape(-1)),
        mask=pa.array(missing),
    )
    vocabulary = np.array(["disk", "full", "error", "retry", "cache", "index", "query", "shard"])
    picked = vocabulary[generator.integers(0, len(vocabulary), size=(rows, words))]
    body = pa.array([None if gone else " ".join(row) for row, gone in zip(picked, missing)])
    data = pa.table(
        {"id": pa.array(np.arange(rows, dtype=np.int64)), "body": body, "embedding": embedding}
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)


def measure(
    engine: str, rows: int, source: Path, table_file: Path, batch_rows: int = 0
) -> dict[str, Any]:
    """One load of ``table_file`` (``write_table``'s, ``rows`` rows) in a fresh process: its
    baseline and peak resident set size, in KiB (``batch_rows``: the load's batch, 0 for the
    library's own).

    Raises:
        RuntimeError: the child failed (its standard error attached).
    """
    arguments = [str(rows), engine, str(table_file), str(source.resolve()), str(batch_rows)]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *arguments],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{engine} at {rows} rows failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["stored"] != rows:
        raise RuntimeError(f"{engine} stored {result['stored']} rows of {rows}")
    return {"engine": engine, "rows": rows, "batch_rows": batch_rows, **result}


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.0f}"


def report(results: Sequence[dict[str, Any]], label: str, when: str, load: str) -> str:
    """A Markdown table of ``results``."""
    batch = (
        f"{results[0]['batch_rows']:,} rows"
        if results and results[0]["batch_rows"]
        else ("the library's LOAD_BATCH_ROWS")
    )
    lines = [
        f"Peak memory of a store load, {label} ({when}; machine: {os.cpu_count()} cores, "
        f"load average {load}; batch: {batch}; "
        f"{results[0]['words'] if results else 6} words a text):",
        "",
        "| engine | rows | vectors (float32, MiB) | baseline (MiB) | peak (MiB) | "
        "peak - baseline (MiB) | load (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        vectors = result["rows"] * DIMENSIONS * 4 / 1024
        lines.append(
            f"| {result['engine']} | {result['rows']:,} | {_mib(vectors)} | "
            f"{_mib(result['baseline_kib'])} | {_mib(result['peak_kib'])} | "
            f"{_mib(result['peak_kib'] - result['baseline_kib'])} | {result['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument(
        "--source", type=Path, default=Path.cwd(), help="the checkout whose library is loaded"
    )
    parser.add_argument("--label", default="this checkout")
    parser.add_argument(
        "--batch-rows", type=int, default=0, help="set LOAD_BATCH_ROWS (0: the library's own)"
    )
    parser.add_argument("--words", type=int, default=6, help="words in each row's text")
    parser.add_argument("--write", type=Path, default=None, help="append the table to this file")
    arguments = parser.parse_args(argv)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for rows in arguments.rows:
            table_file = Path(directory) / f"table-{rows}.arrow"
            write_table(table_file, rows, arguments.words)
            for engine in arguments.engines:
                result = measure(engine, rows, arguments.source, table_file, arguments.batch_rows)
                results.append({**result, "words": arguments.words})
                print(json.dumps(results[-1]), flush=True)
            table_file.unlink()
    text = report(results, arguments.label, when, load)
    print(text)
    if arguments.write is not None:
        with arguments.write.open("a", encoding="utf-8") as handle:
            handle.write("\n" + text)


if __name__ == "__main__":
    main()
