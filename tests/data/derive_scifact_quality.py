"""Derive the quality gate's fixture, ``scifact_quality.json`` and ``scifact_quality.npz``,
from the BEIR SciFact data set and its reference vectors.

The fixture is a small retrieval problem with SciFact's own difficulty: the first
:data:`QUERIES` test claims (by id, among those with reference vectors), and for each its
judged abstracts plus its hard negatives, the :data:`CANDIDATES` abstracts BM25 ranks highest
and the :data:`CANDIDATES` nearest by the reference vectors, over the whole corpus (the local
engine's ``bm25_search`` and cosine distance). Texts are ``title + " " + text``; vectors are the
data set's all-MiniLM-L6-v2 float32 vectors (mean pooling, L2-normalized, at most 256 tokens),
stored as float16 as the data set stores them. ``tests/test_quality_gate.py`` runs text,
nearest-neighbour and hybrid search over it.

Run from the repository root with the data set's directory (``corpus.jsonl``,
``queries.jsonl``, ``qrels/test.tsv``, ``vectors/``)::

    python tests/data/derive_scifact_quality.py PATH/TO/scifact

SciFact: Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020, as
packaged by BEIR (Thakur et al., 2021); licence CC BY-NC 2.0 (Allen Institute for AI).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

QUERIES = 30
CANDIDATES = 5
OUTPUT = Path(__file__).with_name("scifact_quality.json")
VECTORS = Path(__file__).with_name("scifact_quality.npz")

SOURCE = (
    "BEIR SciFact (Wadden et al., EMNLP 2020; Thakur et al., 2021), CC BY-NC 2.0, Allen "
    "Institute for AI: the first test claims with their judged abstracts and hard negatives "
    "(BM25 and nearest top candidates over the whole corpus), all-MiniLM-L6-v2 vectors stored "
    "as float16; derived by derive_scifact_quality.py"
)


def derive(directory: Path) -> None:
    import numpy as np
    import pyarrow as pa

    from hotdata_retrieval import Bm25Search, NearestNeighborSearch, SearchPlan
    from hotdata_retrieval.engines.local import LocalEngine

    vectors = directory / "vectors"
    doc_ids = (vectors / "doc_ids.txt").read_text().split()
    query_ids = (vectors / "query_ids.txt").read_text().split()
    doc_vectors = np.load(vectors / "doc_vectors.f16.npy")
    query_vectors = np.load(vectors / "query_vectors.f16.npy")
    row_of = {identifier: row for row, identifier in enumerate(doc_ids)}
    query_row = {identifier: row for row, identifier in enumerate(query_ids)}

    corpus = {}
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            corpus[str(record["_id"])] = f"{record['title']} {record['text']}"
    claims = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            claims[str(record["_id"])] = record["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t")):
            if number:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    chosen = sorted((q for q in qrels if q in query_row), key=int)[:QUERIES]

    def unit(matrix: np.ndarray) -> np.ndarray:
        matrix = matrix.astype(np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    ids = [identifier for identifier in doc_ids if identifier in corpus]
    table = pa.table(
        {
            "id": ids,
            "body": [corpus[identifier] for identifier in ids],
            "embedding": pa.array(
                list(unit(doc_vectors[[row_of[i] for i in ids]])), pa.list_(pa.float32())
            ),
        }
    )
    keep: set[str] = set()
    with LocalEngine() as engine:
        engine.load_table("corpus", table, text_columns=["body"])
        for query in chosen:
            keep |= set(qrels[query])
            vector = unit(query_vectors[[query_row[query]]])[0]
            for branch in (
                Bm25Search(table="corpus", column="body", query_text=claims[query]),
                NearestNeighborSearch(
                    table="corpus", column="embedding", query_vector=[float(x) for x in vector]
                ),
            ):
                result = engine.search(SearchPlan(source=branch, limit=CANDIDATES))
                keep |= {str(key) for key in result.keys}
    documents = [identifier for identifier in ids if identifier in keep]
    OUTPUT.write_text(
        json.dumps(
            {
                "source": SOURCE,
                "model": "sentence-transformers/all-MiniLM-L6-v2, float32, stored as float16",
                "documents": [{"id": i, "body": corpus[i]} for i in documents],
                "queries": [{"id": q, "text": claims[q]} for q in chosen],
                "qrels": [[q, d, g] for q in chosen for d, g in sorted(qrels[q].items())],
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    np.savez_compressed(
        VECTORS,
        documents=doc_vectors[[row_of[i] for i in documents]],
        queries=query_vectors[[query_row[q] for q in chosen]],
    )
    print(f"{len(chosen)} queries, {len(documents)} documents", file=sys.stderr)


if __name__ == "__main__":
    derive(Path(sys.argv[1]))
