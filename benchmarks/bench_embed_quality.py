"""Retrieval quality and speed of the default embedder on BEIR SciFact (test split).

Run from the repository root (needs ``pip install 'hotdata-retrieval[local]'`` and the
evaluation packages ``ir-measures``; ``bm25s`` and ``PyStemmer`` for ``--bm25``)::

    python benchmarks/bench_embed_quality.py [--data DIR] [--cache DIR] [--bm25]

What it does, in one run:

1. Embeds the 5,183 abstracts (input text: title, a space, the abstract, as BEIR does) with
   :func:`hotdata_retrieval.embed.default_embedder` through ``embed_in_batches``, and times
   it: documents per second of wall-clock time, model loading excluded (timed on its own).
   The vectors are cached under ``--cache`` (default ``/tmp/hotdata-embed-cache``), keyed by
   the embedder's ``name`` and the corpus file's SHA-256, so later runs skip this step
   (``--no-cache`` forces it; throughput is then not re-measured).
2. Embeds the 300 test claims as queries, timed the same way.
3. Dense retrieval: exact cosine (a dot product of unit vectors) over every document with
   numpy, top 100 per query.
4. Scores the ranking with ``ir-measures`` (backed by ``pytrec_eval``, i.e. trec_eval's
   definitions): nDCG@10 and recall@100 against ``qrels/test.tsv``. Each run is passed as
   ranks (score = depth - rank), so trec_eval evaluates exactly the order produced here,
   ties included.
5. If ``<data>/vectors/`` holds the shared float32-model vectors, also reports: those
   vectors alone (a check of this pipeline against the figures recorded with them), this
   model's queries against those documents, and the cosine between this model's document
   vectors and those.
6. With ``--bm25``: BM25 (``bm25s``, Lucene variant, k1 1.5, b 0.75, English stop words and
   Snowball stemmer) top 100, and its reciprocal rank fusion with the dense top 100 through
   :func:`hotdata_retrieval.reciprocal_rank_fusion` (rank constant 60); also fused with the
   shared float32 vectors' ranking when they are there.
7. With ``--speed N``: embeds an evenly spread sample of N abstracts again (after a short
   warm-up) at forward-pass batch sizes 1, 4, 8, 16 and 32, interleaved over three rounds,
   and reports the median and best documents per second for each, with the range of the
   1-minute load average, since other work on the machine slows it down.

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import numpy as np  # noqa: E402

from hotdata_retrieval import reciprocal_rank_fusion  # noqa: E402
from hotdata_retrieval.embed import default_embedder, embed_in_batches  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
DEPTH = 100
RANK_CONSTANT = 60
SPEED_ROUNDS = 3


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle)  # header: query-id, corpus-id, score
        for line in handle:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dense_top(queries: np.ndarray, docs: np.ndarray, doc_ids: Sequence[str]) -> list[list[str]]:
    """Exact top-DEPTH by dot product; ties broken by document row, stably."""
    scores = queries.astype(np.float32) @ docs.astype(np.float32).T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
    return [[doc_ids[j] for j in row] for row in order]


def evaluate(
    qrels: dict[str, dict[str, int]], query_ids: Sequence[str], rankings: Sequence[Sequence[str]]
) -> dict[str, float]:
    import ir_measures
    from ir_measures import R, nDCG

    qrel_rows = [
        ir_measures.Qrel(query_id, doc_id, relevance)
        for query_id, docs in qrels.items()
        for doc_id, relevance in docs.items()
    ]
    run = [
        ir_measures.ScoredDoc(query_id, doc_id, float(DEPTH - rank))
        for query_id, ranking in zip(query_ids, rankings)
        for rank, doc_id in enumerate(ranking)
    ]
    result = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrel_rows, run)
    return {"ndcg@10": float(result[nDCG @ 10]), "recall@100": float(result[R @ 100])}


def bm25_top(
    doc_texts: Sequence[str], doc_ids: Sequence[str], queries: Sequence[str]
) -> list[list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(
        bm25s.tokenize(list(doc_texts), stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, show_progress=False)
    rows, _scores = retriever.retrieve(tokens, k=DEPTH, show_progress=False, n_threads=1)
    return [[doc_ids[int(j)] for j in row] for row in rows]


def fuse(*branches: Sequence[Sequence[str]]) -> list[list[str]]:
    fused = []
    for lists in zip(*branches):
        hits = reciprocal_rank_fusion(list(lists), rank_constant=RANK_CONSTANT, limit=DEPTH)
        fused.append([hit.key for hit in hits])
    return fused


def measure_speed(texts: Sequence[str], count: int, batch_size: int) -> list[dict[str, Any]]:
    """Documents per second at several forward-pass batch sizes, interleaved over rounds."""
    from hotdata_retrieval.embed import MiniLMEmbedder

    step = max(1, len(texts) // count)
    sample = list(texts[::step][:count])
    sizes = (1, 4, 8, 16, 32)
    embedders = {size: MiniLMEmbedder(batch_size=size) for size in sizes}
    for embedder in embedders.values():
        embedder.embed_documents(sample[:8])  # load and warm up
    rates: dict[int, list[float]] = {size: [] for size in sizes}
    loads: list[float] = [os.getloadavg()[0]]
    for round_number in range(SPEED_ROUNDS):
        # Alternate the order, so that a change in the machine's load hits every size alike.
        for size in sizes if round_number % 2 == 0 else sizes[::-1]:
            started = time.perf_counter()
            embed_in_batches(embedders[size], sample, batch_size=batch_size, progress=False)
            rates[size].append(len(sample) / (time.perf_counter() - started))
            loads.append(os.getloadavg()[0])
    return [
        {
            "forward_batch": size,
            "documents": len(sample),
            "rounds": SPEED_ROUNDS,
            "docs_per_second_median": round(statistics.median(rates[size]), 2),
            "docs_per_second_best": round(max(rates[size]), 2),
            "load_min": round(min(loads), 2),
            "load_max": round(max(loads), 2),
        }
        for size in sizes
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/hotdata-embed-cache"))
    parser.add_argument("--no-cache", action="store_true", help="re-embed the corpus")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per embedder call")
    parser.add_argument("--bm25", action="store_true", help="also BM25 and RRF (needs bm25s)")
    parser.add_argument(
        "--speed", type=int, default=0, metavar="N", help="time N abstracts per batch size"
    )
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)

    data: Path = args.data
    corpus = read_jsonl(data / "corpus.jsonl")
    doc_ids = [str(doc["_id"]) for doc in corpus]
    doc_texts = [f"{doc.get('title', '')} {doc.get('text', '')}".strip() for doc in corpus]
    qrels = read_qrels(data / "qrels" / "test.tsv")
    all_queries = {str(q["_id"]): q["text"] for q in read_jsonl(data / "queries.jsonl")}
    query_ids = sorted(qrels, key=int)
    query_texts = [all_queries[qid] for qid in query_ids]

    embedder = default_embedder()
    started = time.perf_counter()
    embedder.load()
    load_seconds = time.perf_counter() - started
    report: dict[str, Any] = {
        "embedder": embedder.name,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "load_seconds": round(load_seconds, 3),
        "documents": len(doc_ids),
        "queries": len(query_ids),
    }

    key = hashlib.sha256(
        f"{embedder.name}\n{file_sha256(data / 'corpus.jsonl')}".encode()
    ).hexdigest()[:16]
    cache_file: Path = args.cache / f"scifact-docs-{key}.npy"
    if cache_file.is_file() and not args.no_cache:
        doc_vectors = np.load(cache_file)
        print(f"document vectors from cache: {cache_file}", file=sys.stderr)
    else:
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        doc_vectors = embed_in_batches(
            embedder, doc_texts, batch_size=args.batch_size, description="SciFact abstracts"
        )
        seconds = time.perf_counter() - started
        report["doc_seconds"] = round(seconds, 1)
        report["docs_per_second"] = round(len(doc_texts) / seconds, 2)
        report["load_average_before"] = round(load_before, 2)
        args.cache.mkdir(parents=True, exist_ok=True)
        np.save(cache_file, doc_vectors)
    started = time.perf_counter()
    query_vectors = embed_in_batches(
        embedder, query_texts, batch_size=args.batch_size, progress=False
    )
    seconds = time.perf_counter() - started
    report["queries_per_second"] = round(len(query_texts) / seconds, 1)

    dense = dense_top(query_vectors, doc_vectors, doc_ids)
    results: dict[str, dict[str, float]] = {"dense (this model)": evaluate(qrels, query_ids, dense)}

    reference = data / "vectors"
    reference_dense: list[list[str]] | None = None
    if (reference / "doc_vectors.f16.npy").is_file():
        ref_ids = (reference / "doc_ids.txt").read_text().split()
        ref_docs = np.load(reference / "doc_vectors.f16.npy").astype(np.float32)
        ref_docs /= np.linalg.norm(ref_docs, axis=1, keepdims=True)
        ref_query_ids = (reference / "query_ids.txt").read_text().split()
        ref_queries = np.load(reference / "query_vectors.f16.npy").astype(np.float32)
        ref_queries /= np.linalg.norm(ref_queries, axis=1, keepdims=True)
        position = {doc_id: row for row, doc_id in enumerate(ref_ids)}
        aligned = ref_docs[[position[doc_id] for doc_id in doc_ids]]
        query_position = {query_id: row for row, query_id in enumerate(ref_query_ids)}
        aligned_queries = ref_queries[[query_position[qid] for qid in query_ids]]
        reference_dense = dense_top(aligned_queries, aligned, doc_ids)
        results["dense (shared float32 vectors)"] = evaluate(qrels, query_ids, reference_dense)
        results["dense (these queries, float32 documents)"] = evaluate(
            qrels, query_ids, dense_top(query_vectors, aligned, doc_ids)
        )
        cosines = (doc_vectors * aligned).sum(axis=1)
        query_cosines = (query_vectors * aligned_queries).sum(axis=1)
        report["cosine_to_float32_documents"] = {
            "mean": round(float(cosines.mean()), 5),
            "min": round(float(cosines.min()), 5),
        }
        report["cosine_to_float32_queries"] = {
            "mean": round(float(query_cosines.mean()), 5),
            "min": round(float(query_cosines.min()), 5),
        }

    if args.bm25:
        lexical = bm25_top(doc_texts, doc_ids, query_texts)
        results["BM25 (bm25s, Lucene)"] = evaluate(qrels, query_ids, lexical)
        results["RRF(BM25, dense), k=60"] = evaluate(qrels, query_ids, fuse(lexical, dense))
        if reference_dense is not None:
            results["RRF(BM25, float32 dense), k=60"] = evaluate(
                qrels, query_ids, fuse(lexical, reference_dense)
            )
    if args.speed:
        report["speed"] = measure_speed(doc_texts, args.speed, args.batch_size)
    report["results"] = results

    print(f"\nembedder: {report['embedder']}")
    print(f"machine: {report['machine']}")
    for row in report.get("speed", []):
        print(
            f"speed: forward batch {row['forward_batch']}: median "
            f"{row['docs_per_second_median']} docs/s, best {row['docs_per_second_best']} "
            f"(1-minute load average {row['load_min']} to {row['load_max']})"
        )
    for field in (
        "load_seconds",
        "doc_seconds",
        "docs_per_second",
        "queries_per_second",
        "load_average_before",
        "cosine_to_float32_documents",
        "cosine_to_float32_queries",
    ):
        if field in report:
            print(f"{field}: {report[field]}")
    print("\n| run | nDCG@10 | recall@100 |\n| --- | ---: | ---: |")
    for run, scores in results.items():
        print(f"| {run} | {scores['ndcg@10']:.4f} | {scores['recall@100']:.4f} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
