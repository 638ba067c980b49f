"""Resident memory of a process that opens a vector-only table and searches it, against the
vectors' float32 size (issue "a million rows: one copy of the vectors").

Run from the repository root::

    python benchmarks/bench_open_memory.py [--rows 100000 1000000] [--runs 2]

For each size, a table of ``--rows`` standard-normal 384-d float32 vectors (seeded) and an
``id`` key is loaded once into a temporary database; then ``--runs`` fresh processes each import the
library, record their resident set size (the baseline), open the table, run the same exact
nearest-neighbour search twice, ask the Arrow memory pool to return unused memory, and report
their resident set size over the baseline (steady) and their high-water mark over it (peak),
each as a multiple of the vectors' size. Targets: steady about 1x (one copy of the vectors:
the table's column and the search matrix are the same memory), and steady and peak at most
1.5x the vectors plus 100 MiB.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import sys
import numpy as np, pyarrow as pa
from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
base = status("VmRSS")
with LocalEngine(sys.argv[1]) as engine:
    query = [1.0] * 384
    plan = SearchPlan(
        source=NearestNeighborSearch(table="vectors", column="embedding", query_vector=query),
        limit=10,
    )
    engine.search(plan)
    engine.search(plan)
    pa.default_memory_pool().release_unused()
    print(status("VmRSS") - base, status("VmHWM") - base)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=2)
    arguments = parser.parse_args()
    import numpy as np
    import pyarrow as pa

    from hotdata_retrieval.engines.local import LocalEngine

    print(
        "| rows | vectors MiB | steady MiB | steady / vectors | peak MiB | peak / vectors "
        "| target MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for rows in arguments.rows:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / "db"
            matrix = np.random.default_rng(0).standard_normal((rows, 384), dtype=np.float32)
            column = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), 384)
            table = pa.table(
                {"id": np.arange(rows), "embedding": column.cast(pa.list_(pa.float32()))}
            )
            with LocalEngine(root) as engine:
                engine.load_table("vectors", table, key_column="id")
            del matrix, column, table
            vectors = rows * 384 * 4 / 2**20
            target = 1.5 * vectors + 100
            for _ in range(arguments.runs):
                output = subprocess.run(
                    [sys.executable, "-c", _CHILD, str(root)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                steady, peak = float(output[0]), float(output[1])
                met = "met" if max(steady, peak) <= target else "not met"
                print(
                    f"| {rows:,} | {vectors:,.0f} | {steady:,.0f} | {steady / vectors:.2f}x "
                    f"| {peak:,.0f} | {peak / vectors:.2f}x | <= {target:,.0f} ({met}) |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
