"""Compile benchmark: a hybrid (BM25 + nearest-neighbour, RRF) plan against an f-string floor.

Run from the repository root::

    python benchmarks/bench_compile.py [--repeat N] [--write docs/benchmarks.md]

Two contenders, measured side by side in one run, interleaved round by round (their order
alternates each round, so machine noise lands on both alike), each call timed with
``time.perf_counter_ns``:

- ``hotdata_retrieval``: build the plan objects from plain Python values (a fresh query
  string each round, the query vector as a list of floats), then ``to_sql(plan)``. Every
  round has the same statement *shape*, so the library's template cache is warm: that is the
  steady state being measured.
- ``floor``: a plain f-string that writes the very same SQL text (same CTEs, same pretty
  layout, floats written with ``repr``, single quotes doubled). Both are checked to give
  byte-identical SQL before any timing, so the floor is honest.

Reported: the median of each, and the median of the per-round ratios. For context, also the
first (cold) ``to_sql`` call with the template cache cleared, and sqlglot parsing and
rendering the same statement with the vector held as one literal node per component.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import sqlglot  # noqa: E402

from hotdata_retrieval import (  # noqa: E402
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.compile import render  # noqa: E402

DIMENSIONS = (384, 1536)
TARGET_RATIO = 1.5
LIMIT = 10
SEED = 20240601
VECTOR_POOL = 8
WARMUP = 200
MARK_START = "<!-- compile-benchmark:start -->"
MARK_END = "<!-- compile-benchmark:end -->"


# -- the contenders ------------------------------------------------------------------------


def hotdata_sql(query_text: str, vector: list[float], limit: int = LIMIT) -> str:
    """Contender A: build the hybrid plan from plain values, compile and render it."""
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=query_text),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=vector),
            ]
        ),
        limit=limit,
    )
    return to_sql(plan)


def floor_sql(query_text: str, vector: list[float], limit: int = LIMIT) -> str:
    """Contender B, the floor: the same statement written by hand with one f-string."""
    depth = max(4 * limit, 20)
    text = query_text.replace("'", "''")
    array = ", ".join(map(repr, vector))
    return f"""WITH text_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'body', '{text}', {depth})
  ORDER BY
    score DESC
  LIMIT {depth}
), text_ranked AS (
  SELECT
    id,
    score,
    ROW_NUMBER() OVER (ORDER BY score DESC, id ASC) AS branch_rank
  FROM text_hits
), nearest_hits AS (
  SELECT
    id,
    cosine_distance(embedding, ARRAY[{array}]) AS _distance
  FROM "default".public.docs
  ORDER BY
    _distance ASC
  LIMIT {depth}
), nearest_ranked AS (
  SELECT
    id,
    _distance,
    ROW_NUMBER() OVER (ORDER BY _distance ASC, id ASC) AS branch_rank
  FROM nearest_hits
  WHERE
    _distance IS NOT NULL
), fused AS (
  SELECT
    COALESCE(text_ranked.id, nearest_ranked.id) AS id,
    COALESCE(1.0 / (60 + text_ranked.branch_rank), 0) + \
COALESCE(1.0 / (60 + nearest_ranked.branch_rank), 0) AS score
  FROM text_ranked
  FULL OUTER JOIN nearest_ranked
    ON text_ranked.id = nearest_ranked.id
)
SELECT
  base.id,
  base.body,
  fused.score
FROM fused
JOIN "default".public.docs AS base
  ON base.id = fused.id
ORDER BY
  fused.score DESC,
  fused.id ASC
