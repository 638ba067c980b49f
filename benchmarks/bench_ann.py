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
import time
from collections.abc import Sequence
from pathlib import Path

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
    rows, dimensions = documents.shape
    table = pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(documents.reshape(-1)), dimensions
            ).cast(pa.list_(pa.float32())),
        }
    )
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
    options = parser.parse_args(argv)
    if not (options.data / "doc_vectors.f16.npy").exists():
        parser.error(f"no SciFact vectors in {options.data}")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    documents, queries = load_vectors(options.data)
    body = report(measure(documents, queries), when, load, options.data)
    print(body)
    if options.write is not None:
        _report.write_section(options.write, body, MARK_START, MARK_END)
        print(f"wrote {options.write}", file=sys.stderr)


if __name__ == "__main__":
    main()
