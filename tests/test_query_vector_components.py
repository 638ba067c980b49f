"""A query vector must hold numbers: booleans (Python's or NumPy's) and texts such as
``"1"``, which ``float`` and NumPy would read as 1.0 and 0.0, are refused with a
:class:`PlanError` naming the value and its position (``position N of M``, counted from 1 as
rows are) at every door that takes a query vector: a plan's ``NearestNeighborSearch``, the
plan document, the vector-literal builder, ``DocumentStore`` (its nearest and hybrid
searches, and the vectors of the documents it adds), the LangChain and LlamaIndex vector
stores, and ``hdq explain --vector``. The MCP and DDN tools take text, never a vector.

The reference for an accepted vector is Python's own reading of its numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from langchain_core.embeddings import DeterministicFakeEmbedding
from llama_index.core.vector_stores.types import VectorStoreQuery

from hotdata_retrieval import NearestNeighborSearch, PlanError, builders
from hotdata_retrieval.adapters.langchain import HotdataVectorStore as LangchainStore
from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore as LlamaindexStore
from hotdata_retrieval.cli import main
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.document import plan_from_document

BAD = [
    ([True, False], "position 1 of 2 is True"),
    ([1.0, False], "position 2 of 2 is False"),
    (["1", "2"], "position 1 of 2 is '1'"),
    ([0.5, b"2"], "position 2 of 2 is b'2'"),
    (np.array([True, False]), "position 1 of 2 is True"),
    ([np.bool_(False), 1.0], "position 1 of 2 is False"),
    (np.array(["1", "2"]), "position 1 of 2 is '1'"),
]
"""Vectors ``float`` reads as numbers, with the words naming their first bad component."""

GOOD = [[1, 2.5], (0.5, -1), np.array([1.0, 2.0], dtype=np.float32), [np.int64(3), np.float32(4)]]


@pytest.mark.parametrize(("vector", "words"), BAD)
def test_a_plan_refuses_them(vector: Any, words: str) -> None:
    with pytest.raises(PlanError, match=f"must hold numbers; {_escaped(words)}") as raised:
        NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
    assert raised.value.field == "query_vector"
    with pytest.raises(PlanError, match=_escaped(words)):
        builders.vector_literal(vector)


@pytest.mark.parametrize("vector", GOOD)
def test_numbers_of_any_type_are_read_as_python_reads_them(vector: Any) -> None:
    branch = NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
    assert branch.query_vector == tuple(float(x) for x in list(vector))


@pytest.mark.parametrize(
    ("vector", "words"),
    [([True, 1.0], "position 1 of 2 is boolean True"), ([1, "2"], "position 2 of 2 is string")],
)
def test_a_plan_document_refuses_them(vector: list[Any], words: str) -> None:
    document = {
        "table": "docs",
        "branches": [{"kind": "nearest", "column": "embedding", "query_vector": vector}],
    }
    with pytest.raises(PlanError, match=words):
        plan_from_document(document)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    engine = LocalEngine(tmp_path)
    documents = DocumentStore(engine, "docs")
    documents.add(["a", "b"], ["disk full", "network down"], [[1.0, 0.0], [0.6, 0.8]])
    yield documents
    engine.close()


@pytest.mark.parametrize(("vector", "words"), BAD)
def test_the_document_store_and_the_vector_stores_refuse_them(
    store: DocumentStore, vector: Any, words: str
) -> None:
    searches = [
        lambda: store.nearest(vector, k=1),
        lambda: store.hybrid_search("disk", vector, k=1),
        lambda: LangchainStore(
            store.engine, "docs", DeterministicFakeEmbedding(size=2)
        ).similarity_search_by_vector(vector, k=1),
        lambda: LlamaindexStore(store.engine, "nodes").query(
            VectorStoreQuery(query_embedding=vector, similarity_top_k=1)
        ),
    ]
    for search in searches:
        with pytest.raises(PlanError, match=_escaped(words)):
            search()


@pytest.mark.parametrize(("vector", "words"), BAD)
def test_the_document_store_refuses_them_as_a_documents_vector(
    store: DocumentStore, vector: Any, words: str
) -> None:
    with pytest.raises(
        PlanError, match=f"its vector must hold numbers; {_escaped(words)}"
    ) as raised:
        store.add(["c"], ["c text"], [vector])
    assert raised.value.value == "c"
    assert [document.id for document in store.get(["a", "b", "c"])] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "words"),
    [("[true, 1]", "position 1 of 2 is True"), ('[1, "2"]', "position 2 of 2 is '2'")],
)
def test_hdq_explain_refuses_them(text: str, words: str) -> None:
    arguments = ["explain", "--table", "docs", "--vector-column", "e", "--vector", text]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 1, result.output
    assert f"--vector must hold numbers; {words}" in result.stderr


def _escaped(words: str) -> str:
    import re

    return re.escape(words)


def test_a_candidate_of_another_length_is_counted_from_one() -> None:
    from hotdata_retrieval.diversity import maximal_marginal_relevance

    vectors = [[1.0, 0.0], [0.5, 0.5], [1.0]]
    with pytest.raises(
        PlanError, match=r"^candidate 3 of 3 has a vector of 1 dimension, "
    ) as raised:
        maximal_marginal_relevance([1.0, 0.0], vectors, mmr_lambda=0.5, count=2)
    assert raised.value.value == 2  # the position into the list given, as the result's
