"""HNSW index benchmark on real embeddings: recall@10 against the exact scan, and latency.

Run from the repository root (needs the ``bench`` extra and the SciFact vectors)::

    python benchmarks/bench_ann.py [--data ../shared/data/scifact/vectors] \\
        [--write docs/benchmarks.md]

It loads SciFact's 5,183 abstract embeddings (all-MiniLM-L6-v2, 384-d, ``doc_vectors.f16.npy``)
into two local-engine tables — one exact, one with ``vector_index="hnsw"`` — and runs the 300
test-claim embeddings (``query_vectors.f16.npy``) as cosine nearest-neighbour plans with
``limit`` 10 on both. Reported: recall@10 of the HNSW answers against the exact ones (the
fraction of the exact top 10 the index returns), and the median latency of each, measured in
interleaved rounds. Gaussian-noise vectors say little about an HNSW index (they have no
neighbourhood structure), which is why this uses real embeddings.

This script reports; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from hotdata_retrieval import NearestNeighborSearch, SearchPlan  # noqa: E402
from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact" / "vectors"
LIMIT = 10
MARK_START = "<!-- ann-benchmark:start -->"
MARK_END = "<!-- ann-benchmark:end -->"


def load_vectors(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    """Documents and queries as float32, re-normalised (stored as float16)."""
    documents = np.load(directory / "doc_vectors.f16.npy").astype(np.float32)
    queries = np.load(directory / "query_vectors.f16.npy").astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return documents, queries


def measure(documents: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    rows = documents.shape[0]
    table = _table(documents)
    with LocalEngine() as engine:
        engine.load_table("exact", table)
        start = time.perf_counter()
        engine.load_table("hnsw", table, vector_index="hnsw")
        build_s = time.perf_counter() - start
        found = 0
        samples: dict[str, list[float]] = {"exact": [], "hnsw": []}
        for index, query in enumerate(queries):
            answers: dict[str, set[int]] = {}
            order = ("exact", "hnsw") if index % 2 else ("hnsw", "exact")
            for name in order:
                plan = SearchPlan(
                    source=NearestNeighborSearch(
                        table=name, column="embedding", query_vector=query.tolist()
                    ),
                    limit=LIMIT,
                    columns=["id"],
                )
                start = time.perf_counter()
                answers[name] = set(engine.search(plan).keys)
                samples[name].append((time.perf_counter() - start) * 1000)
            found += len(answers["hnsw"] & answers["exact"])
    return {
        "rows": rows,
        "queries": len(queries),
        "recall": found / (LIMIT * len(queries)),
        "exact_ms": statistics.median(samples["exact"][1:]),
        "hnsw_ms": statistics.median(samples["hnsw"][1:]),
        "build_s": build_s,
    }


SETTINGS = (
    (16, 128, "f32"),
    (16, 64, "f32"),
    (16, 32, "f32"),
    (8, 64, "f32"),
    (16, 128, "i8"),
    (16, 64, "i8"),
)
"""(connectivity, expansion_add, storage) per measured setting; the first is usearch's
default, the library's own is marked in the report."""

CANDIDATES = 64
"""Candidates a setting's index is asked for, re-scored in float64: what the engine asks."""


def settings(documents: np.ndarray, queries: np.ndarray) -> list[dict[str, Any]]:
    """Per HNSW setting, raw usearch on one thread: build CPU seconds, recall@10 of the
    index's own top 10 and of the float64 re-score of its 64 candidates."""
    from usearch.index import Index

    from hotdata_retrieval.engines.hnsw import HnswSettings
    from hotdata_retrieval.engines.local.nearest import hnsw_storage

    exact64 = documents.astype(np.float64)
    truths = [
        set(np.argsort(-(exact64 @ query.astype(np.float64)), kind="stable")[:LIMIT].tolist())
        for query in queries
    ]
    defaults = HnswSettings()
    chosen = (defaults.connectivity, defaults.expansion_add, hnsw_storage("cosine_distance"))
    rows = []
    for connectivity, expansion_add, storage in SETTINGS:
        index = Index(
            ndim=documents.shape[1],
            metric="cos",
            dtype=storage,
            connectivity=connectivity,
            expansion_add=expansion_add,
        )
        start = time.process_time()
        index.add(np.arange(len(documents)), documents, threads=1)
        build_cpu = time.process_time() - start
        own = rescored = 0
        for query, truth in zip(queries, truths):
            candidates = np.asarray(index.search(query, CANDIDATES, threads=1).keys)
            own += len(set(candidates[:LIMIT].tolist()) & truth)
            distances = -(exact64[candidates] @ query.astype(np.float64))
            best = candidates[np.lexsort((candidates, distances))][:LIMIT]
            rescored += len(set(best.tolist()) & truth)
        rows.append(
            {
                "setting": (connectivity, expansion_add, storage),
                "chosen": (connectivity, expansion_add, storage) == chosen,
                "build_cpu_s": build_cpu,
                "own_recall": own / (LIMIT * len(queries)),
                "rescored_recall": rescored / (LIMIT * len(queries)),
            }
        )
    return rows


