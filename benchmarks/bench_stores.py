"""Every engine on the same data: text, nearest-neighbour and hybrid search latency side by side.

Run from the repository root::

    python benchmarks/bench_stores.py [--rows 10000] [--rounds N] [--write docs/benchmarks.md]

The table is ``bench_engine.py``'s seeded synthetic one (``id``; ``body`` of about 30
Zipf-distributed tokens; a 384-d standard-normal float32 ``embedding``), loaded with each
engine's ``load_table`` (a full-text index on ``body``; no vector index: every nearest search
is an exact scan) into:

- ``local``: the embedded DataFusion + tantivy engine;
- ``sqlite``: SQLite 3.50 (sqlean.py) + FTS5 + sqlite-vec, float32 BLOB vectors;
- ``duckdb``: DuckDB + its fts extension, ``FLOAT[384]`` vectors, one thread (the engine's
  default, for a stable BM25 tie order);
- ``postgres``: a throwaway PostgreSQL 16 + pgvector 0.6.2 server (the pgserver wheel's
  binaries) on loopback, ``vector(384)``, BM25 computed in SQL;
- ``lancedb``: LanceDB, each branch through its own search and the fusion on the client.

Each round runs every (engine, search) pair once, in a rotating order, with the same query (3
tokens drawn from the same distribution, a fresh query vector) for every engine; ``limit``
10, a fusion's depth 100. The first round is a warm-up and is dropped. Reported: the median
latency of each pair through ``engine.search(plan)`` (compile, run, typed hits), and each
engine's load time. Every engine's hybrid keys are checked against the reference fusion of its
own two branches, each round.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers
import bench_engine  # the same synthetic table and queries

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

from hotdata_retrieval.fusion import rank_branch, reference_fusion  # noqa: E402
from hotdata_retrieval.plan.search import (  # noqa: E402
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)

ENGINES = ("local", "sqlite", "duckdb", "postgres", "lancedb")
KINDS = ("text", "nearest", "hybrid")
LIMIT = 10
DEPTH = 100
MARK_START = "<!-- stores-benchmark:start -->"
MARK_END = "<!-- stores-benchmark:end -->"


def plans(query: str, vector: list[float]) -> dict[str, SearchPlan]:
    text = Bm25Search(table="docs", column="body", query_text=query)
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
    return {
        "text": SearchPlan(source=text, limit=LIMIT),
        "nearest": SearchPlan(source=nearest, limit=LIMIT),
        "hybrid": SearchPlan(
            source=ReciprocalRankFusion(branches=[text, nearest], depth=DEPTH), limit=LIMIT
        ),
    }


@contextlib.contextmanager
def engines(directory: Path, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Each engine, empty, on its own database under ``directory``."""
    with contextlib.ExitStack() as stack:
        opened: dict[str, Any] = {}
        for name in names:
            if name == "local":
                from hotdata_retrieval.engines.local import LocalEngine

                opened[name] = stack.enter_context(LocalEngine(directory / "local"))
            elif name == "sqlite":
                from hotdata_retrieval.engines.sqlite import SqliteEngine

                opened[name] = stack.enter_context(SqliteEngine(directory / "store.sqlite"))
            elif name == "duckdb":
                from hotdata_retrieval.engines.duckdb import DuckdbEngine

                opened[name] = stack.enter_context(DuckdbEngine(directory / "store.duckdb"))
            elif name == "postgres":
                from hotdata_retrieval.engines.postgres import PostgresEngine, throwaway_server

                url = stack.enter_context(throwaway_server())
                opened[name] = stack.enter_context(PostgresEngine(url))
            elif name == "lancedb":
                from hotdata_retrieval.engines.lancedb import LancedbEngine

                opened[name] = stack.enter_context(LancedbEngine(directory / "lance"))
        yield opened


def check_hybrid(engine: Any, plan: SearchPlan, keys: list[Any]) -> None:
    """The engine's hybrid keys equal the reference fusion of its own branches."""
    fusion = plan.fusion
    assert fusion is not None
    lists, ranks = [], []
    for branch in fusion.branches:
        result = engine.search(SearchPlan(source=branch, limit=DEPTH))
        pairs = [(hit.key, next(iter(hit.branches.values())).raw_score) for hit in result]
        branch_keys, branch_ranks = rank_branch(pairs, higher_is_better=branch.higher_is_better)
        lists.append(branch_keys)
        ranks.append(branch_ranks)
    expected = [hit.key for hit in reference_fusion(fusion, lists, ranks=ranks, limit=LIMIT)]
    if keys != expected:
        raise AssertionError(f"hybrid keys {keys} differ from the reference fusion {expected}")


def run(rows: int, rounds: int, names: Sequence[str]) -> tuple[dict[str, float], dict[str, Any]]:
    table = bench_engine.make_table(rows)
    queries = bench_engine.make_queries(rounds)
    timings: dict[tuple[str, str], list[float]] = {}
    loads: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hdq-bench-stores-") as scratch,
        engines(Path(scratch), names) as opened,
    ):
        for name, engine in opened.items():
            started = time.perf_counter()
            engine.load_table("docs", table, key_column="id", text_columns=["body"])
            loads[name] = time.perf_counter() - started
            print(f"loaded {name} in {loads[name]:.1f} s", file=sys.stderr)
        pairs = [(name, kind) for name in opened for kind in KINDS]
        for round_number, (query, vector) in enumerate(queries):
            searches = plans(query, vector)
            shift = round_number % len(pairs)
            for name, kind in pairs[shift:] + pairs[:shift]:
                engine = opened[name]
                started = time.perf_counter()
                result = engine.search(searches[kind])
                elapsed = time.perf_counter() - started
                if round_number:
                    timings.setdefault((name, kind), []).append(elapsed)
                if kind == "hybrid":
                    check_hybrid(engine, searches[kind], result.keys)
    medians = {
        f"{name}/{kind}": statistics.median(values) for (name, kind), values in timings.items()
    }
    return medians, loads


def render(rows: int, rounds: int, medians: dict[str, float], loads: dict[str, float]) -> str:
    names = list(loads)
    lines = [
        "### Latest run",
        "",
        f"{rows:,} rows, {rounds - 1} timed rounds (one warm-up dropped), {datetime.date.today()}, "
        f"load average {_report.load_average()}.",
        "",
        "Machine: "
        + _report.machine(
            "datafusion", "sqlean.py", "sqlite-vec", "duckdb", "psycopg", "pgserver", "lancedb"
        )
        + ".",
        "",
        f"Command: `{_report.command()}`",
        "",
        "| median latency (ms) | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    for kind in KINDS:
        cells = [f"{1000 * medians[f'{name}/{kind}']:.1f}" for name in names]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    cells = [f"{loads[name]:.1f} s" for name in names]
    lines.append("| load (rows, full-text index, catalog) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--write", type=Path, help="rewrite this file's marked section")
    options = parser.parse_args(argv)
    medians, loads = run(options.rows, options.rounds, options.engines)
    body = render(options.rows, options.rounds, medians, loads)
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
