"""Text that is not Unicode (a lone surrogate such as ``"\\ud800"``) is refused at every door
that writes or reads documents by key, with a typed error naming it, never Python's
``UnicodeEncodeError`` from inside pyarrow; and a vector store's search by meaning checks
its query text as its search by words does, before the embedder reads it.

Before: ``DocumentStore.add`` with such an id, text or metadata value, ``get`` and
``delete`` with such an id (so the LangChain and LlamaIndex stores' adds, reads and
deletes), and each engine's ``read_rows``/``delete_rows`` raised ``UnicodeEncodeError``; the
LangChain store's ``similarity_search`` and maximal marginal relevance search embedded a
query of 1 MB, with a NUL byte or a lone surrogate, and answered, where ``hybrid_search`` and
``text_search`` on the same store refused it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from langchain_core.embeddings import Embeddings

from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine, TableLoad
from hotdata_retrieval.errors import EngineError, InputLimitError, PlanError
from tests.parity.engines import open_engine

LONE = "\ud800"


class _Recording(Embeddings):
    """Embeds by hashing and records every text it was given."""

    def __init__(self) -> None:
        self.model = HashingEmbedder(dimensions=8)
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return self.model.embed_query(text)


@pytest.fixture
def store() -> Iterator[DocumentStore]:
    with LocalEngine() as engine:
        documents = DocumentStore(engine, "notes", filter_columns={"lang": "string"})
        documents.add(["a", "b"], ["red fox", "blue sky"], [[1.0, 0.0], [0.0, 1.0]])
        yield documents


@pytest.mark.parametrize(
    ("ids", "texts", "metadatas", "named"),
    [
        ([f"x{LONE}"], ["text"], None, "id 'x\\\\ud800' is not valid Unicode"),
        (["c"], [f"fox {LONE}"], None, "document 'c': its text is not valid Unicode"),
        (["c"], ["text"], [{"lang": LONE}], "document 'c': its metadata is not valid Unicode"),
        (["c"], ["text"], [{LONE: 1}], "document 'c': its metadata is not valid Unicode"),
    ],
)
def test_an_add_refuses_text_that_is_not_unicode(
    store: DocumentStore, ids: list[str], texts: list[str], metadatas: Any, named: str
) -> None:
    with pytest.raises(PlanError, match=named):
        store.add(ids, texts, [[1.0, 1.0]], metadatas)
    assert sorted(document.id for document in store.get(["a", "b", "c"])) == ["a", "b"]


def test_a_read_or_delete_by_such_a_key_is_refused(store: DocumentStore) -> None:
    for call in (store.get, store.delete):
        with pytest.raises(PlanError, match="is not valid Unicode: a lone surrogate"):
            call(["a", LONE])
    assert len(store) == 2


@pytest.mark.parametrize("name", ["local", "sqlite", "duckdb", "lancedb", "turbopuffer"])
def test_every_engine_refuses_such_a_key_by_its_key_rule(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    engine = open_engine(name, tmp_path, request)
    try:
        rows = pa.table({"id": ["a", "b"], "body": ["red fox", "blue sky"]})
        load = TableLoad(name="docs", data=rows, key_column="id", text_columns=("body",))
        engine.upsert_rows("docs", rows, create=load)
        for call in (
            lambda: engine.read_rows("docs", ["a", LONE], ["id"]),
            lambda: engine.delete_rows("docs", [LONE]),
        ):
            with pytest.raises(EngineError, match="it is not Unicode text"):
                call()
        assert sorted(engine.read_rows("docs", ["a", "b"], ["id"]).column(0).to_pylist()) == [
            "a",
            "b",
        ]
    finally:
        engine.close()


def test_the_langchain_store_checks_texts_and_queries_before_embedding() -> None:
    from hotdata_retrieval.adapters.langchain import HotdataVectorStore

    embedder = _Recording()
    with LocalEngine() as engine:
        vectors = HotdataVectorStore(engine, "notes", embedder)
        vectors.add_texts(["red fox", "blue sky"], ids=["a", "b"])
        embedder.seen.clear()
        with pytest.raises(PlanError, match=r"texts\[1\] is not valid Unicode"):
            vectors.add_texts(["fine", LONE])
        searches = [
            vectors.similarity_search,
            vectors.similarity_search_with_score,
            vectors.max_marginal_relevance_search,
            vectors.hybrid_search,
            vectors.text_search,
        ]
        for search in searches:
            for query, refusal in (
                (LONE, PlanError),
                ("fox\x00", PlanError),
                ("fox " * 300, InputLimitError),
                ("x" * (1 << 20), InputLimitError),
            ):
                with pytest.raises(refusal):
                    search(query, k=1)
        assert embedder.seen == []
        assert [document.id for document in vectors.similarity_search("fox", k=1)] == ["a"]


def test_the_llamaindex_hybrid_retriever_checks_the_question_before_embedding() -> None:
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    from hotdata_retrieval.adapters.llamaindex import HotdataHybridRetriever, HotdataVectorStore

    class _Counting(MockEmbedding):
        calls: int = 0

        def _get_query_embedding(self, query: str) -> list[float]:
            self.calls += 1
            return super()._get_query_embedding(query)

    model = _Counting(embed_dim=2)
    with LocalEngine() as engine:
        nodes = HotdataVectorStore(engine, "nodes")
        nodes.add([TextNode(id_="a", text="red fox", embedding=[1.0, 0.0])])
        retriever = HotdataHybridRetriever(nodes, embed_model=model, similarity_top_k=1)
        with pytest.raises(PlanError, match="not valid Unicode"):
            retriever.retrieve(LONE)
        with pytest.raises(InputLimitError):
            retriever.retrieve("x" * (1 << 20))
        assert model.calls == 0
        assert [hit.node.node_id for hit in retriever.retrieve("fox")] == ["a"]