def overhead(documents: np.ndarray, queries: np.ndarray, rows: int = 2_000) -> dict[str, Any]:
    """A search through ``LocalEngine.search`` on a ``rows``-row HNSW table against raw
    usearch searching the same index file (one thread, ``limit`` 10), interleaved per query:
    the median of the per-query ratios.

    Past SciFact's documents the table holds them again with seeded noise (each component
    plus a normal draw of standard deviation 0.02, the vector normalised again): real
    neighbourhoods at any size."""
    from usearch.index import Index

    if rows > documents.shape[0]:
        rng = np.random.default_rng(rows)
        copies = documents[np.arange(rows) % documents.shape[0]]
        copies = copies + rng.normal(0.0, 0.02, copies.shape).astype(np.float32)
        documents = copies / np.linalg.norm(copies, axis=1, keepdims=True)
    table = _table(documents[:rows])
    with (
        tempfile.TemporaryDirectory(prefix="hdq-bench-ann-") as directory,
        LocalEngine(Path(directory) / "db") as engine,
    ):
        engine.load_table("hnsw", table, vector_index="hnsw")
        (path,) = (Path(directory) / "db").rglob("*.usearch")
        raw = Index.restore(str(path), view=True)
        engine_s: list[float] = []
        raw_s: list[float] = []
        for index, query in enumerate(queries):
            plan = SearchPlan(
                source=NearestNeighborSearch(
                    table="hnsw", column="embedding", query_vector=query.tolist()
                ),
                limit=LIMIT,
                columns=["id"],
            )
            for name in ("engine", "raw") if index % 2 else ("raw", "engine"):
                start = time.perf_counter()
                if name == "engine":
                    engine.search(plan)
                else:
                    raw.search(query, LIMIT, threads=1)
                (engine_s if name == "engine" else raw_s).append(time.perf_counter() - start)
    pairs = list(zip(engine_s, raw_s))[1:]  # the first query warms both
    return {
        "rows": rows,
        "engine_us": statistics.median(engine for engine, _ in pairs) * 1e6,
        "raw_us": statistics.median(raw for _, raw in pairs) * 1e6,
        "ratio": statistics.median(engine / raw for engine, raw in pairs),
    }


def _table(documents: np.ndarray) -> pa.Table:
    rows, dimensions = documents.shape
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(documents.reshape(-1)), dimensions
            ).cast(pa.list_(pa.float32())),
        }
    )


def settings_report(rows: list[dict[str, Any]], costs: list[dict[str, Any]]) -> str:
    baseline = rows[0]["build_cpu_s"]
    lines = [
        "",
        f"HNSW settings, raw usearch on one thread (cosine, the same documents and queries; "
        f"re-scored: the float64 re-score of {CANDIDATES} candidates, as the engine does):",
        "",
        "| connectivity | expansion_add | storage | build CPU s | vs usearch's default "
        "| recall@10, own top 10 | recall@10, re-scored |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        connectivity, expansion_add, storage = row["setting"]
        marker = " (the library's)" if row["chosen"] else ""
        lines.append(
            f"| {connectivity} | {expansion_add} | {storage}{marker} | "
            f"{row['build_cpu_s']:.2f} | {row['build_cpu_s'] / baseline:.2f}x | "
            f"{row['own_recall']:.3f} | {row['rescored_recall']:.3f} |"
        )
    lines += [
        "",
        "A search through `LocalEngine.search` against raw usearch on the same index file (one "
        "thread, the queries interleaved):",
        "",
        "| rows | `LocalEngine.search` µs | raw usearch, limit 10, µs | engine / raw |",
        "|---:|---:|---:|---:|",
    ]
    for cost in costs:
        lines.append(
            f"| {cost['rows']:,} | {cost['engine_us']:,.0f} | {cost['raw_us']:,.0f} "
            f"| {cost['ratio']:.2f}x |"
        )
    lines += [
        "",
        "- ratios: medians of the per-query ratios. Past SciFact's 5,183 documents the table "
        "holds them again with seeded noise (standard deviation 0.02 a component, normalised).",
    ]
    return "\n".join(lines)


def report(result: dict[str, float], when: str, load: str, data: Path) -> str:
    return "\n".join(
        [
            f"Measured {when} on {_report.machine('datafusion', 'usearch', 'numpy')}; load "
            f"average {load} at the start.",
            f"Command: `{_report.command()}`, from the repository root; data: SciFact "
            f"all-MiniLM-L6-v2 vectors ({data.name}/).",
            "",
            "| documents | queries | HNSW recall@10 vs exact | exact ms | HNSW ms | HNSW build s |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {result['rows']:,} | {result['queries']} | {result['recall']:.3f} "
            f"| {result['exact_ms']:.1f} | {result['hnsw_ms']:.1f} | {result['build_s']:.2f} |",
            "",
            "- recall@10: the share of each query's exact top 10 (cosine) that the HNSW "
            "answer holds, over all queries (target >= 0.95).",
            "- latency: median per `LocalEngine.search` call, the two tables interleaved.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the vectors directory")
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    parser.add_argument(
        "--overhead-rows",
        type=int,
        nargs="+",
        default=[2_000, 100_000],
        help="table sizes of the search-cost comparison with raw usearch",
    )
    options = parser.parse_args(argv)
    if not (options.data / "doc_vectors.f16.npy").exists():
        parser.error(f"no SciFact vectors in {options.data}")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    documents, queries = load_vectors(options.data)
    body = report(measure(documents, queries), when, load, options.data)
    print("HNSW settings ...", file=sys.stderr)
    costs = [overhead(documents, queries, rows) for rows in options.overhead_rows]
    body += "\n" + settings_report(settings(documents, queries), costs)
    _report.publish(body, options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
