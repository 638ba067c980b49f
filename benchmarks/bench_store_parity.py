"""Same plan, same page: each store's text, nearest and fused pages against the local engine's.

Run from the repository root::

    python benchmarks/bench_store_parity.py [--documents 1500] [--queries 100]
        [--tree PATH] [--write docs/engines.md]

The corpus is the first ``--documents`` SciFact abstracts (``../shared/data/scifact``; title +
" " + abstract as ``body``) with their precomputed all-MiniLM-L6-v2 vectors (float16,
re-normalised in float32), loaded with each engine's ``load_table`` (a full-text index on
``body``, no vector index). The queries are the first ``--queries`` SciFact test claims with
their precomputed vectors. For each query, every engine runs a BM25 page, an exact cosine
nearest page and an RRF fusion of the two (rank constant 60, depth 100 per branch), all
``limit`` 10; reported per store and kind: the mean overlap of its page with the local
engine's (shared keys over 10) and the share of queries whose page is the local engine's in
the same order.

``--tree PATH`` measures another checkout of the library (its engines, this script's data and
measure), so a change can be reported before and after in one run.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
STORES = ("sqlite", "duckdb", "postgres", "lancedb")
KINDS = ("text", "nearest", "hybrid")
LIMIT = 10
DEPTH = 100
MARK_START = "<!-- bench_store_parity:start -->"
MARK_END = "<!-- bench_store_parity:end -->"


def read_data(
    data: Path, documents: int, queries: int
) -> tuple[Any, list[tuple[str, list[float]]]]:
    """The corpus table (``id``, ``body``, ``embedding``) and ``(claim, vector)`` queries."""
    import numpy as np
    import pyarrow as pa

    def unit(path: Path) -> np.ndarray:
        vectors = np.load(path).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    vectors = data / "vectors"
    document_ids = (vectors / "doc_ids.txt").read_text(encoding="utf-8").split()
    row_of = {identifier: row for row, identifier in enumerate(document_ids)}
    document_vectors = unit(vectors / "doc_vectors.f16.npy")
    ids, bodies, embeddings = [], [], []
    with open(data / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            if record["_id"] not in row_of:
                continue
            ids.append(int(record["_id"]))
            bodies.append(f"{record['title']} {record['text']}")
            embeddings.append(document_vectors[row_of[record["_id"]]].tolist())
            if len(ids) == documents:
                break
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "body": bodies,
            "embedding": pa.array(embeddings, pa.list_(pa.float32(), len(embeddings[0]))),
        }
    )
    claims = {}
    with open(data / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            claims[record["_id"]] = record["text"]
    query_ids = (vectors / "query_ids.txt").read_text(encoding="utf-8").split()
    query_vectors = unit(vectors / "query_vectors.f16.npy")
    chosen = [
        (claims[identifier], query_vectors[row].tolist())
        for row, identifier in enumerate(query_ids[:queries])
    ]
    return table, chosen


def open_engine(name: str, directory: Path, postgres_url: str | None) -> Any:
    """A fresh engine of kind ``name``, its files under ``directory``."""
    if name == "local":
        from hotdata_retrieval.engines.local import LocalEngine

        return LocalEngine(directory / "local")
    if name == "sqlite":
        from hotdata_retrieval.engines.sqlite import SqliteEngine

        return SqliteEngine(directory / "store.sqlite")
    if name == "duckdb":
        from hotdata_retrieval.engines.duckdb import DuckdbEngine

        return DuckdbEngine(directory / "store.duckdb")
    if name == "lancedb":
        from hotdata_retrieval.engines.lancedb import LancedbEngine

        return LancedbEngine(directory / "lance")
    from hotdata_retrieval.engines.postgres import PostgresEngine

    return PostgresEngine(postgres_url)


def pages(engine: Any, queries: Sequence[tuple[str, list[float]]]) -> dict[str, list[list[Any]]]:
    """Each kind's page of keys, per query."""
    from hotdata_retrieval.plan.search import (
        Bm25Search,
        NearestNeighborSearch,
        ReciprocalRankFusion,
        SearchPlan,
    )

    found: dict[str, list[list[Any]]] = {kind: [] for kind in KINDS}
    for text, vector in queries:
        branches = {
            "text": Bm25Search(table="docs", column="body", query_text=text, allow_empty=True),
            "nearest": NearestNeighborSearch(
                table="docs", column="embedding", query_vector=vector, metric="cosine"
            ),
        }
        branches["hybrid"] = ReciprocalRankFusion(
            branches=[branches["text"], branches["nearest"]], rank_constant=60, depth=DEPTH
        )
        for kind in KINDS:
            result = engine.search(SearchPlan(source=branches[kind], limit=LIMIT))
            found[kind].append([int(key) for key in result.keys])
    return found


def measure(options: argparse.Namespace) -> dict[str, dict[str, tuple[float, float]]]:
    """Per store and kind: (mean overlap with the local page, share of identical pages)."""
    from hotdata_retrieval.engines.postgres import throwaway_server

    table, queries = read_data(options.data, options.documents, options.queries)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="hdq-parity-") as directory, throwaway_server() as url:
        found = {}
        for name in ("local", *STORES):
            (Path(directory) / name).mkdir()
            engine = open_engine(name, Path(directory) / name, url)
            engine.load_table("docs", table, key_column="id", text_columns=["body"])
            found[name] = pages(engine, queries)
            close = getattr(engine, "close", None)
            if close is not None:
                close()
            print(f"{name}: done", file=sys.stderr)
        for name in STORES:
            results[name] = {}
            for kind in KINDS:
                pairs = list(zip(found[name][kind], found["local"][kind]))
                overlap = sum(len(set(a) & set(b)) / LIMIT for a, b in pairs) / len(pairs)
                same = sum(a == b for a, b in pairs) / len(pairs)
                results[name][kind] = (overlap, same)
    return results


def report(results: dict[str, dict[str, tuple[float, float]]], options: argparse.Namespace) -> str:
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"Measured {when} with `{_report.command()}` on {_report.machine('tantivy')}; "
        f"{options.documents} SciFact abstracts, {options.queries} test claims, limit {LIMIT}, "
        f"RRF depth {DEPTH}. Mean overlap of each store's page with the local engine's "
        "(identical pages, same order, in brackets):",
        "",
        "| store | " + " | ".join(KINDS) + " |",
        "| --- | " + " | ".join("---:" for _ in KINDS) + " |",
    ]
    for name, kinds in results.items():
        cells = [f"{kinds[kind][0]:.3f} ({kinds[kind][1]:.0%})" for kind in KINDS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--write", type=Path, default=None)
    options = parser.parse_args(argv)
    sys.path.insert(0, str(options.tree.resolve()))
    results = measure(options)
    _report.publish(report(results, options), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
