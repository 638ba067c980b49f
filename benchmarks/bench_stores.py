"""Every engine on the same data: text, nearest-neighbour and hybrid search latency side by side.

Run from the repository root::

    python benchmarks/bench_stores.py [--rows 10000] [--rounds N] [--depths 100,200,400]
        [--engines sqlite postgres ...] [--write docs/benchmarks.md] [--marker NAME]

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

The hybrid (RRF of the two branches) runs at each fusion depth of ``--depths`` (candidates each
branch ranks). The default is 100, the depth the ratios are taken against (the depth this
script timed before), and the library's ``DEFAULT_DEPTH`` (200), the depth a plan that names
none gets. Each round runs every (engine, search) pair once -- text, nearest, and the hybrid at
each depth -- with the same query (3 tokens drawn from the same distribution, a fresh query
vector) for every engine; ``limit`` 10. The engines' order and each engine's order of searches
are rotated each round. The first round is a warm-up and is dropped. Reported, per engine: the
median latency of each pair through ``engine.search(plan)`` (compile, run, typed hits); the
median (and 25th to 75th percentile) of the per-round ratios of the hybrid at each depth to the
hybrid at the first depth given, and to the slower of the text and nearest searches of the same
round (the speed goal's measure: at most 1.3x, ``bench_engine.TARGET_RATIO``, for the default
depth); and each engine's load time. Every engine's hybrid keys at every depth are checked
against the reference fusion of its own two branches (each ranked to that depth), each round,
after the round's timed searches.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import re
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
    DEFAULT_DEPTH,
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)

ENGINES = ("local", "sqlite", "duckdb", "postgres", "lancedb")
BRANCHES = ("text", "nearest")
LIMIT = 10
BASELINE_DEPTH = 100
DEFAULT_DEPTHS = tuple(dict.fromkeys((BASELINE_DEPTH, DEFAULT_DEPTH)))
MAX_DEPTH = 10_000
MARKER = "stores-benchmark"  # the 10,000-row section of docs/benchmarks.md


def parse_marker(text: str) -> str:
    """``--marker``: the name of the marked section ``--write`` rewrites
    (``<!-- NAME:start -->`` to ``<!-- NAME:end -->``): lower-case letters, digits and hyphens.

    Raises:
        argparse.ArgumentTypeError: naming the bad value.
    """
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", text):
        raise argparse.ArgumentTypeError(
            f"marker {text!r} is not lower-case letters, digits and single hyphens"
        )
    return text


def hybrid_kind(depth: int) -> str:
    """The name of the hybrid search at fusion ``depth`` (candidates per branch)."""
    return f"hybrid@{depth}"


def parse_depths(text: str) -> tuple[int, ...]:
    """``--depths``: comma-separated fusion depths, each an integer from ``LIMIT`` to
    ``MAX_DEPTH``, none repeated; the first is the one the ratios are taken against.

    Raises:
        argparse.ArgumentTypeError: naming the bad value.
    """
    depths: list[int] = []
    for part in text.split(","):
        try:
            depth = int(part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"depth {part.strip()!r} is not an integer") from None
        if not LIMIT <= depth <= MAX_DEPTH:
            raise argparse.ArgumentTypeError(
                f"depth {depth} is outside {LIMIT} (the page's limit) to {MAX_DEPTH:,}"
            )
        if depth in depths:
            raise argparse.ArgumentTypeError(f"depth {depth} is given twice")
        depths.append(depth)
    return tuple(depths)


def plans(query: str, vector: list[float], depths: Sequence[int]) -> dict[str, SearchPlan]:
    """The text and nearest searches (``limit`` 10) and the hybrid at each of ``depths``."""
    text = Bm25Search(table="docs", column="body", query_text=query)
    nearest = NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
    searches = {
        "text": SearchPlan(source=text, limit=LIMIT),
        "nearest": SearchPlan(source=nearest, limit=LIMIT),
    }
    for depth in depths:
        searches[hybrid_kind(depth)] = SearchPlan(
            source=ReciprocalRankFusion(branches=[text, nearest], depth=depth), limit=LIMIT
        )
    return searches


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
    """The engine's hybrid keys equal the reference fusion of its own branches, each ranked to
    the fusion's depth."""
    fusion = plan.fusion
    assert fusion is not None and fusion.depth is not None
    lists, ranks = [], []
    for branch in fusion.branches:
        result = engine.search(SearchPlan(source=branch, limit=fusion.depth))
        pairs = [(hit.key, next(iter(hit.branches.values())).raw_score) for hit in result]
        branch_keys, branch_ranks = rank_branch(pairs, higher_is_better=branch.higher_is_better)
        lists.append(branch_keys)
        ranks.append(branch_ranks)
    expected = [hit.key for hit in reference_fusion(fusion, lists, ranks=ranks, limit=LIMIT)]
    if keys != expected:
        raise AssertionError(f"hybrid keys {keys} differ from the reference fusion {expected}")


