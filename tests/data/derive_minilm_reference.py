"""Derive ``minilm_reference.json`` from the BEIR SciFact data set and its reference vectors.

The reference vectors were computed with sentence-transformers' all-MiniLM-L6-v2 at float32
(mean pooling, L2-normalized, at most 256 tokens, input ``title + " " + text``) and stored as
float16. The fixture keeps the first documents of ``corpus.jsonl`` and the first test queries,
their texts as the model saw them and their vectors as the shortest decimal text that reads
back as the same float16, so ``tests/test_embed.py`` compares the int8 ONNX model with the
float32 model without the data set.

Run from the repository root, with the data set's directory (``corpus.jsonl``,
``queries.jsonl``, ``vectors/``)::

    python tests/data/derive_minilm_reference.py PATH/TO/scifact

SciFact: Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020, as
packaged by BEIR (Thakur et al., 2021); licence CC BY-NC 2.0 (Allen Institute for AI).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DOCUMENTS = 8
QUERIES = 8
OUTPUT = Path(__file__).with_name("minilm_reference.json")


def _rows(directory: Path, kind: str) -> dict[str, Any]:
    import numpy as np

    ids = (directory / "vectors" / f"{kind}_ids.txt").read_text().split()
    vectors = np.load(directory / "vectors" / f"{kind}_vectors.f16.npy")
    assert vectors.dtype == np.float16 and vectors.shape == (len(ids), 384)
    return {identifier: vectors[row] for row, identifier in enumerate(ids)}


def _vector_text(vector: Any) -> str:
    import numpy as np

    # repr of a numpy float16 is the shortest decimal that reads back as the same float16.
    values = [float(str(value)) for value in vector]
    assert np.array_equal(np.array(values, dtype=np.float16), vector)
    return "[" + ", ".join(str(np.float16(value)) for value in values) + "]"


def derive(directory: Path) -> str:
    """The fixture's JSON text."""
    documents = _rows(directory, "doc")
    queries = _rows(directory, "query")
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        corpus = [json.loads(next(handle)) for _ in range(DOCUMENTS)]
    with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
        claims = [json.loads(line) for line in handle]
    chosen = [claim for claim in claims if claim["_id"] in queries][:QUERIES]
    entries = [
        ("document", str(doc["_id"]), f"{doc['title']} {doc['text']}", documents[str(doc["_id"])])
        for doc in corpus
    ] + [("query", claim["_id"], claim["text"], queries[claim["_id"]]) for claim in chosen]
    lines = [
        "{",
        f'  "source": {json.dumps(_SOURCE)},',
        '  "model": "sentence-transformers/all-MiniLM-L6-v2, float32, stored as float16",',
        '  "items": [',
    ]
    for position, (kind, identifier, text, vector) in enumerate(entries):
        comma = "," if position < len(entries) - 1 else ""
        lines.append(
            f'    {{"kind": "{kind}", "id": {json.dumps(identifier)}, '
            f'"text": {json.dumps(text, ensure_ascii=False)},\n'
            f'     "vector": {_vector_text(vector)}}}{comma}'
        )
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


_SOURCE = (
    "BEIR SciFact (Wadden et al., EMNLP 2020; Thakur et al., 2021), CC BY-NC 2.0, Allen "
    "Institute for AI: the first documents of corpus.jsonl (title + ' ' + text) and the first "
    "test queries, with their all-MiniLM-L6-v2 vectors; derived by derive_minilm_reference.py"
)

if __name__ == "__main__":
    OUTPUT.write_text(derive(Path(sys.argv[1])), encoding="utf-8")
