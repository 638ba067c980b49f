"""Document-level retrieval quality over passages: a search grouped by its parent document
(``group_by``) against the same search de-duplicated by the client, LanceDB and Qdrant.

Run from the repository root (needs ``pip install 'hotdata-retrieval[bench]'``, which brings
LanceDB and ``qdrant-client``)::

    python benchmarks/bench_chunks.py [--data DIR] [--db-root DIR] [--documents N]
        [--sample COLLECTION=N] [--words N] [--rounds N] [--write docs/benchmarks.md]

What it does, for SciFact and Cranfield (BEIR directories in ``--data``, default
``../shared/data``; scored on ``qrels/test.tsv``, whose judgements are of documents):

1. Splits each document into passages (:func:`split_passages`): the text is cut into
   sentences after ``.``, ``!`` or ``?`` followed by white space; consecutive sentences are
   grouped greedily while the group holds at most ``--words`` words (default 100; a longer
   sentence is a passage by itself); each passage after a document's first starts with the
   previous passage's last sentence (one sentence of overlap); each passage's text is the
   document's title, a space, and its sentences. A passage's key is ``<document id>#<n>``
   (n from 0), and ``doc_id`` holds its document's id. ``--sample COLLECTION=N`` keeps N
   documents of a collection (default: all): every document a test query judges, then the
   others with the smallest BLAKE2b hash of their id, so the same N every run. Embedding is
   what costs (8 to 30 passages a second on 2 shared cores, as their load varies):
   SciFact's 16,474 passages take up to half an hour, so the recorded table used
   ``--sample scifact=1000``.
2. Loads the passages into a :class:`LocalEngine` at ``<db-root>/<collection>-w<words>-db`` (BM25 on
   ``body``, ``body`` embedded by the default offline all-MiniLM-L6-v2 into
   ``body_embedding``). The database keeps vectors by text hash, so later runs embed nothing.
   Every contender reads the same passage vectors (read back from the table) and the same
   query vectors (the queries embedded once by the same model).
3. Runs every judged test query through each contender, each returning document ids best
   first, at most 100:

   - **hybrid, group_by**: RRF of ``Bm25Search`` and ``NearestNeighborSearch`` (rank
     constant 60, the default depth), ``limit`` 100, ``group_by="doc_id"`` (one passage per
     document, groups ranked by their best passage).
   - **hybrid, de-duplicated**: the same fusion without grouping, ``limit`` the default
     depth (the most rows a depth of that size allows), its rows de-duplicated by the client
     (a document at its first passage's place), the first 100 documents kept.
   - **LanceDB hybrid**: its native full-text index with its default analysis, cosine
     vector search, its ``RRFReranker`` (rank constant 60), ``limit`` the default depth,
     de-duplicated the same way.
   - **Qdrant local, groups**: ``QdrantClient(":memory:")`` (qdrant-client's local mode, no
     server), ``query_points_groups`` with ``group_by="doc_id"``, ``group_size`` 1,
     ``limit`` 100, over an RRF (``FusionQuery``) of two prefetches of the default depth:
     the dense vectors (cosine) and a BM25 sparse vector (:func:`bm25_sparse`: the library's
     analyzed terms, term weights ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``
     with k1 1.2 and b 0.75, Qdrant's ``Modifier.IDF`` supplying the IDF; a query term
     weighs 1). Qdrant scores rank r (from 1) ``1 / (k - 1 + r)``
     (``qdrant_client/hybrid/fusion.py``): its k 60 is the library's rank constant 59.

   The runs go side by side: each query ``--rounds`` times (default 3) by every contender,
   in a rotating order; a query's latency is the median of its rounds, and each contender's
   latency is reported as the median over the queries of its ratio to ``hybrid, group_by``
   (the machine's load lands on all of them alike; absolute times are not reported).
4. Scores every run with ir-measures (trec_eval's nDCG@10 and recall@100 over documents; a
   query with no hits counts as 0), with 95% bootstrap intervals of the paired difference
   from ``hybrid, group_by`` (1,000 resamples of the queries, seed 0).

This script reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _report  # the scripts' shared reporting helpers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from hotdata_retrieval import tuning  # noqa: E402
from hotdata_retrieval.analysis import normalize_text, text_analyzer  # noqa: E402
from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402
from hotdata_retrieval.engines.local.loading import read_source  # noqa: E402
from hotdata_retrieval.plan.search import (  # noqa: E402
    DEFAULT_DEPTH,
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)

DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_DB_ROOT = Path("/tmp/hdq-chunks")
COLLECTIONS = ("scifact", "cranfield")
LIMIT = 100
TABLE = "passages"
RANK_CONSTANT = 60
K1 = 1.2
B = 0.75
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MARK_START = "<!-- chunk-benchmark:start -->"
MARK_END = "<!-- chunk-benchmark:end -->"
GROUPED = "hybrid, group_by"
Run = dict[str, list[str]]


def split_passages(title: str, text: str, words: int) -> list[str]:
    """A document's passages: sentences (cut after ``.``, ``!`` or ``?`` and white space)
    grouped greedily while a group holds at most ``words`` words (a longer sentence stands
    alone), each passage after the first starting with the previous one's last sentence,
    each prefixed with ``title`` and a space. A document with no text gives one passage."""
    sentences = [s for s in SENTENCE_END.split(text.strip()) if s]
    prefix = f"{title} " if title else ""
    if not sentences:
        return [prefix.strip()]
    passages: list[str] = []
    start = 0
    while True:
        end = start + 1
        count = len(sentences[start].split())
        while end < len(sentences) and count + len(sentences[end].split()) <= words:
            count += len(sentences[end].split())
            end += 1
        passages.append(prefix + " ".join(sentences[start:end]))
        if end >= len(sentences):
            return passages
        # One sentence of overlap, unless the passage was that one sentence.
        start = end - 1 if end - 1 > start else end


def _hash(key: str) -> bytes:
    return hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()


def _distinct(doc_ids: Sequence[str]) -> list[str]:
    """The documents of ranked passages, each at its first passage's place, at most 100."""
    seen: dict[str, None] = {}
    for doc_id in doc_ids:
        seen.setdefault(doc_id, None)
        if len(seen) == LIMIT:
            break
    return list(seen)


