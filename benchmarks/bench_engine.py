"""Local engine benchmark: text, nearest-neighbour and hybrid search on synthetic tables.

Run from the repository root::

    python benchmarks/bench_engine.py [--sizes 10000 100000] [--rounds N] \
        [--write docs/benchmarks.md]

For each table size (10,000 and 100,000 rows by default) it builds a seeded synthetic table:

- ``id``: int64, 0 .. n-1;
- ``body``: about 30 tokens per row (uniform 20 to 40) drawn from ``w0`` .. ``w4999`` with
  Zipf-like frequencies (the token of rank r has probability proportional to 1 / (r + 1));
- ``embedding``: 384 float32 components per row, standard normal;

loads it with :meth:`LocalEngine.load_table` (BM25 index on ``body``; no embedding model: the
vectors are given and the queries are random vectors too), and times the contenders below, each
answering the same query (3 tokens drawn from the same Zipf-like distribution, plus a fresh
standard-normal query vector) with ``limit`` 10:

- ``text``: a :class:`Bm25Search` plan;
- ``nearest``: a :class:`NearestNeighborSearch` plan, cosine, an exact scan;
- ``hybrid``: the reciprocal rank fusion of both;
- ``statement``: the same fusion's compiled SQL statement run on DataFusion
  (:meth:`LocalEngine.sql` of :func:`to_sql`, nearest branch through the fast-path rewrite),
  its keys checked against ``hybrid``'s every round;
- ``two queries + client RRF``: the two branches run as separate single-branch plans with
  ``limit`` = the fusion's depth (100), then fused on the client with
  :func:`hotdata_retrieval.reciprocal_rank_fusion`, each branch ranked by its raw score, then
  key, as the SQL ranks it. Its keys are checked against ``hybrid``'s every round;
- ``ann``: the nearest plan on a copy of the table with an HNSW index (up to
  ``--ann-max-rows``); ``floor``: NumPy alone; ``duckdb``: a peer engine's exact scan;
- ``tantivy``: raw tantivy's top k at the fusion's depth on an index of the same texts written
  by tantivy directly (``_baselines.raw_tantivy_search``, the floor ``bench_text.py`` measures
  text search against): with ``floor``, the floor of the hybrid search's two branches.

:meth:`LocalEngine.search` answers the text, nearest and hybrid plans natively
(``engines/local/native.py``: the compiled statement's rows without planning it). Every
contender but ``statement``, ``floor`` and ``duckdb`` goes through :meth:`LocalEngine.search`
(compile, run, typed hits), in rounds that interleave the contenders with a rotating order,
so machine noise lands on all alike; the first round is a warm-up and is dropped. Reported:
the median latency of each, and the median of the per-round ratios ``hybrid / floor``
(``floor`` + ``tantivy``: the raw work of its branches, target 1.1x), ``hybrid / slower single
branch``, ``hybrid / two queries + client RRF`` and ``hybrid / statement``. Setup: data
generation, :meth:`LocalEngine.load_table` (Parquet write plus the tantivy index build, which
is also timed on its own), the first (cold) hybrid search, and the process's peak resident set
size (``resource.getrusage``; a high-water mark for the whole process, so the largest size's
figure includes the smaller ones').

Measured elsewhere, on the same synthetic table: filtered search at 1% and 10% selectivity —
the local engine's plans against unfiltered, and filtered exact nearest neighbours against
the NumPy floors (product then mask, passing rows), DuckDB and LanceDB, in one run of
interleaved rounds — in ``bench_filtered.py``, which builds the table with its ``bucket``
columns; ``load_table``'s rows per second against its raw floor, and the resident memory of
a process after opening the table and after searching it, in ``bench_load.py``; the HNSW
build's CPU time against raw usearch in ``bench_ann.py`` (on real embeddings).

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers
from _baselines import raw_tantivy_index, raw_tantivy_search  # the raw tantivy floor

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from hotdata_retrieval import rank_branch, reciprocal_rank_fusion, to_sql  # noqa: E402
from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402
from hotdata_retrieval.engines.local.bm25 import build_bm25_index  # noqa: E402
from hotdata_retrieval.engines.results import executed_plan  # noqa: E402
from hotdata_retrieval.plan.search import (  # noqa: E402
    DEFAULT_RANK_CONSTANT,
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)

SIZES = (10_000, 100_000)
DIMENSIONS = 384
VOCABULARY = 5_000
TOKENS = (20, 40)
QUERY_TOKENS = 3
LIMIT = 10
SEED = 20240601
TARGET_RATIO = 1.3
FLOOR_TARGET = 2.0
HYBRID_FLOOR_TARGET = 1.1
TABLE = "docs"
ANN_TABLE = "docs_hnsw"
CONTENDERS = (
    "text",
    "nearest",
    "hybrid",
    "statement",
    "client",
    "ann",
    "floor",
    "tantivy",
    "duckdb",
)
LABELS = {
    "text": "text (BM25)",
    "nearest": "nearest (cosine, exact)",
    "hybrid": "hybrid (search)",
    "statement": "hybrid statement on DataFusion",
    "client": "two queries + client RRF",
    "ann": "nearest (cosine, HNSW)",
    "floor": "NumPy float32 floor",
    "tantivy": "raw tantivy at the fusion depth",
    "duckdb": "DuckDB exact",
}
MARK_START = "<!-- engine-benchmark:start -->"
MARK_END = "<!-- engine-benchmark:end -->"


# -- data ----------------------------------------------------------------------------------


def zipf_probabilities() -> np.ndarray:
    weights = 1.0 / np.arange(1, VOCABULARY + 1, dtype=np.float64)
    return weights / weights.sum()


def make_table(rows: int, seed: int = SEED) -> pa.Table:
    """The seeded synthetic table: ``id``, ``body`` and a 384-d ``embedding``."""
    rng = np.random.default_rng(seed + rows)
    lengths = rng.integers(TOKENS[0], TOKENS[1] + 1, size=rows)
    tokens = rng.choice(VOCABULARY, size=int(lengths.sum()), p=zipf_probabilities())
    words = np.array([f"w{index}" for index in range(VOCABULARY)], dtype=object)
    ends = np.cumsum(lengths)
    bodies = [" ".join(chunk) for chunk in np.split(words[tokens], ends[:-1])]
    vectors = rng.standard_normal((rows, DIMENSIONS), dtype=np.float32)
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIMENSIONS)
    return pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "body": pa.array(bodies, type=pa.string()),
            "embedding": embedding.cast(pa.list_(pa.float32())),
        }
    )


def make_queries(count: int, seed: int = SEED) -> list[tuple[str, list[float]]]:
    """``count`` (query text, query vector) pairs, seeded."""
    rng = np.random.default_rng(seed - 1)
    probabilities = zipf_probabilities()
    queries = []
    for _ in range(count):
        terms = rng.choice(VOCABULARY, size=QUERY_TOKENS, replace=False, p=probabilities)
        vector = rng.standard_normal(DIMENSIONS).tolist()
        queries.append((" ".join(f"w{term}" for term in terms), vector))
    return queries


# -- plans ---------------------------------------------------------------------------------


def text_branch(query: str) -> Bm25Search:
    return Bm25Search(table=TABLE, column="body", query_text=query)


def nearest_branch(vector: Sequence[float]) -> NearestNeighborSearch:
    return NearestNeighborSearch(table=TABLE, column="embedding", query_vector=vector)


def hybrid_plan(query: str, vector: Sequence[float], limit: int = LIMIT) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(branches=[text_branch(query), nearest_branch(vector)]),
        columns=["id"],
        limit=limit,
    )


Runner = Callable[[str, list[float]], list[Any]]


def contenders(
    engine: LocalEngine,
    depth: int,
    floor_matrix: np.ndarray,
    duck: Any,
    raw_text: Callable[[str, int], list[Any]] | None = None,
) -> dict[str, Runner]:
    """Each contender: (query text, query vector) → the keys it returns, best first.

    ``floor``: the same cosine top-k with nothing but NumPy — one float32 matrix-vector product
    over the row-normalised matrix and a partial sort, no SQL, no result rows — the floor any
    exact engine is measured against. ``tantivy``: ``raw_text`` (a
    :func:`_baselines.raw_tantivy_search`) asked for the fusion's ``depth``: the floor of the
    text branch of the fusion. ``duckdb``: the same query in DuckDB, a peer engine, brute
    force over a ``FLOAT[384]`` column with ``array_cosine_distance``.
    """

    def text(query: str, vector: list[float]) -> list[Any]:
        plan = SearchPlan(source=text_branch(query), columns=["id"], limit=LIMIT)
        return engine.search(plan).keys

    def nearest(query: str, vector: list[float]) -> list[Any]:
        plan = SearchPlan(source=nearest_branch(vector), columns=["id"], limit=LIMIT)
        return engine.search(plan).keys

    def hybrid(query: str, vector: list[float]) -> list[Any]:
        return engine.search(hybrid_plan(query, vector)).keys

    def statement(query: str, vector: list[float]) -> list[Any]:
        rows = engine.sql(to_sql(executed_plan(hybrid_plan(query, vector))))
        return rows.column("id").to_pylist()

    def client(query: str, vector: list[float]) -> list[Any]:
        texts = engine.search(SearchPlan(source=text_branch(query), columns=["id"], limit=depth))
        nearest = engine.search(
            SearchPlan(source=nearest_branch(vector), columns=["id"], limit=depth)
        )
        # rank each branch as the SQL does: raw score (best first), ties sharing a rank
        rankings = [
            rank_branch([(hit.key, hit.ranking_value) for hit in hits], higher_is_better=better)
            for hits, better in ((texts, True), (nearest, False))
        ]
        fused = reciprocal_rank_fusion(
            [keys for keys, _ in rankings],
            ranks=[ranks for _, ranks in rankings],
            rank_constant=DEFAULT_RANK_CONSTANT,
            limit=LIMIT,
        )
        return [hit.key for hit in fused]

    def ann(query: str, vector: list[float]) -> list[Any]:
        branch = NearestNeighborSearch(table=ANN_TABLE, column="embedding", query_vector=vector)
        return engine.search(SearchPlan(source=branch, columns=["id"], limit=LIMIT)).keys

    def floor(query: str, vector: list[float]) -> list[Any]:
        query32 = np.asarray(vector, dtype=np.float32)
        scores = floor_matrix @ (query32 / np.linalg.norm(query32))
        top = np.argpartition(-scores, LIMIT)[:LIMIT]
        return top[np.argsort(-scores[top], kind="stable")].tolist()

    def tantivy(query: str, vector: list[float]) -> list[Any]:
        assert raw_text is not None
        return raw_text(query, depth)

    def duckdb(query: str, vector: list[float]) -> list[Any]:
        rows = duck.execute(
            "SELECT id FROM docs ORDER BY array_cosine_distance(embedding, "
            f"$vector::FLOAT[{DIMENSIONS}]) LIMIT {LIMIT}",
            {"vector": vector},
        ).fetchall()
        return [row[0] for row in rows]

    return {
        "text": text,
        "nearest": nearest,
        "hybrid": hybrid,
        "statement": statement,
        "client": client,
        "ann": ann,
        "floor": floor,
        "tantivy": tantivy,
        "duckdb": duckdb,
    }


# -- measuring -----------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MiB (Linux reports KiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 1024 / 1024


def rss_mb() -> float | None:
    """The process's current resident set size in MiB (``None`` where /proc is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(rows: int, rounds: int, directory: Path, *, with_ann: bool = True) -> dict[str, Any]:
    clock = time.perf_counter
    print(f"{rows:,} rows: generating ...", file=sys.stderr)
    start = clock()
    data = make_table(rows)
    generate_s = clock() - start

    start = clock()
    build_bm25_index(directory / "bm25-alone", data.column("body").to_pylist())
    index_s = clock() - start
    raw_text = raw_tantivy_search(
        raw_tantivy_index(directory / "raw-tantivy", data.column("body").to_pylist()),
        np.asarray(data.column("id").to_numpy()),
    )

    import duckdb

    engine = LocalEngine(directory / "db")
    duck = duckdb.connect()
    try:
        print(f"{rows:,} rows: loading ...", file=sys.stderr)
        start = clock()
        engine.load_table(TABLE, data, key_column="id", text_columns=["body"])
        load_s = clock() - start
        table_mb = data.nbytes / 2**20
        rss_loaded = rss_mb()
        ann_load_s: float | None = None
        if with_ann:
            print(f"{rows:,} rows: building the HNSW index ...", file=sys.stderr)
            start = clock()
            engine.load_table(
                ANN_TABLE, data.select(["id", "embedding"]), key_column="id", vector_index="hnsw"
            )
            ann_load_s = clock() - start
        fixed = data.select(["id"]).append_column(
            "embedding",
            data.column("embedding").cast(pa.list_(pa.float32(), DIMENSIONS)),
        )
        duck.register("arrow_docs", fixed)
        duck.execute("CREATE TABLE docs AS SELECT * FROM arrow_docs")
        duck.unregister("arrow_docs")
        vectors = np.asarray(
            data.column("embedding").combine_chunks().flatten().to_numpy(), dtype=np.float32
        ).reshape(rows, DIMENSIONS)
        floor_matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        del data, vectors, fixed

        probe = hybrid_plan("w1", [1.0] * DIMENSIONS)
        depth = probe.depth
        runners = contenders(engine, depth, floor_matrix, duck, raw_text)
        names = CONTENDERS if with_ann else tuple(name for name in CONTENDERS if name != "ann")
        queries = make_queries(rounds + 1)

        start = clock()
        runners["hybrid"](*queries[0])
        cold_ms = (clock() - start) * 1000

        print(f"{rows:,} rows: {rounds} rounds of {len(names)} contenders ...", file=sys.stderr)
        samples: dict[str, list[float]] = {name: [] for name in names}
        mismatches = 0
        recall_hits = 0
        exact_mismatches = 0
        for index, (query, vector) in enumerate(queries):
            shift = index % len(names)
            order = names[shift:] + names[:shift]
            keys: dict[str, list[Any]] = {}
            for name in order:
                start = clock()
                keys[name] = runners[name](query, vector)
                elapsed = clock() - start
                if index:  # round 0 is the warm-up
                    samples[name].append(elapsed * 1000)
            for other in ("client", "statement"):
                if keys["hybrid"] != keys[other]:
                    mismatches += 1
                    print(
                        f"  round {index}: search {keys['hybrid']} != {other} {keys[other]}",
                        file=sys.stderr,
                    )
            if with_ann:
                recall_hits += len(set(keys["ann"]) & set(keys["nearest"]))
            if set(keys["nearest"]) != set(keys["floor"]):
                exact_mismatches += 1
        rss_after = rss_mb()
    finally:
        engine.close()
        duck.close()

    slower = [max(t, n) for t, n in zip(samples["text"], samples["nearest"], strict=True)]
    versus_branch = [h / s for h, s in zip(samples["hybrid"], slower, strict=True)]
    versus_client = [h / c for h, c in zip(samples["hybrid"], samples["client"], strict=True)]
    versus_statement = [h / c for h, c in zip(samples["hybrid"], samples["statement"], strict=True)]
    versus_hybrid_floor = [
        h / (f + t)
        for h, f, t in zip(samples["hybrid"], samples["floor"], samples["tantivy"], strict=True)
    ]
    ratios = {
        name: [n / other for n, other in zip(samples["nearest"], samples[name], strict=True)]
        for name in ("floor", "duckdb")
    }
    return {
        "versus_floor": statistics.median(ratios["floor"]),
        "versus_floor_iqr": (
            _report.quantile(ratios["floor"], 0.25),
            _report.quantile(ratios["floor"], 0.75),
        ),
        "versus_duckdb": statistics.median(ratios["duckdb"]),
        "ann_versus_exact": statistics.median(
            [a / n for a, n in zip(samples["ann"], samples["nearest"], strict=True)]
        )
        if with_ann
        else None,
        "ann_recall": recall_hits / (LIMIT * len(queries)) if with_ann else None,
        "exact_mismatches": exact_mismatches,
        "ann_load_s": ann_load_s,
        "rows": rows,
        "rounds": rounds,
        "depth": depth,
        "median_ms": {name: statistics.median(values) for name, values in samples.items()},
        "p25_ms": {name: _report.quantile(values, 0.25) for name, values in samples.items()},
        "p75_ms": {name: _report.quantile(values, 0.75) for name, values in samples.items()},
        "versus_branch": statistics.median(versus_branch),
        "versus_branch_iqr": (
            _report.quantile(versus_branch, 0.25),
            _report.quantile(versus_branch, 0.75),
        ),
        "versus_client": statistics.median(versus_client),
        "versus_client_iqr": (
            _report.quantile(versus_client, 0.25),
            _report.quantile(versus_client, 0.75),
        ),
        "versus_statement": statistics.median(versus_statement),
        "versus_hybrid_floor": statistics.median(versus_hybrid_floor),
        "versus_hybrid_floor_iqr": (
            _report.quantile(versus_hybrid_floor, 0.25),
            _report.quantile(versus_hybrid_floor, 0.75),
        ),
        "mismatches": mismatches,
        "checked": len(queries),
        "generate_s": generate_s,
        "index_s": index_s,
        "load_s": load_s,
        "cold_ms": cold_ms,
        "table_mb": table_mb,
        "searches": sum(len(values) for values in samples.values()) + len(CONTENDERS) + 1,
        "rss_loaded_mb": rss_loaded,
        "rss_after_mb": rss_after,
        "peak_rss_mb": peak_rss_mb(),
    }