def rotated(names: list[str], kinds: list[str], round_number: int) -> list[tuple[str, str]]:
    """Round ``round_number``'s order of the (engine, search) pairs: the engines' order and
    each engine's order of searches both rotated by the round, so that over the rounds every
    search runs as often first as last, and every engine likewise."""
    engine_shift = round_number % len(names)
    kind_shift = round_number % len(kinds)
    return [
        (name, kind)
        for name in names[engine_shift:] + names[:engine_shift]
        for kind in kinds[kind_shift:] + kinds[:kind_shift]
    ]


def run(
    rows: int, rounds: int, names: Sequence[str], depths: Sequence[int]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, float], int]:
    """Each engine's timed rounds (seconds per search kind, one entry per round after the
    warm-up, in round order), its load time in seconds, and the hybrid checks passed."""
    table = bench_engine.make_table(rows)
    queries = bench_engine.make_queries(rounds)
    kinds = [*BRANCHES, *(hybrid_kind(depth) for depth in depths)]
    timings: dict[str, dict[str, list[float]]] = {}
    loads: dict[str, float] = {}
    checks = 0
    with (
        tempfile.TemporaryDirectory(prefix="hdq-bench-stores-") as scratch,
        engines(Path(scratch), names) as opened,
    ):
        for name, engine in opened.items():
            started = time.perf_counter()
            engine.load_table("docs", table, key_column="id", text_columns=["body"])
            loads[name] = time.perf_counter() - started
            print(f"loaded {name} in {loads[name]:.1f} s", file=sys.stderr)
        for round_number, (query, vector) in enumerate(queries):
            searches = plans(query, vector, depths)
            hybrids: list[tuple[str, str, list[Any]]] = []
            for name, kind in rotated(list(opened), kinds, round_number):
                engine = opened[name]
                started = time.perf_counter()
                result = engine.search(searches[kind])
                elapsed = time.perf_counter() - started
                if round_number:
                    timings.setdefault(name, {}).setdefault(kind, []).append(elapsed)
                if kind not in BRANCHES:
                    hybrids.append((name, kind, result.keys))
            for name, kind, keys in hybrids:  # after the round's timings, which they would warm
                check_hybrid(opened[name], searches[kind], keys)
                checks += 1
            print(f"round {round_number + 1}/{rounds} done", file=sys.stderr)
    return timings, loads, checks


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> tuple[float, ...]:
    """The median, 25th and 75th percentile of the per-round ratios."""
    values = [top / bottom for top, bottom in zip(numerators, denominators, strict=True)]
    return (
        statistics.median(values),
        _report.quantile(values, 0.25),
        _report.quantile(values, 0.75),
    )