def bm25_sparse(
    terms: list[list[str]], vocabulary: dict[str, int]
) -> list[tuple[list[int], list[float]]]:
    """BM25 term weights without IDF (k1 :data:`K1`, b :data:`B`) of analyzed documents, as
    sparse (indices, values) rows; new terms are added to ``vocabulary``."""
    average = sum(len(t) for t in terms) / max(1, len(terms))
    rows = []
    for document in terms:
        counts = Counter(document)
        norm = K1 * (1 - B + B * len(document) / max(average, 1e-9))
        indices = [vocabulary.setdefault(term, len(vocabulary)) for term in counts]
        values = [tf * (K1 + 1) / (tf + norm) for tf in counts.values()]
        rows.append((indices, values))
    return rows


def _qdrant(
    doc_ids: list[str],
    matrix: np.ndarray,
    bodies: list[str],
    analyze: Callable[[str], list[str]],
) -> tuple[Callable[[str, np.ndarray], list[str]], str]:
    """A search function over an in-memory Qdrant collection of the passages, and what it
    does (named in the report)."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "passages",
        vectors_config={
            "dense": models.VectorParams(size=matrix.shape[1], distance=models.Distance.COSINE)
        },
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    vocabulary: dict[str, int] = {}
    sparse = bm25_sparse([analyze(body) for body in bodies], vocabulary)
    client.upload_points(
        "passages",
        [
            models.PointStruct(
                id=row,
                vector={
                    "dense": matrix[row].tolist(),
                    "bm25": models.SparseVector(indices=sparse[row][0], values=sparse[row][1]),
                },
                payload={"doc_id": doc_ids[row]},
            )
            for row in range(len(doc_ids))
        ],
        batch_size=512,
    )
    fusion: Any = models.FusionQuery(fusion=models.Fusion.RRF)
    what = "`FusionQuery(RRF)`, Qdrant's default rank constant"
    if hasattr(models, "RrfQuery") and hasattr(models, "Rrf"):
        fusion = models.RrfQuery(rrf=models.Rrf(k=RANK_CONSTANT))
        what = f"`RrfQuery(Rrf(k={RANK_CONSTANT}))`"

    def search(text: str, vector: np.ndarray) -> list[str]:
        terms = sorted({vocabulary[t] for t in analyze(text) if t in vocabulary})
        prefetch = [
            models.Prefetch(query=vector.tolist(), using="dense", limit=DEFAULT_DEPTH),
        ]
        if terms:
            prefetch.append(
                models.Prefetch(
                    query=models.SparseVector(indices=terms, values=[1.0] * len(terms)),
                    using="bm25",
                    limit=DEFAULT_DEPTH,
                )
            )
        groups = client.query_points_groups(
            "passages",
            prefetch=prefetch,
            query=fusion,
            group_by="doc_id",
            group_size=1,
            limit=LIMIT,
        ).groups
        return [str(group.id) for group in groups]

    return search, what


def _lancedb(
    keys: list[str], doc_ids: list[str], bodies: list[str], matrix: np.ndarray, directory: str
) -> Callable[[str, np.ndarray], list[str]]:
    import lancedb
    from lancedb.index import FTS
    from lancedb.rerankers import RRFReranker

    table = lancedb.connect(directory).create_table(
        "passages",
        pa.table(
            {
                "id": keys,
                "doc_id": doc_ids,
                "body": bodies,
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(matrix.reshape(-1), type=pa.float32()), matrix.shape[1]
                ),
            }
        ),
    )
    table.create_index("body", config=FTS())
    reranker = RRFReranker(K=RANK_CONSTANT)

    def search(text: str, vector: np.ndarray) -> list[str]:
        rows = (
            table.search(query_type="hybrid")
            .vector(vector.tolist())
            .text(text)
            .distance_type("cosine")
            .rerank(reranker)
            .limit(DEFAULT_DEPTH)
            .select(["doc_id"])
            .to_list()
        )
        return _distinct([str(row["doc_id"]) for row in rows])

    return search


def collection(
    data: Path, database: Path, *, documents: int, words: int, rounds: int
) -> dict[str, Any]:
    """One collection's rows of the table (see the module's docstring)."""
    from hotdata_retrieval.embed import default_embedder

    source = read_source(data)
    corpus = source.tables["corpus"]
    qrels, _ = tuning.load_qrels(data, split="test")
    texts = dict(
        zip(
            [str(i) for i in source.tables["queries"].column("id").to_pylist()],
            source.tables["queries"].column("text").to_pylist(),
        )
    )
    query_ids = sorted((q for q in qrels if q in texts), key=lambda q: (len(q), q))
    queries = {q: texts[q] for q in query_ids}
    ids = [str(i) for i in corpus.column("id").to_pylist()]
    titles = [t or "" for t in corpus.column("title").to_pylist()]
    bodies_of = [t or "" for t in corpus.column("text").to_pylist()]
    kept = list(range(len(ids)))
    if documents and documents < len(ids):
        judged = {doc for judgements in qrels.values() for doc in judgements}
        kept = sorted(kept, key=lambda row: (ids[row] not in judged, _hash(ids[row])))
        kept = sorted(kept[:documents])
    keys: list[str] = []
    parents: list[str] = []
    passages: list[str] = []
    for row in kept:
        for number, passage in enumerate(split_passages(titles[row], bodies_of[row], words)):
            keys.append(f"{ids[row]}#{number}")
            parents.append(ids[row])
            passages.append(passage)
    embedder = default_embedder()
    with LocalEngine(database, embedder=embedder) as engine:
        entry = engine.tables.get(TABLE)
        if entry is None or entry.rows != len(keys):
            print(
                f"loading {len(keys):,} passages of {len(kept):,} {data.name} documents "
                f"into {database} ...",
                file=sys.stderr,
            )
            engine.load_table(
                TABLE,
                pa.table({"id": keys, "doc_id": parents, "body": passages}),
                key_column="id",
                text_columns=["body"],
                embed_columns=["body"],
                progress=True,
            )
        stored = engine.read_table(TABLE, ["id", "doc_id", "body", "body_embedding"])
        keys = [str(k) for k in stored.column("id").to_pylist()]
        parents = [str(d) for d in stored.column("doc_id").to_pylist()]
        passages = [b or "" for b in stored.column("body").to_pylist()]
        embedded = stored.column("body_embedding").to_pylist()
        dimension = len(next(vector for vector in embedded if vector is not None))
        matrix = np.array(
            [[0.0] * dimension if vector is None else vector for vector in embedded],
            dtype=np.float32,
        )
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        vectors = {
            q: np.asarray(embedder.embed_query(t), dtype=np.float32) for q, t in queries.items()
        }

        def fusion(text: str, vector: np.ndarray) -> ReciprocalRankFusion:
            return ReciprocalRankFusion(
                branches=[
                    Bm25Search(table=TABLE, column="body", query_text=text),
                    NearestNeighborSearch(
                        table=TABLE, column="body_embedding", query_vector=vector.tolist()
                    ),
                ],
                rank_constant=RANK_CONSTANT,
            )

        def grouped(text: str, vector: np.ndarray) -> list[str]:
            plan = SearchPlan(
                source=fusion(text, vector), columns=["id"], limit=LIMIT, group_by="doc_id"
            )
            return [str(row["doc_id"]) for row in engine.search(plan).to_list()]

        def deduplicated(text: str, vector: np.ndarray) -> list[str]:
            plan = SearchPlan(
                source=fusion(text, vector), columns=["id", "doc_id"], limit=DEFAULT_DEPTH
            )
            return _distinct([str(row["doc_id"]) for row in engine.search(plan).to_list()])

        analyzer = text_analyzer()

        def analyze(text: str) -> list[str]:
            return list(analyzer.analyze(normalize_text(text)))

        print(f"{data.name}: building LanceDB and Qdrant ...", file=sys.stderr)
        with tempfile.TemporaryDirectory() as directory:
            qdrant, qdrant_what = _qdrant(parents, matrix, passages, analyze)
            contenders: dict[str, tuple[str, Callable[[str, np.ndarray], list[str]]]] = {
                GROUPED: (
                    f"RRF k {RANK_CONSTANT}, depth {DEFAULT_DEPTH}, `limit` {LIMIT}, "
                    "`group_by='doc_id'`",
                    grouped,
                ),
                "hybrid, de-duplicated": (
                    f"the same fusion, `limit` {DEFAULT_DEPTH}, first {LIMIT} distinct documents",
                    deduplicated,
                ),
                "LanceDB hybrid, de-duplicated": (
                    f"native FTS + cosine, `RRFReranker` k {RANK_CONSTANT}, `limit` "
                    f"{DEFAULT_DEPTH}, first {LIMIT} distinct documents",
                    _lancedb(keys, parents, passages, matrix, directory),
                ),
                "Qdrant local, `query_points_groups`": (
                    f"dense + BM25 sparse prefetch ({DEFAULT_DEPTH} each), {qdrant_what}, "
                    f"`group_by='doc_id'`, `limit` {LIMIT}",
                    qdrant,
                ),
            }
            print(
                f"{data.name}: {len(contenders)} contenders, {len(query_ids)} queries, "
                "side by side ...",
                file=sys.stderr,
            )
            runs, latencies = _side_by_side(contenders, queries, vectors, rounds)
    samples = tuning.bootstrap_samples(len(query_ids))
    values = {name: _measure(qrels, run, query_ids) for name, run in runs.items()}
    base = values[GROUPED]
    rows = []
    for name, (what, _search) in contenders.items():
        ratios = [mine / ref for mine, ref in zip(latencies[name], latencies[GROUPED])]
        row: dict[str, Any] = {"name": name, "what": what, "latency": statistics.median(ratios)}
        for measure in tuning.MEASURES:
            row[measure] = float(np.mean(values[name][measure]))
            row[f"Δ {measure}"] = tuning.estimate(
                values[name][measure] - base[measure], samples
            ).document()
        rows.append(row)
    return {
        "collection": data.name,
        "documents": len(kept),
        "all_documents": len(ids),
        "passages": len(keys),
        "queries": len(query_ids),
        "embedder": str(embedder.name),
        "rows": rows,
    }


def _side_by_side(
    contenders: dict[str, tuple[str, Callable[[str, np.ndarray], list[str]]]],
    queries: dict[str, str],
    vectors: dict[str, np.ndarray],
    rounds: int,
) -> tuple[dict[str, Run], dict[str, list[float]]]:
    """Every contender's documents per query and per-query latency (the median of
    ``rounds``), the contenders in a rotating order; one untimed query warms each first."""
    names = list(contenders)
    first = next(iter(queries))
    for name in names:
        contenders[name][1](queries[first], vectors[first])
    runs: dict[str, Run] = {name: {} for name in names}
    latencies: dict[str, list[float]] = {name: [] for name in names}
    turn = 0
    for query_id, text in queries.items():
        times: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(rounds):
            shift = turn % len(names)
            turn += 1
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                runs[name][query_id] = contenders[name][1](text, vectors[query_id])
                times[name].append(time.perf_counter() - start)
        for name in names:
            latencies[name].append(statistics.median(times[name]))
    return runs, latencies


def _measure(qrels: dict[str, dict[str, int]], ranked: Run, query_ids: list[str]) -> Any:
    run = {
        query_id: {key: float(LIMIT * 10 - rank) for rank, key in enumerate(keys)}
        for query_id, keys in ranked.items()
    }
    return tuning.measure_run(run, qrels, query_ids)


def report(results: list[dict[str, Any]], context: dict[str, str]) -> str:
    def delta(value: dict[str, float]) -> str:
        return f"{value['mean']:+.4f} [{value['low']:+.3f}, {value['high']:+.3f}]"

    lines = [
        f"Measured {context['when']} on {context['machine']}; load average {context['load']} "
        "at the start.",
        f"Command: `{context['command']}`, from the repository root. Passages: sentences "
        f"grouped to at most {context['words']} words, one sentence of overlap, each prefixed "
        "with its document's title (`split_passages` in the script). Every contender uses the "
        "same passages, passage vectors and query vectors; metrics over documents by "
        f"ir-measures {_report.package_version('ir-measures')}; LanceDB "
        f"{_report.package_version('lancedb')}, qdrant-client "
        f"{_report.package_version('qdrant-client')} (local mode, `:memory:`).",
        "",
        f"Δ: paired difference from `{GROUPED}`, 95% bootstrap interval (1,000 resamples, "
        f"seed 0). Latency: each query {context['rounds']} times by each contender in a "
        f"rotating order; the median over the queries of the ratio to `{GROUPED}` (the "
        "machine is shared: only ratios measured side by side are reported).",
    ]
    collections = []
    for result in results:
        sample = (
            ""
            if result["documents"] == result["all_documents"]
            else f" of {result['all_documents']:,} (every judged document, the rest by hash of id)"
        )
        collections.append(
            f"{result['collection']}: {result['documents']:,} documents{sample}, "
            f"{result['passages']:,} passages, {result['queries']} judged test queries"
        )
    lines += [
        "",
        "; ".join(collections) + f". Vectors: `{results[0]['embedder']}`.",
        "",
        "| collection | run | what | nDCG@10 | Δ nDCG@10 | recall@100 | Δ recall@100 "
        "| latency ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for row in result["rows"]:
            lines.append(
                f"| {result['collection']} | {row['name']} | {row['what']} "
                f"| {row['nDCG@10']:.4f} | {delta(row['Δ nDCG@10'])} | {row['R@100']:.4f} "
                f"| {delta(row['Δ R@100'])} | {row['latency']:.2f}x |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the BEIR collections")
    parser.add_argument("--db-root", type=Path, default=DEFAULT_DB_ROOT)
    parser.add_argument(
        "--collections", nargs="+", default=list(COLLECTIONS), help="collection directories"
    )
    parser.add_argument(
        "--sample",
        action="append",
        default=[],
        metavar="COLLECTION=N",
        help="keep N documents of COLLECTION: every judged one, the rest by hash (repeatable)",
    )
    parser.add_argument("--words", type=int, default=100, help="most words of a passage")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each query")
    parser.add_argument("--write", type=Path, metavar="PATH", help="rewrite its marked section")
    options = parser.parse_args(argv)
    samples: dict[str, int] = {}
    for sample in options.sample:
        name, _, count = sample.partition("=")
        if not count.isdigit() or int(count) < 1:
            parser.error(f"--sample {sample!r}: expected COLLECTION=N, N at least 1")
        samples[name] = int(count)
    if options.words < 1 or options.rounds < 1:
        parser.error("--words and --rounds must be at least 1")
    context = {
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": _report.load_average(),
        "machine": _report.machine(),
        "command": _report.command(),
        "rounds": str(options.rounds),
        "words": str(options.words),
    }
    results = [
        collection(
            options.data / name,
            options.db_root / f"{name}-w{options.words}-db",
            documents=samples.get(name, 0),
            words=options.words,
            rounds=options.rounds,
        )
        for name in options.collections
    ]
    _report.publish(report(results, context), options.write, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
