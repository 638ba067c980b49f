"""What a change of a document table costs on each engine: a batch of upserts, a batch of deletes.

Run from the repository root::

    python benchmarks/bench_document_writes.py [--rows 10000] [--batch 100] [--rounds 5]
        [--engines local,sqlite,...] [--write docs/benchmarks.md]

A :class:`~hotdata_retrieval.documents.DocumentStore` (text with a BM25 index, metadata, a
64-d vector) is filled with ``bench_engine.py``'s seeded synthetic bodies (``--rows`` of them,
one ``add``), then each round sends one ``add`` of ``--batch`` documents (half replacing
documents the table holds, half new) and one ``delete`` of ``--batch`` / 2 keys. The first
round is a warm-up and is dropped; reported: each engine's first fill and the median time of
an upsert batch and of a delete batch, through the store (the engine's ``upsert_rows`` and
``delete_rows`` with what keeps its text index in step: SQLite's FTS5 rows, DuckDB's
staged copy of the table swapped in with its index rebuilt, PostgreSQL's statistics, LanceDB's
index rebuild, the local engine's new version). Every round checks that a replaced document's
new words find it.

``--engines turbopuffer,hotdata`` runs those against the fake APIs of the test suite, in this
process: their figures are the client's and the fake's work, not the services', so they are
not among the defaults.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers
import bench_engine  # the same synthetic bodies

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

from hotdata_retrieval.documents import DocumentStore  # noqa: E402

ENGINES = ("local", "sqlite", "duckdb", "postgres", "lancedb")
FAKES = ("turbopuffer", "hotdata")
"""Engines over the test suite's fake APIs, measured only when ``--engines`` names them."""
DIMENSIONS = 64
MARK_START = "<!-- document-writes-benchmark:start -->"
MARK_END = "<!-- document-writes-benchmark:end -->"


@contextlib.contextmanager
def engine(name: str, directory: Path) -> Iterator[Any]:
    """The engine ``name``, empty, on its own database under ``directory``."""
    with contextlib.ExitStack() as stack:
        if name == "local":
            from hotdata_retrieval.engines.local import LocalEngine

            yield stack.enter_context(LocalEngine(directory / "local"))
        elif name == "sqlite":
            from hotdata_retrieval.engines.sqlite import SqliteEngine

            yield stack.enter_context(SqliteEngine(directory / "store.sqlite"))
        elif name == "duckdb":
            from hotdata_retrieval.engines.duckdb import DuckdbEngine

            yield stack.enter_context(DuckdbEngine(directory / "store.duckdb"))
        elif name == "postgres":
            from hotdata_retrieval.engines.postgres import PostgresEngine, throwaway_server

            url = stack.enter_context(throwaway_server())
            yield stack.enter_context(PostgresEngine(url))
        elif name == "lancedb":
            from hotdata_retrieval.engines.lancedb import LancedbEngine

            yield stack.enter_context(LancedbEngine(directory / "lance"))
        elif name == "turbopuffer":
            from tests.turbopuffer_api import fake_backed_engine

            opened = fake_backed_engine(directory / "turbopuffer")
            stack.callback(opened.close)
            yield opened
        else:
            from tests.document_engines import open_document_engine

            opened = open_document_engine("hotdata", directory, None)  # type: ignore[arg-type]
            stack.callback(opened.close)
            yield opened


def documents(rows: int, seed: int) -> tuple[list[str], list[list[float]]]:
    import numpy as np

    table = bench_engine.make_table(rows, seed=seed)
    bodies = [str(body) for body in table.column("body").to_pylist()]
    vectors = np.random.default_rng(seed).standard_normal((rows, DIMENSIONS)).astype("float32")
    return bodies, vectors.tolist()


def run(name: str, rows: int, batch: int, rounds: int) -> dict[str, float]:
    bodies, vectors = documents(rows, bench_engine.SEED)
    fresh_bodies, fresh_vectors = documents(batch * (rounds + 1), bench_engine.SEED + 1)
    keys = [f"d{i}" for i in range(rows)]
    upserts: list[float] = []
    deletes: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="hdq-bench-writes-") as scratch,
        engine(name, Path(scratch)) as opened,
    ):
        store = DocumentStore(opened, "documents")
        started = time.perf_counter()
        store.add(keys, bodies, vectors, [{"n": i} for i in range(rows)])
        fill = time.perf_counter() - started
        for round_number in range(rounds + 1):
            half = batch // 2
            replaced = [f"d{(round_number * batch + i) % rows}" for i in range(half)]
            added = [f"new{round_number}_{i}" for i in range(batch - half)]
            chosen = slice(round_number * batch, (round_number + 1) * batch)
            texts = [f"marker{round_number} {body}" for body in fresh_bodies[chosen]]
            started = time.perf_counter()
            store.add(replaced + added, texts, fresh_vectors[chosen])
            upsert = time.perf_counter() - started
            hits = store.text_search(f"marker{round_number}", k=batch)
            if {hit.document.id for hit in hits} != set(replaced + added):
                raise AssertionError(f"{name}: the replaced documents' words find {len(hits)}")
            gone = [f"d{rows - 1 - round_number * half - i}" for i in range(half)]
            started = time.perf_counter()
            store.delete(gone)
            delete = time.perf_counter() - started
            if round_number:  # the first round warms up
                upserts.append(upsert)
                deletes.append(delete)
    return {
        "fill": fill,
        "upsert": statistics.median(upserts),
        "delete": statistics.median(deletes),
    }


def report(results: dict[str, dict[str, float]], rows: int, batch: int, rounds: int) -> str:
    lines = [
        f"Document table of {rows:,} documents (64-d vectors, a BM25 index on the text); "
        f"median of {rounds} rounds after a warm-up; an upsert batch is {batch} documents "
        f"(half replaced, half new), a delete batch {batch // 2}.",
        "",
        "| engine | first fill | upsert batch | delete batch |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, figures in results.items():
        lines.append(
            f"| {name} | {figures['fill']:.2f} s | {figures['upsert'] * 1000:.0f} ms | "
            f"{figures['delete'] * 1000:.0f} ms |"
        )
    if set(results) & set(FAKES):
        lines += [
            "",
            "turbopuffer and hotdata: the client and the test suite's fake API in one process "
            "(not the services' cost).",
        ]
    lines += [
        "",
        f"Machine: {_report.machine('duckdb', 'lancedb', 'sqlite-vec', 'psycopg')}; "
        f"load average {_report.load_average()}. Command: `{_report.command()}`.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    results = {}
    for name in options.engines.split(","):
        results[name] = run(name, options.rows, options.batch, options.rounds)
        print(f"{name}: {results[name]}", file=sys.stderr)
    body = report(results, options.rows, options.batch, options.rounds)
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