# -- report --------------------------------------------------------------------------------


def report(results: list[dict[str, Any]], when: str, load: str) -> str:
    lines = [
        f"Measured {when} on {_report.machine('datafusion', 'tantivy', 'numpy', 'pyarrow')}; "
        f"load average {load} at the start.",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        "Warm latency, median ms (25th to 75th percentile), `limit` 10:",
        "",
        "| rows | " + " | ".join(LABELS[name] for name in CONTENDERS) + " |",
        "|---:|" + "---:|" * len(CONTENDERS),
    ]
    for row in results:
        cells = [
            f"{row['median_ms'][name]:,.1f} ({row['p25_ms'][name]:,.1f} to "
            f"{row['p75_ms'][name]:,.1f})"
            if name in row["median_ms"]
            else "-"
            for name in CONTENDERS
        ]
        lines.append(f"| {row['rows']:,} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Exact nearest neighbours against the NumPy float32 floor and a peer, and the HNSW "
        "index (median of the per-round ratios):",
        "",
        "| rows | exact / NumPy floor | target | exact / DuckDB | HNSW / exact "
        "| HNSW recall@10 vs exact | exact top-10 = floor top-10 | HNSW build s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        verdict = "met" if row["versus_floor"] <= FLOOR_TARGET else "not met"
        target = f"<= {FLOOR_TARGET:g}x ({verdict})" if row["rows"] >= 100_000 else "-"
        lines.append(
            f"| {row['rows']:,} | {row['versus_floor']:.2f}x "
            f"({row['versus_floor_iqr'][0]:.2f} to {row['versus_floor_iqr'][1]:.2f}) "
            f"| {target} | {row['versus_duckdb']:.2f}x "
            f"| {optional(row['ann_versus_exact'], '.2f', 'x')} "
            f"| {optional(row['ann_recall'], '.3f')} "
            f"| {row['checked'] - row['exact_mismatches']}/{row['checked']} "
            f"| {optional(row['ann_load_s'], '.1f')} |"
        )
    lines += [
        "",
        "| rows | hybrid / floor (NumPy float32 floor + raw tantivy at the fusion depth) "
        "| target | hybrid / slower branch | target | hybrid / two queries + client RRF "
        "| hybrid / statement on DataFusion | keys equal |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        large = row["rows"] >= 100_000
        verdict = "met" if row["versus_hybrid_floor"] <= HYBRID_FLOOR_TARGET else "not met"
        floor_target = f"<= {HYBRID_FLOOR_TARGET}x ({verdict})" if large else "-"
        verdict = "met" if row["versus_branch"] <= TARGET_RATIO else "not met"
        target = f"<= {TARGET_RATIO}x ({verdict})" if large else "-"
        lines.append(
            f"| {row['rows']:,} | {row['versus_hybrid_floor']:.2f}x "
            f"({row['versus_hybrid_floor_iqr'][0]:.2f} to "
            f"{row['versus_hybrid_floor_iqr'][1]:.2f}) | {floor_target} "
            f"| {row['versus_branch']:.2f}x "
            f"({row['versus_branch_iqr'][0]:.2f} to {row['versus_branch_iqr'][1]:.2f}) "
            f"| {target} "
            f"| {row['versus_client']:.2f}x "
            f"({row['versus_client_iqr'][0]:.2f} to {row['versus_client_iqr'][1]:.2f}) "
            f"| {row['versus_statement']:.2f}x "
            f"| {2 * row['checked'] - row['mismatches']}/{2 * row['checked']} |"
        )
    lines += [
        "",
        "- ratios: median of the per-round ratios (25th to 75th percentile); the slower branch "
        "is the slower of text and nearest in the same round; the floor is the sum of the NumPy "
        "float32 floor and raw tantivy's top k at the fusion depth in the same round: the raw "
        "work of the hybrid's two branches, with no plan, fusion or result rows.",
        "- keys equal: comparisons (two per round, warm-up included) in which the search returned "
        "the same keys in the same order as the client-side fusion and as the statement on "
        "DataFusion.",
    ]
    for row in results:
        lines.append(
            f"- {row['rows']:,} rows: {row['rounds']} rounds after one warm-up round, each "
            f"contender once per round; fusion depth {row['depth']} per branch."
        )
    lines += [
        "",
        "Setup:",
        "",
        "| rows | Arrow table MiB | generate s | `load_table` s | tantivy index alone s "
        "| first hybrid search ms | RSS after load MiB | RSS after the rounds MiB "
        "| peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        lines.append(
            f"| {row['rows']:,} | {row['table_mb']:,.0f} | {row['generate_s']:.2f} "
            f"| {row['load_s']:.2f} | {row['index_s']:.2f} | {row['cold_ms']:,.0f} "
            f"| {megabytes(row['rss_loaded_mb'])} | {megabytes(row['rss_after_mb'])} "
            f"| {row['peak_rss_mb']:,.0f} |"
        )
    lines += [
        "",
        "- `load_table`: key check, Parquet write and the tantivy BM25 index build.",
        "- first hybrid search: opening the index and reading the table into memory for the "
        "table function, then the query.",
        "- RSS: the whole process's resident set size right after `load_table`, and after the "
        "timed rounds (the cold search, the warm-up round and the timed rounds: "
        + ", ".join(f"{row['searches']} plans at {row['rows']:,} rows" for row in results)
        + "; the client contender counts as one); peak RSS: the process's high-water mark "
        "after that size (sizes run in order, in one process).",
    ]
    return "\n".join(lines)


def optional(value: float | None, spec: str, unit: str = "") -> str:
    """``value`` formatted by ``spec`` then ``unit``, or ``-`` when it was not measured."""
    return "-" if value is None else format(value, spec) + unit


def megabytes(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="table sizes (rows)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="timed rounds per size (default: 60 below 100,000 rows, else 30)",
    )
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    parser.add_argument(
        "--ann-max-rows",
        type=int,
        default=None,
        metavar="ROWS",
        help="build and time the HNSW contender only up to this table size (default: every "
        "size; the build is the slow part of a large run)",
    )
    options = parser.parse_args(argv)
    if options.rounds is not None and options.rounds < 2:
        parser.error("--rounds must be at least 2")

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    results = []
    for rows in options.sizes:
        rounds = options.rounds or (60 if rows < 100_000 else 30)
        with tempfile.TemporaryDirectory(prefix="hdq-bench-") as directory:
            with_ann = options.ann_max_rows is None or rows <= options.ann_max_rows
            results.append(measure(rows, rounds, Path(directory), with_ann=with_ann))

    body = report(results, when, load)
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