LIMIT {limit}"""


# -- inputs --------------------------------------------------------------------------------


def make_vectors(dimension: int, count: int = VECTOR_POOL) -> list[list[float]]:
    """``count`` query vectors of ``dimension`` components from a seeded Gaussian."""
    rng = random.Random(SEED + dimension)
    return [[rng.gauss(0.0, 1.0) for _ in range(dimension)] for _ in range(count)]


def make_queries(count: int) -> list[str]:
    """``count`` distinct query strings, each with a quote to escape."""
    words = ("timeout", "refund", "login", "latency", "invoice", "crash", "upgrade", "quota")
    return [
        f"error E{index:06d} can't {words[index % len(words)]} after update"
        for index in range(count)
    ]


def clear_templates() -> None:
    """Empty the statement-template cache, so the next ``to_sql`` compiles from scratch."""
    with render._templates_lock:
        render._templates.clear()


def check_identical(dimension: int) -> None:
    """Both contenders must give byte-identical SQL, or the floor would not be a floor."""
    vector = make_vectors(dimension, 1)[0]
    samples = [*make_queries(3), "it's", "''", 'say "hi"', "a\\b", "x\ny", "é ü 中 --;"]
    for limit in (LIMIT, 3, 25):
        for query in samples:
            expected = hotdata_sql(query, vector, limit)
            actual = floor_sql(query, vector, limit)
            if actual != expected:
                raise SystemExit(
                    f"floor and hotdata_retrieval differ at {dimension}-d, limit {limit}, "
                    f"query {query!r}:\n--- hotdata_retrieval\n{expected}\n--- floor\n{actual}"
                )


# -- timing --------------------------------------------------------------------------------


def side_by_side(dimension: int, rounds: int) -> dict[str, Any]:
    """Time both contenders ``rounds`` times each, alternating which goes first."""
    vectors = make_vectors(dimension)
    queries = make_queries(rounds + WARMUP)
    clock = time.perf_counter_ns
    for index in range(WARMUP):
        vector = vectors[index % VECTOR_POOL]
        hotdata_sql(queries[index], vector)
        floor_sql(queries[index], vector)
    hotdata_ns: list[int] = []
    floor_ns: list[int] = []
    for index in range(rounds):
        query = queries[WARMUP + index]
        vector = vectors[index % VECTOR_POOL]
        if index % 2:
            start = clock()
            hotdata_sql(query, vector)
            middle = clock()
            floor_sql(query, vector)
            end = clock()
            hotdata_ns.append(middle - start)
            floor_ns.append(end - middle)
        else:
            start = clock()
            floor_sql(query, vector)
            middle = clock()
            hotdata_sql(query, vector)
            end = clock()
            floor_ns.append(middle - start)
            hotdata_ns.append(end - middle)
    ratios = [a / b for a, b in zip(hotdata_ns, floor_ns, strict=True)]
    first, second = ratios[: rounds // 2], ratios[rounds // 2 :]
    return {
        "dimension": dimension,
        "rounds": rounds,
        "floor_us": statistics.median(floor_ns) / 1000,
        "hotdata_us": statistics.median(hotdata_ns) / 1000,
        "ratio": statistics.median(ratios),
        "ratio_p25": _report.quantile(ratios, 0.25),
        "ratio_p75": _report.quantile(ratios, 0.75),
        "ratio_halves": (statistics.median(first), statistics.median(second)),
    }


def median_us(call: Callable[[], object], times: int, setup: Callable[[], object]) -> float:
    """Median time of ``call()`` in µs over ``times`` calls, ``setup()`` untimed before each."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    for _ in range(times):
        setup()
        start = clock()
        call()
        samples.append(clock() - start)
    return statistics.median(samples) / 1000


