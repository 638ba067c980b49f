"""Retrieval quality of the local engine on BEIR SciFact (test split): text, semantic, hybrid.

Run from the repository root (needs ``pip install 'hotdata-retrieval[local]'`` for the default
embedder and ``pip install ir-measures`` for the metrics)::

    python benchmarks/bench_quality.py [--data DIR] [--db DIR] [--write docs/benchmarks.md]

What it does, in one run:

1. Reads the BEIR directory with :func:`~hotdata_retrieval.engines.local.loading.read_source`
   and loads its ``corpus`` table into a :class:`LocalEngine` at ``--db`` (default
   ``/tmp/hdq-scifact``): a BM25 index on ``body`` (title + " " + abstract) and ``body``
   embedded by :func:`hotdata_retrieval.embed.default_embedder` into ``body_embedding``. The
   first load embeds 5,183 abstracts (several minutes on 2 cores); the database directory keeps
   the vectors by text hash, so later runs reuse them and the load takes seconds.
2. For each of the 300 test claims (``qrels/test.tsv``) runs, through
   :meth:`LocalEngine.search`, with ``limit`` 100:

   - ``text``: :class:`Bm25Search` on ``body``;
   - ``semantic``: :class:`VectorSearch` on ``body`` (the engine embeds the claim);
   - ``nearest``: :class:`NearestNeighborSearch` on ``body_embedding`` with the claim embedded
     by the same embedder on the caller's side (a check: it should rank as ``semantic`` does);
   - ``hybrid``: :class:`ReciprocalRankFusion` (rank constant 60) of the ``text`` and
     ``nearest`` branches, at the plan's default depth (``max(4 * limit, 20)``: 400 per branch
     for ``limit`` 100) and at depth 100 (the published anchor's); and with ``limit`` 10 at its
     default depth 40, which is what a caller asking for ten hits gets (nDCG@10 only).
3. As a reference point, the same over a second table, ``corpus_fp32``, whose ``embedding``
   column holds the shared precomputed all-MiniLM-L6-v2 fp32 document vectors
   (``<data>/vectors``, stored as float16, re-normalised here), searched with the matching
   precomputed query vectors: ``nearest`` alone and ``hybrid`` with the engine's BM25.
4. Scores every run with ``ir-measures`` (its ``pytrec_eval`` provider, i.e. trec_eval's
   definitions): nDCG@10 and recall@100 over all 300 test claims (a claim with no hits
   counts as 0). Runs are passed as ranks (score = 1000 - rank), so trec_eval evaluates
   exactly the order the engine returned.

The issue's acceptance: hybrid nDCG@10 at least the better of text and semantic. This script
reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402
from hotdata_retrieval.engines.local.loading import read_source  # noqa: E402
from hotdata_retrieval.plan.search import (  # noqa: E402
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
DEFAULT_DB = Path("/tmp/hdq-scifact")
LIMIT = 100
TABLE = "corpus"
REFERENCE_TABLE = "corpus_fp32"
RANK_BASE = 1000
MARK_START = "<!-- quality-benchmark:start -->"
MARK_END = "<!-- quality-benchmark:end -->"

ANCHORS = {
    "text": "BM25: 0.665 (BEIR, Elasticsearch), 0.686 (bm25s), 0.6886 (Qdrant)",
    "dense": "all-MiniLM-L6-v2: 0.6239 (Qdrant), 0.645 (shared fp32 vectors), 0.647 (int8 ONNX)",
    "hybrid": "RRF: 0.717 (bm25s + shared fp32 vectors, k 60, depth 100), "
    "0.7175 (Qdrant, k 2, 200 candidates)",
}


# -- data ----------------------------------------------------------------------------------


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as lines:
        next(lines)  # header
        for line in lines:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def reference_table(data: Path, corpus: pa.Table) -> tuple[pa.Table, dict[str, np.ndarray]] | None:
    """``corpus`` (id, body) with the shared fp32-model vectors as ``embedding``, and the
    shared query vectors by query id; ``None`` if ``<data>/vectors`` is missing."""
    vectors = data / "vectors"
    if not (vectors / "doc_vectors.f16.npy").exists():
        return None

    def unit(path: Path) -> np.ndarray:
        matrix = np.load(path).astype(np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    doc_ids = (vectors / "doc_ids.txt").read_text(encoding="utf-8").split()
    query_ids = (vectors / "query_ids.txt").read_text(encoding="utf-8").split()
    documents = unit(vectors / "doc_vectors.f16.npy")
    queries = unit(vectors / "query_vectors.f16.npy")
    row_of = {doc_id: row for row, doc_id in enumerate(doc_ids)}
    order = np.array([row_of[doc_id] for doc_id in corpus.column("id").to_pylist()])
    matrix = documents[order]
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    table = pa.table(
        {
            "id": corpus.column("id"),
            "body": corpus.column("body"),
            "embedding": embedding.cast(pa.list_(pa.float32())),
        }
    )
    return table, dict(zip(query_ids, queries))


# -- runs ----------------------------------------------------------------------------------


def hybrid(
    table: str, vector_column: str, depth: int | None, limit: int = LIMIT
) -> Callable[[str, Sequence[float]], SearchPlan]:
    def plan(text: str, vector: Sequence[float]) -> SearchPlan:
        return SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table=table, column="body", query_text=text),
                    NearestNeighborSearch(table=table, column=vector_column, query_vector=vector),
                ],
                depth=depth,
            ),
            columns=["id"],
            limit=limit,
        )

    return plan


def run_mode(
    engine: LocalEngine,
    make_plan: Callable[[str, Sequence[float]], SearchPlan],
    queries: dict[str, str],
    vectors: dict[str, Sequence[float]],
) -> tuple[dict[str, list[str]], list[float]]:
    """Every query's ranked keys, and each search's latency in ms."""
    ranked: dict[str, list[str]] = {}
    latencies: list[float] = []
    for query_id, text in queries.items():
        plan = make_plan(text, vectors.get(query_id, ()))
        start = time.perf_counter()
        result = engine.search(plan)
        latencies.append((time.perf_counter() - start) * 1000)
        ranked[query_id] = [str(key) for key in result.keys]
    return ranked, latencies


def evaluate(qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]]) -> dict[str, float]:
    """nDCG@10 and recall@100 with ir-measures; queries without hits count as 0."""
    import ir_measures
    from ir_measures import R, nDCG

    qrel_rows = [
        ir_measures.Qrel(query_id, doc_id, relevance)
        for query_id, judged in qrels.items()
        for doc_id, relevance in judged.items()
    ]
    run = [
        ir_measures.ScoredDoc(query_id, doc_id, float(RANK_BASE - rank))
        for query_id, keys in ranked.items()
        for rank, doc_id in enumerate(keys, start=1)
    ]
    result = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrel_rows, run)
    return {"ndcg10": float(result[nDCG @ 10]), "recall100": float(result[R @ 100])}


# -- report --------------------------------------------------------------------------------


def report(results: dict[str, Any], when: str) -> str:
    rows = results["rows"]
    lines = [
        f"Measured {when} on {_report.machine()}; "
        f"load average {results['load_average']} at the start.",
        f"Embedder `{results['embedder']}`; metrics by ir-measures "
        f"{_report.package_version('ir-measures')} (pytrec_eval provider).",
        f"Command: `{_report.command()}`, from the repository root.",
        "",
        f"BEIR SciFact test split: {results['queries']} claims, {results['documents']:,} "
        "abstracts, every search through `LocalEngine.search`.",
        "",
        "| mode | plan | nDCG@10 | recall@100 | median ms / query | anchors (nDCG@10) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        recall = "-" if row["recall100"] is None else f"{row['recall100']:.4f}"
        lines.append(
            f"| {row['mode']} | {row['plan']} | {row['ndcg10']:.4f} | {recall} "
            f"| {row['median_ms']:,.1f} | {ANCHORS.get(row['anchor'], '')} |"
        )
    acceptance = results["acceptance"]
    verdict = "met" if acceptance["met"] else "not met"
    lines += [
        "",
        f"**Acceptance** (hybrid nDCG@10 >= the better of text and semantic): **{verdict}**: "
        f"hybrid {acceptance['hybrid']:.4f} (default depth, `limit` 100) vs "
        f"max(text {acceptance['text']:.4f}, semantic {acceptance['semantic']:.4f}).",
        "",
        "- `limit` 100 everywhere except the `limit` 10 row, whose recall@100 is not defined.",
        "- depth: candidates per branch; the default is `max(4 * limit, 20)`.",
        "- anchors: published figures (BEIR paper, bm25s, Qdrant) and those recorded with the "
        "shared SciFact vectors (pytrec-eval).",
        f"- semantic vs nearest: the same ranking in {results['same_semantic']} of "
        f"{results['queries']} claims (engine-side vs caller-side query embedding).",
        f"- load: `load_table` of the corpus took {results['load_s']:.1f} s "
        f"({results['load_note']}).",
    ]
    if results.get("reference_note"):
        lines.append(f"- {results['reference_note']}")
    return "\n".join(lines)


# -- main ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact directory")
    parser.add_argument(
        "--db", type=Path, default=DEFAULT_DB, help=f"database directory (default {DEFAULT_DB})"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--write", type=Path, metavar="PATH", help="rewrite the marked section of this file"
    )
    options = parser.parse_args(argv)

    from hotdata_retrieval.embed import default_embedder

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = _report.load_average()
    source = read_source(options.data)
    corpus = source.tables["corpus"]
    qrels = read_qrels(options.data / "qrels" / "test.tsv")
    all_queries = dict(
        zip(
            source.tables["queries"].column("id").to_pylist(),
            source.tables["queries"].column("text").to_pylist(),
        )
    )
    queries = {query_id: all_queries[query_id] for query_id in sorted(qrels, key=int)}

    embedder = default_embedder()
    engine = LocalEngine(options.db, embedder=embedder)
    try:
        previous = engine.tables.get(TABLE)
        cached = previous is not None and any(
            vector.model == str(embedder.name) for vector in previous.vector_columns
        )
        print(f"loading {corpus.num_rows:,} documents into {options.db} ...", file=sys.stderr)
        start = time.perf_counter()
        engine.load_table(
            TABLE,
            corpus.select(["id", "title", "text", "body"]),
            key_column="id",
            text_columns=["body"],
            embed_columns=["body"],
            progress=True,
        )
        load_s = time.perf_counter() - start
        load_note = (
            "vectors reused from the database's embedding cache"
            if cached
            else "BM25 index and embedding every abstract"
        )

        print("embedding the claims ...", file=sys.stderr)
        vectors = {
            query_id: [float(x) for x in embedder.embed_query(text)]
            for query_id, text in queries.items()
        }
        modes: list[tuple[str, str, str, int, Callable[[str, Sequence[float]], SearchPlan]]] = [
            (
                "text",
                "`Bm25Search`",
                "text",
                LIMIT,
                lambda text, _v: SearchPlan(
                    source=Bm25Search(table=TABLE, column="body", query_text=text),
                    columns=["id"],
                    limit=LIMIT,
                ),
            ),
            (
                "semantic",
                "`VectorSearch` (engine embeds the claim)",
                "dense",
                LIMIT,
                lambda text, _v: SearchPlan(
                    source=VectorSearch(table=TABLE, column="body", query_text=text),
                    columns=["id"],
                    limit=LIMIT,
                ),
            ),
            (
                "nearest",
                "`NearestNeighborSearch` (claim embedded by the caller)",
                "dense",
                LIMIT,
                lambda _t, vector: SearchPlan(
                    source=NearestNeighborSearch(
                        table=TABLE, column="body_embedding", query_vector=vector
                    ),
                    columns=["id"],
                    limit=LIMIT,
                ),
            ),
            (
                "hybrid",
                "RRF(text, nearest), k 60, depth 400 (default)",
                "hybrid",
                LIMIT,
                hybrid(TABLE, "body_embedding", None),
            ),
            (
                "hybrid",
                "RRF(text, nearest), k 60, depth 100",
                "hybrid",
                LIMIT,
                hybrid(TABLE, "body_embedding", 100),
            ),
            (
                "hybrid",
                "RRF(text, nearest), k 60, `limit` 10, depth 40 (default)",
                "hybrid",
                10,
                hybrid(TABLE, "body_embedding", None, limit=10),
            ),
        ]
        rows: list[dict[str, Any]] = []
        ranked_by_mode: dict[str, dict[str, list[str]]] = {}

        def record(
            mode: str,
            plan: str,
            anchor: str,
            limit: int,
            make_plan: Callable[[str, Sequence[float]], SearchPlan],
            query_vectors: dict[str, Sequence[float]],
        ) -> None:
            print(f"{mode}: {plan} ...", file=sys.stderr)
            ranked, latencies = run_mode(engine, make_plan, queries, query_vectors)
            scores = evaluate(qrels, ranked)
            ranked_by_mode[f"{mode}: {plan}"] = ranked
            rows.append(
                {
                    "mode": mode,
                    "plan": plan,
                    "anchor": anchor,
                    "ndcg10": scores["ndcg10"],
                    "recall100": scores["recall100"] if limit >= 100 else None,
                    "median_ms": statistics.median(latencies),
                }
            )
            print(
                f"  nDCG@10 {scores['ndcg10']:.4f}  recall@100 {scores['recall100']:.4f}",
                file=sys.stderr,
            )

        for mode, plan, anchor, limit, make_plan in modes:
            record(mode, plan, anchor, limit, make_plan, vectors)

        reference_note = ""
        reference = reference_table(options.data, corpus)
        if reference is None:
            reference_note = (
                f"no precomputed vectors in {options.data / 'vectors'}: reference rows skipped."
            )
        else:
            table, reference_vectors = reference
            missing = sorted(set(queries) - set(reference_vectors))
            engine.load_table(REFERENCE_TABLE, table, key_column="id", text_columns=["body"])
            fp32 = {
                query_id: reference_vectors[query_id].tolist()
                for query_id in queries
                if query_id in reference_vectors
            }
            record(
                "nearest, fp32 reference",
                "`NearestNeighborSearch`, shared fp32 all-MiniLM-L6-v2 vectors",
                "dense",
                LIMIT,
                lambda _t, vector: SearchPlan(
                    source=NearestNeighborSearch(
                        table=REFERENCE_TABLE, column="embedding", query_vector=vector
                    ),
                    columns=["id"],
                    limit=LIMIT,
                ),
                fp32,
            )
            record(
                "hybrid, fp32 reference",
                "RRF(text, fp32 nearest), k 60, depth 400 (default)",
                "hybrid",
                LIMIT,
                hybrid(REFERENCE_TABLE, "embedding", None),
                fp32,
            )
            record(
                "hybrid, fp32 reference",
                "RRF(text, fp32 nearest), k 60, depth 100",
                "hybrid",
                LIMIT,
                hybrid(REFERENCE_TABLE, "embedding", 100),
                fp32,
            )
            reference_note = (
                f"fp32 reference: table `{REFERENCE_TABLE}` (the same `body` and BM25 index, "
                "`embedding` = the shared document vectors), queried with the shared query "
                "vectors" + (f"; {len(missing)} claims have none" if missing else "") + "."
            )
    finally:
        engine.close()

    semantic = ranked_by_mode[f"semantic: {modes[1][1]}"]
    nearest = ranked_by_mode[f"nearest: {modes[2][1]}"]
    same = sum(1 for query_id in queries if semantic[query_id] == nearest[query_id])
    best_single = max(rows[0]["ndcg10"], rows[1]["ndcg10"])
    results = {
        "embedder": str(embedder.name),
        "load_average": load,
        "queries": len(queries),
        "documents": corpus.num_rows,
        "rows": rows,
        "same_semantic": same,
        "load_s": load_s,
        "load_note": load_note,
        "reference_note": reference_note,
        "acceptance": {
            "text": rows[0]["ndcg10"],
            "semantic": rows[1]["ndcg10"],
            "hybrid": rows[3]["ndcg10"],
            "met": rows[3]["ndcg10"] >= best_single,
        },
    }
    body = report(results, when)
    print(body)
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    if options.write is not None:
        _report.write_section(options.write, body, MARK_START, MARK_END)
        print(f"wrote {options.write}", file=sys.stderr)


if __name__ == "__main__":
    main()
