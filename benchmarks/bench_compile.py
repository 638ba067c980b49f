"""Compile benchmark: a hybrid (BM25 + nearest-neighbour, RRF) plan against an f-string floor,
and how compile time grows with pathological plans.

Run from the repository root::

    python benchmarks/bench_compile.py [--repeat N] [--rounds N] [--only floor|pathological]
        [--write docs/benchmarks.md]

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

Pathological plans (its own section of the report): the cold ``to_sql`` time (template cache
cleared before each call, so the plan is compiled and rendered in full) of plans that grow in
one direction — a filter of alternating AND/OR groups 1 to ``MAX_FILTER_DEPTH`` levels deep, a
fusion of 1 to 1,000 branches, an OR of 1 to 1,000 comparisons — each set run side by side,
interleaved round by round with a rotating order. Each size's cost per unit (predicate,
branch, operand) is given as a ratio to the smallest size's: flat means linear.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import gc
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
from hotdata_retrieval.plan import (  # noqa: E402
    MAX_FILTER_DEPTH,
    MAX_FUSION_BRANCHES,
    And,
    Comparison,
    Or,
    Predicate,
)
from hotdata_retrieval.plan.search import DEFAULT_DEPTH  # noqa: E402

DIMENSIONS = (384, 1536)
TARGET_RATIO = 1.5
LIMIT = 10
SEED = 20240601
VECTOR_POOL = 8
WARMUP = 200
MARK_START = "<!-- compile-benchmark:start -->"
MARK_END = "<!-- compile-benchmark:end -->"
PATHOLOGICAL_START = "<!-- compile-pathological:start -->"
PATHOLOGICAL_END = "<!-- compile-pathological:end -->"
NESTING_LEVELS = tuple(sorted({1, 4, 8, MAX_FILTER_DEPTH}))
BRANCH_COUNTS = (1, 10, 100, 1000)
OR_WIDTHS = (1, 10, 100, 1000)
HYBRID_BRANCH_COUNTS = (2, 8, 64)


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
    depth = DEFAULT_DEPTH
    text = query_text.replace("'", "''")
    array = ", ".join(map(repr, vector))
    return f"""WITH text_hits AS (
  SELECT
    id,
    score
  FROM bm25_search('default.public.docs', 'body', '{text}', {depth})
  ORDER BY
    score DESC,
    id ASC
  LIMIT {depth}
), text_ranked AS (
  SELECT
    id,
    score,
    RANK() OVER (ORDER BY score DESC) AS branch_rank
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
    RANK() OVER (ORDER BY _distance ASC) AS branch_rank
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
    samples = [*make_queries(3), "it's", "'' x ''", 'say "hi"', "a\\b", "x\ny", "é ü 中 --;"]
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


# -- pathological plans ---------------------------------------------------------------------


def comparison(index: int) -> Comparison:
    return Comparison(column=f"c{index}", operator="=", value=index)


def alternating_filter(levels: int) -> Predicate:
    """``((c0 = 0 AND c1 = 1) OR c2 = 2) AND ...``: ``levels`` nested groups, ``levels + 1``
    comparisons (the issue's shape)."""
    predicate: Predicate = comparison(0)
    for level in range(1, levels + 1):
        connective = And if level % 2 else Or
        predicate = connective(operands=[predicate, comparison(level)])
    return predicate


def text_branch(index: int = 0) -> Bm25Search:
    return Bm25Search(table="docs", column="body", query_text=f"query {index}")


def nesting_plan(levels: int) -> SearchPlan:
    """A BM25 search filtered ``levels`` deep."""
    return SearchPlan(source=text_branch(), filter=alternating_filter(levels))


def fusion_plan(count: int) -> SearchPlan:
    """``count`` BM25 branches fused (1: a single-branch search)."""
    if count == 1:
        return SearchPlan(source=text_branch())
    return SearchPlan(
        source=ReciprocalRankFusion(branches=[text_branch(index) for index in range(count)])
    )


def hybrid_pairs_plan(count: int) -> SearchPlan:
    """``count`` branches fused, alternately BM25 and 384-d nearest-neighbour (each with its
    own query vector), to see whether rendering many vectors in one statement stays linear."""
    vectors = make_vectors(384, count)
    branches: list[Bm25Search | NearestNeighborSearch] = [
        text_branch(index)
        if index % 2
        else NearestNeighborSearch(table="docs", column="embedding", query_vector=vectors[index])
        for index in range(count)
    ]
    return SearchPlan(source=ReciprocalRankFusion(branches=branches))


def wide_plan(width: int) -> SearchPlan:
    """A BM25 search filtered by an OR of ``width`` comparisons."""
    if width == 1:
        return SearchPlan(source=text_branch(), filter=comparison(0))
    return SearchPlan(
        source=text_branch(), filter=Or(operands=[comparison(index) for index in range(width)])
    )


def cold_side_by_side(
    plans: Sequence[SearchPlan], rounds: int, *, collector: bool = True, cold: bool = True
) -> list[list[int]]:
    """Nanoseconds of a cold ``to_sql`` of each plan (``cold`` false: warm, its template
    cached), ``rounds`` times, interleaved: each round runs every plan once, starting one
    further along each round. Garbage is collected (untimed) before each call; with
    ``collector`` false, Python's cyclic garbage collector is otherwise paused for the whole
    run."""
    clock = time.perf_counter_ns
    samples: list[list[int]] = [[] for _ in plans]
    for plan in plans:  # warm up sqlglot's and the library's own caches
        clear_templates()
        to_sql(plan)
    gc.collect()
    if not collector:
        gc.disable()
    try:
        for round_index in range(rounds):
            for offset in range(len(plans)):
                position = (round_index + offset) % len(plans)
                if cold:
                    clear_templates()
                else:
                    to_sql(plans[position])  # untimed: its template is cached
                gc.collect()  # untimed: no call pays for collecting another's garbage
                start = clock()
                to_sql(plans[position])
                samples[position].append(clock() - start)
    finally:
        gc.enable()
    clear_templates()
    return samples


def growth(
    name: str,
    unit: tuple[str, str],
    sizes: Sequence[int],
    plan_of: Callable[[int], SearchPlan],
    units_of: Callable[[int], int],
    rounds: int,
    *,
    cold: bool = True,
) -> dict[str, Any]:
    """Cold (or, ``cold`` false, warm) compile time of ``plan_of(size)`` for each size, its
    cost per unit, and that cost as a ratio to the smallest size's; measured twice, the
    second time with the garbage collector paused."""
    plans = [plan_of(size) for size in sizes]
    samples = cold_side_by_side(plans, rounds, cold=cold)
    paused = [
        statistics.median(times)
        for times in cold_side_by_side(plans, rounds, collector=False, cold=cold)
    ]
    rows = []
    for size, plan, times, paused_ns in zip(sizes, plans, samples, paused):
        units = units_of(size)
        median = statistics.median(times) / 1000
        rows.append(
            {
                "size": size,
                "units": units,
                "median_us": median,
                "p25_us": _report.quantile(times, 0.25) / 1000,
                "p75_us": _report.quantile(times, 0.75) / 1000,
                "per_unit_us": median / units,
                "paused_per_unit_us": paused_ns / 1000 / units,
                "bytes": len(to_sql(plan).encode("utf-8")),
            }
        )
    for row in rows:
        row["ratio"] = row["per_unit_us"] / rows[0]["per_unit_us"]
        row["paused_ratio"] = row["paused_per_unit_us"] / rows[0]["paused_per_unit_us"]
    return {"name": name, "unit": unit, "rows": rows, "rounds": rounds}


def pathological(rounds: int) -> list[dict[str, Any]]:
    """The three growth series: nesting depth, fusion branches, OR width."""
    print(f"pathological plans: {rounds} rounds per series, twice ...", file=sys.stderr)
    return [
        growth(
            "Alternating AND/OR nesting",
            ("predicate", "predicates"),
            NESTING_LEVELS,
            nesting_plan,
            lambda levels: levels + 1,
            rounds,
        ),
        growth(
            "Fused BM25 branches",
            ("branch", "branches"),
            BRANCH_COUNTS,
            fusion_plan,
            lambda count: count,
            rounds,
        ),
        growth(
            "Fused hybrid pairs, warm (384-d)",
            ("branch", "branches"),
            HYBRID_BRANCH_COUNTS,
            hybrid_pairs_plan,
            lambda count: count,
            rounds,
            cold=False,
        ),
        growth(
            "OR of comparisons",
            ("operand", "operands"),
            OR_WIDTHS,
            wide_plan,
            lambda width: width,
            rounds,
        ),
    ]


def pathological_report(series: list[dict[str, Any]], when: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('sqlglot')}; load average "
        f"{_report.load_average()} at the start.",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        "Cold `to_sql` (template cache cleared before each call; the series marked warm "
        "keeps its template cached, so what it measures is filling the template, the query "
        "vectors' text included): medians of "
        f"{series[0]['rounds']} rounds per size, the sizes of a series interleaved round by "
        "round. Per unit: the time divided by the predicates, branches or operands; ratio: "
        "that over the smallest size's. "
        "Paused: the same series run again with Python's garbage collector paused.",
    ]
    for entry in series:
        unit, units = entry["unit"]
        lines += [
            "",
            f"**{entry['name']}**",
            "",
            f"| size | {units} | median ms (25th to 75th percentile) | µs per {unit} | ratio "
            f"| ratio, paused | SQL bytes per {unit} |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in entry["rows"]:
            lines.append(
                f"| {row['size']:,} | {row['units']:,} | {row['median_us'] / 1000:,.2f} "
                f"({row['p25_us'] / 1000:,.2f} to {row['p75_us'] / 1000:,.2f}) "
                f"| {row['per_unit_us']:,.1f} | {row['ratio']:.2f}x "
                f"| {row['paused_ratio']:.2f}x | {row['bytes'] / row['units']:,.0f} |"
            )
    lines += [
        "",
        f"- Nesting stops at `MAX_FILTER_DEPTH` = {MAX_FILTER_DEPTH}: a deeper filter is refused "
        f"when built. Fusions stop at `MAX_FUSION_BRANCHES` = {MAX_FUSION_BRANCHES:,}.",
        "- Size 1 is a plan with one comparison and no connective, or a single-branch search: "
        "the rest of the statement is shared by fewer units, so its cost per unit is the "
        "highest when growth is linear.",
    ]
    return "\n".join(lines)


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
        "--rounds",
        type=int,
        default=30,
        help="rounds per pathological-plan series; each size runs once per round (default 30)",
    )
    parser.add_argument(
        "--only",
        choices=("floor", "pathological"),
        help="run one part: the floor comparison or the pathological plans (default both)",
    )
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked sections of this file"
    )
    options = parser.parse_args(argv)
    if options.repeat < 2:
        parser.error("--repeat must be at least 2")
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if options.only != "pathological":
        for dimension in DIMENSIONS:
            check_identical(dimension)
        print("floor and hotdata_retrieval give byte-identical SQL", file=sys.stderr)
        results = []
        contexts = []
        for dimension in DIMENSIONS:
            print(f"{dimension}-d: {options.repeat:,} rounds side by side ...", file=sys.stderr)
            results.append(side_by_side(dimension, options.repeat))
            print(f"{dimension}-d: context ...", file=sys.stderr)
            contexts.append(context(dimension, options.repeat))
        body = report(results, contexts, when)
        _report.publish(body, options.write, MARK_START, MARK_END)
    if options.only != "floor":
        body = pathological_report(pathological(options.rounds), when)
        _report.publish(body, options.write, PATHOLOGICAL_START, PATHOLOGICAL_END)


if __name__ == "__main__":
    main()
