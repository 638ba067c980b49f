"""Lint benchmark: how long ``lint`` takes on a 200-line SQL file.

Run from the repository root::

    python benchmarks/bench_lint.py [--repeat N] [--dimensions D] [--show]
    python benchmarks/bench_lint.py --long-file STATEMENTS

The file is built from realistic queries, repeated until it is 200 lines long: the fused
BM25 + nearest-neighbour statement the compiler emits (pretty-printed, about 50 lines), the
compiler's text and nearest-neighbour shapes, and hand-written queries of the kind the linter
exists for (an unqualified table, the vector column in the output, a LIMIT over unsorted
``vector_search`` results, a ``ROW_NUMBER()`` over every row, PostgreSQL date templates). Every
query vector has ``--dimensions`` components (default 384), written on one line as an
``ARRAY[...]`` literal, as an embedding model would give it.

Reported, each as the median of ``--repeat`` runs timed with ``time.perf_counter_ns``:
``lint`` without and with an index catalog, ``fix``, and parsing alone. The first run is
reported separately (cold).

Then the cost of many CTEs: fused statements as ``to_sql`` compiles them, of 2, 256 and
:data:`~hotdata_retrieval.plan.search.MAX_FUSION_BRANCHES` (1,024) branches alternating
between BM25 and nearest-neighbour search (``--dimensions`` vectors), each branch two CTEs.
``lint`` and parsing alone are timed on each (median of ``--repeat`` runs for the 2-branch
statement, of ``--fusion-repeat`` runs for the others), and each ``lint`` is given as a ratio
to the 2-branch statement's in the same run: linear growth is a ratio near the ratio of branch
counts (512 for 1,024 branches). This script reports; it asserts nothing about time.

``--long-file STATEMENTS`` measures only a long file instead: that many one-line statements
(``SELECT id, body FROM docs WHERE id = N ORDER BY id LIMIT 5;``), ``lint`` run once on it,
its seconds and the process's peak resident set size (``ru_maxrss``) printed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

from hotdata_retrieval import (  # noqa: E402
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.lint import IndexCatalog, fix, lint  # noqa: E402
from hotdata_retrieval.lint.parsing import parse_statements  # noqa: E402
from hotdata_retrieval.plan import MAX_FUSION_BRANCHES  # noqa: E402

TARGET_LINES = 200
SEED = 20240601

CATALOG = IndexCatalog.from_dict(
    {
        "indexes": [
            {"table": "default.public.docs", "columns": ["body"], "kind": "bm25"},
            {
                "table": "default.public.docs",
                "columns": ["embedding"],
                "kind": "vector",
                "metric": "cosine",
            },
            {
                "table": "default.public.notes",
                "columns": ["body_embedding"],
                "kind": "vector",
                "metric": "cosine",
                "source_column": "body",
            },
        ],
        "tables": [{"table": "default.public.docs", "unique_keys": [["id"]]}],
    }
)


def _vector(rng: random.Random, dimensions: int) -> list[float]:
    return [round(rng.gauss(0.0, 1.0), 6) for _ in range(dimensions)]


def _array(vector: list[float]) -> str:
    return "ARRAY[" + ", ".join(map(repr, vector)) + "]"


def queries(dimensions: int) -> list[str]:
    """The building blocks of the benchmark file, one statement each."""
    rng = random.Random(SEED)
    hybrid = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="error E1234 after upgrade"),
                NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=_vector(rng, dimensions)
                ),
            ]
        ),
        limit=10,
    )
    text = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="login fails"), limit=5
    )
    nearest = SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=_vector(rng, dimensions)
        ),
        limit=5,
    )
    vector = _array(_vector(rng, dimensions))
    return [
        to_sql(hybrid, pretty=True),
        to_sql(text, pretty=True),
        to_sql(nearest, pretty=True),
        # hand-written, with mistakes
        "SELECT id, title, embedding,\n"
        f"       cosine_distance(embedding, {vector}) AS d\n"
        "FROM docs\n"
        "WHERE lang = 'en'\n"
        "ORDER BY d\n"
        "LIMIT 10",
        "SELECT *\n"
        "FROM vector_search('default.public.notes', 'body', 'refund policy', 20)\n"
        "LIMIT 3",
        "WITH ranked AS (\n"
        "  SELECT id,\n"
        f"         ROW_NUMBER() OVER (ORDER BY l2_distance(embedding, {vector})) AS r\n"
        "  FROM default.public.docs\n"
        ")\n"
        "SELECT id FROM ranked WHERE r <= 10",
        "SELECT r.\"driverId\", to_char(r.race_date, 'YYYY-MM-DD') AS day,\n"
        "       date_sub(r.race_date, 7) AS week_before\n"
        "FROM f1.public.results r\n"
        "WHERE r.points > 10\n"
        "ORDER BY r.race_date DESC",
        "SELECT b.id, b.score + n._distance AS mixed\n"
        "FROM bm25_search('default.public.docs', 'body', 'refund', 20) AS b\n"
        "JOIN vector_search('default.public.notes', 'body', 'refund', 20) AS n ON b.id = n.id\n"
        "ORDER BY mixed DESC\n"
        "LIMIT 10",
    ]


def build_file(dimensions: int) -> str:
    """Whole queries, in turn, while they fit in :data:`TARGET_LINES` lines; then padding."""
    blocks = [[*(query + ";").splitlines(), ""] for query in queries(dimensions)]
    lines: list[str] = []
    position = 0
    misses = 0
    while misses < len(blocks):
        block = blocks[position % len(blocks)]
        position += 1
        if len(lines) + len(block) <= TARGET_LINES:
            lines.extend(block)
            misses = 0
        else:
            misses += 1
    lines.extend("-- end of file" for _ in range(TARGET_LINES - len(lines)))
    return "\n".join(lines) + "\n"


FUSION_BRANCHES = (2, 256, MAX_FUSION_BRANCHES)
"""Branch counts of the fused statements timed; the first is the baseline of the ratios."""


def fused_statement(branches: int, dimensions: int) -> str:
    """A fusion of ``branches`` branches alternating BM25 and nearest-neighbour search, as
    ``to_sql`` compiles it (from five branches on: the ``fused_keys`` form)."""
    rng = random.Random(SEED + branches)
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text=f"error E{index}")
                if index % 2 == 0
                else NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=_vector(rng, dimensions)
                )
                for index in range(branches)
            ]
        ),
        limit=10,
    )
    return to_sql(plan)


def _median_ms(action: Callable[[], object], repeat: int) -> tuple[float, float]:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter_ns()
        action()
        timings.append(time.perf_counter_ns() - started)
    return timings[0] / 1e6, statistics.median(timings) / 1e6


def _long_file(statements: int) -> None:
    """Lint a file of ``statements`` one-line statements once: seconds and peak memory."""
    import resource

    sql = "".join(
        f"SELECT id, body FROM docs WHERE id = {n} ORDER BY id LIMIT 5;\n"
        for n in range(statements)
    )
    started = time.perf_counter()
    findings = lint(sql)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{statements:,} statements ({len(sql):,} characters): lint {seconds:.1f} s, "
        f"{len(findings)} findings; peak resident set {peak_mib:,.0f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="runs per measurement")
    parser.add_argument("--dimensions", type=int, default=384, help="query vector length")
    parser.add_argument(
        "--fusion-repeat", type=int, default=3, help="runs per fused-statement measurement"
    )
    parser.add_argument("--show", action="store_true", help="print the SQL file and exit")
    parser.add_argument(
        "--long-file",
        type=int,
        default=0,
        metavar="STATEMENTS",
        help="time lint once on a file of this many one-line statements, and nothing else",
    )
    options = parser.parse_args(argv)
    if options.long_file:
        _long_file(options.long_file)
        return

    sql = build_file(options.dimensions)
    if options.show:
        print(sql, end="")
        return
    statements = parse_statements(sql)

    findings = lint(sql)
    print(
        f"file: {TARGET_LINES} lines, {len(sql):,} characters, {len(statements)} statements, "
        f"{options.dimensions}-dimension vectors; {len(findings)} findings "
        f"({len(lint(sql, CATALOG))} with the catalog)"
    )
    print(
        f"python {platform.python_version()}, sqlglot {importlib.metadata.version('sqlglot')}, "
        f"{platform.machine()}; median of {options.repeat} runs"
    )
    print()
    print("| what | median (ms) | first run (ms) |")
    print("| --- | ---: | ---: |")
    for label, action in [
        ("parse only", lambda: parse_statements(sql)),
        ("lint", lambda: lint(sql)),
        ("lint with an index catalog", lambda: lint(sql, CATALOG)),
        ("fix", lambda: fix(sql)),
    ]:
        first, median = _median_ms(action, options.repeat)
        print(f"| {label} | {median:.1f} | {first:.1f} |")

    print()
    print(
        f"fused statements: branches alternating BM25 and nearest-neighbour search, "
        f"{options.dimensions}-dimension vectors; median of {options.repeat} runs (2 branches), "
        f"{options.fusion_repeat} runs (the others)"
    )
    print()
    print(
        "| branches | CTEs | characters | parse only (ms) | lint (ms) | lint ratio to 2 branches |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    baseline: float | None = None
    for branches in FUSION_BRANCHES:
        fused = fused_statement(branches, options.dimensions)
        (tree,) = (statement.tree for statement in parse_statements(fused))
        ctes = len(tree.args["with_"].expressions)
        if lint(fused):
            raise SystemExit(f"the compiled {branches}-branch fusion does not lint clean")
        repeat = options.repeat if baseline is None else options.fusion_repeat
        _, parse_ms = _median_ms(lambda fused=fused: parse_statements(fused), repeat)
        _, lint_ms = _median_ms(lambda fused=fused: lint(fused), repeat)
        baseline = baseline or lint_ms
        print(
            f"| {branches:,} | {ctes:,} | {len(fused):,} | {parse_ms:,.1f} | {lint_ms:,.1f} "
            f"| {lint_ms / baseline:,.0f} |"
        )


if __name__ == "__main__":
    main()