def context(dimension: int, rounds: int) -> dict[str, Any]:
    """to_sql alone (warm and cold), and sqlglot with one literal node per vector component."""
    vector = make_vectors(dimension, 1)[0]
    query = make_queries(1)[0]
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=query),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=vector),
            ]
        ),
        limit=LIMIT,
    )
    sql = to_sql(plan)

    def nothing() -> None:
        return None

    warm = median_us(lambda: to_sql(plan), max(rounds // 4, 100), nothing)
    cold_rounds = max(rounds // 20, 50)
    cold = median_us(lambda: to_sql(plan), cold_rounds, clear_templates)
    clear_templates()
    to_sql(plan)  # leave the cache warm again

    slow_rounds = max(rounds // 200, 10)
    tree = sqlglot.parse_one(sql, read="postgres")
    literals = sum(1 for _ in tree.find_all(sqlglot.exp.Literal))
    parse = median_us(lambda: sqlglot.parse_one(sql, read="postgres"), slow_rounds, nothing)
    generate = median_us(lambda: tree.sql(dialect="postgres"), slow_rounds, nothing)
    return {
        "dimension": dimension,
        "warm_us": warm,
        "cold_us": cold,
        "cold_rounds": cold_rounds,
        "literals": literals,
        "parse_us": parse,
        "render_us": generate,
        "slow_rounds": slow_rounds,
    }


# -- report --------------------------------------------------------------------------------


def report(results: list[dict[str, Any]], contexts: list[dict[str, Any]], when: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('sqlglot')}.",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        "| dimension | floor median µs | hotdata_retrieval median µs | ratio | target |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        verdict = "met" if row["ratio"] <= TARGET_RATIO else "not met"
        lines.append(
            f"| {row['dimension']} | {row['floor_us']:,.1f} | {row['hotdata_us']:,.1f} "
            f"| {row['ratio']:.2f}x | <= {TARGET_RATIO}x ({verdict}) |"
        )
    lines += ["", "- ratio: median of the per-round ratios, hotdata_retrieval / floor."]
    for row in results:
        first, second = row["ratio_halves"]
        lines.append(
            f"- {row['dimension']}-d: {row['rounds']:,} rounds, each contender once per round; "
            f"per-round ratio 25th to 75th percentile {row['ratio_p25']:.2f} to "
            f"{row['ratio_p75']:.2f}; median ratio of the first and second half of the rounds "
            f"{first:.2f} and {second:.2f}."
        )
    lines += [
        "",
        "For context, the same statement with the plan built once, outside the timing:",
        "",
        "| dimension | `to_sql` warm µs | `to_sql` cold µs "
        "| sqlglot parse, one node per component, µs | sqlglot render of that tree µs |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in contexts:
        lines.append(
            f"| {row['dimension']} | {row['warm_us']:,.1f} | {row['cold_us']:,.1f} "
            f"| {row['parse_us']:,.0f} | {row['render_us']:,.0f} |"
        )
    cold = contexts[0]["cold_rounds"]
    slow = contexts[0]["slow_rounds"]
    first, *rest = contexts
    literals = f"{first['literals']:,} literal nodes in all at {first['dimension']}-d" + "".join(
        f", {row['literals']:,} at {row['dimension']}-d" for row in rest
    )
    lines += [
        "",
        f"- cold: the template cache emptied before each call, so the plan is compiled to a "
        f"sqlglot tree and rendered in full (median of {cold} calls).",
        f'- parse: `sqlglot.parse_one(sql, read="postgres")`, with every vector component a '
        f"literal node ({literals}); render: that tree's "
        f'`.sql(dialect="postgres")` (median of {slow} calls each).',
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--repeat",
        type=int,
        default=4000,
        help="rounds per dimension; each contender runs once per round (default 4000)",
    )
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    options = parser.parse_args(argv)
    if options.repeat < 2:
        parser.error("--repeat must be at least 2")

    for dimension in DIMENSIONS:
        check_identical(dimension)
    print("floor and hotdata_retrieval give byte-identical SQL", file=sys.stderr)

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = []
    contexts = []
    for dimension in DIMENSIONS:
        print(f"{dimension}-d: {options.repeat:,} rounds side by side ...", file=sys.stderr)
        results.append(side_by_side(dimension, options.repeat))
        print(f"{dimension}-d: context ...", file=sys.stderr)
        contexts.append(context(dimension, options.repeat))

    body = report(results, contexts, when)
    print(body)
    if options.write is not None:
        _report.write_section(options.write, body, MARK_START, MARK_END)
        print(f"wrote {options.write}", file=sys.stderr)


if __name__ == "__main__":
    main()