def render(
    rows: int,
    rounds: int,
    depths: Sequence[int],
    timings: dict[str, dict[str, list[float]]],
    loads: dict[str, float],
    checks: int,
    *,
    heading: bool = True,
) -> str:
    """The run's report: the machine, the command, the latency and ratio tables; under a
    ``### Latest run`` heading if ``heading`` (the 10,000-row section's own block)."""
    names = list(loads)
    baseline = depths[0]

    def depth_label(depth: int) -> str:
        return f"depth {depth}" + (" (default)" if depth == DEFAULT_DEPTH else "")

    def cells(values: dict[str, tuple[float, ...]]) -> str:
        return " | ".join(
            f"{values[name][0]:.2f}x ({values[name][1]:.2f} to {values[name][2]:.2f})"
            for name in names
        )

    lines = ["### Latest run", ""] if heading else []
    lines += [
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
    for kind in BRANCHES:
        row = [f"{1000 * statistics.median(timings[name][kind]):.1f}" for name in names]
        lines.append(f"| {kind} | " + " | ".join(row) + " |")
    for depth in depths:
        kind = hybrid_kind(depth)
        row = [f"{1000 * statistics.median(timings[name][kind]):.1f}" for name in names]
        lines.append(f"| hybrid, {depth_label(depth)} | " + " | ".join(row) + " |")
    row = [f"{loads[name]:.1f} s" for name in names]
    lines.append("| load (rows, full-text index, catalog) | " + " | ".join(row) + " |")
    lines += [
        "",
        "| median per-round ratio (25th to 75th percentile) | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    for depth in depths[1:]:
        values = {
            name: ratios(timings[name][hybrid_kind(depth)], timings[name][hybrid_kind(baseline)])
            for name in names
        }
        lines.append(f"| hybrid {depth_label(depth)} / depth {baseline} | {cells(values)} |")
    verdicts: list[str] = []
    for depth in depths:
        values = {}
        for name in names:
            slower = [max(pair) for pair in zip(*(timings[name][kind] for kind in BRANCHES))]
            values[name] = ratios(timings[name][hybrid_kind(depth)], slower)
        lines.append(f"| hybrid {depth_label(depth)} / slower branch | {cells(values)} |")
        if depth == DEFAULT_DEPTH:
            verdicts = [
                "met" if values[name][0] <= bench_engine.TARGET_RATIO else "not met"
                for name in names
            ]
    if verdicts:
        lines.append(
            f"| target at depth {DEFAULT_DEPTH}: <= {bench_engine.TARGET_RATIO}x its slower "
            "branch | " + " | ".join(verdicts) + " |"
        )
    lines += [
        "",
        "- slower branch: the slower of the text and the nearest search (`limit` "
        f"{LIMIT}) of the same engine in the same round.",
        f"- every hybrid, at every depth, returned the keys of the reference fusion of the "
        f"engine's own two branches ranked to that depth ({checks} checks, warm-up included).",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument(
        "--depths",
        type=parse_depths,
        default=DEFAULT_DEPTHS,
        help="comma-separated fusion depths of the hybrid, timed side by side; ratios are "
        f"taken against the first (default: {','.join(map(str, DEFAULT_DEPTHS))})",
    )
    parser.add_argument("--write", type=Path, help="rewrite this file's marked section")
    parser.add_argument(
        "--marker",
        type=parse_marker,
        default=MARKER,
        help="the marked section --write rewrites, <!-- NAME:start --> to <!-- NAME:end --> "
        f"(default: {MARKER}, the 10,000-row run, under a heading; another name, no heading)",
    )
    options = parser.parse_args(argv)
    if options.rounds < 2:
        parser.error(f"--rounds {options.rounds}: at least 2 (the first is a warm-up)")
    timings, loads, checks = run(options.rows, options.rounds, options.engines, options.depths)
    body = render(
        options.rows,
        options.rounds,
        options.depths,
        timings,
        loads,
        checks,
        heading=options.marker == MARKER,
    )
    _report.publish(
        body, options.write, f"<!-- {options.marker}:start -->", f"<!-- {options.marker}:end -->"
    )


if __name__ == "__main__":
    main()
