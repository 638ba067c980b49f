"""LlamaIndex's own path over :class:`HotdataVectorStore`, on every engine a document table
runs on (``tests/document_engines.py``): ``VectorStoreIndex(nodes, storage_context=...)``,
``VectorStoreIndex.from_vector_store``, ``VectorStoreIndex.from_documents``,
``as_retriever`` and ``as_query_engine`` (with llama-index-core's ``MockLLM``, which answers
with its prompt, and :class:`WordHashEmbedding`, an embedding model defined here).

In every query mode the store serves (``default``, ``text_search``, ``sparse``, ``hybrid``
by reciprocal rank fusion and by ``alpha``, ``mmr``), ``as_retriever().retrieve(q)`` must
return the nodes ``store.query`` returns, with the same scores, and those of an independent
reference: for the vector modes the same index over LlamaIndex's ``SimpleVectorStore`` (an
in-memory scan); for the text modes the order of the query word's count in each node (the
nodes hold the same number of words and no two matching nodes the same count, so every BM25
ranks them so); for ``hybrid`` reciprocal rank fusion (rank constant 60, ties by node id)
of those two rankings, computed here.

Further cases follow llama-index-core's own vector-store index tests
(``llama-index-core/tests/indices/vector_store/``): ``test_retrievers.py``
(``test_simple_query``, ``test_query_and_similarity_scores``, ``test_simple_check_ids``: a
top-1 query, a score on every node, a node's id, source document and text kept),
``test_simple.py`` (``test_simple_insert``, an empty document included;
``test_simple_delete``, ``delete_ref_doc`` then a new document under the deleted id) and
``test_simple_async.py`` (``test_simple_insertion``, ``test_simple_deletion``,
``test_simple_update``: ``ainsert``, ``adelete_ref_doc``, ``aupdate_ref_doc``); each runs
here against the same steps on a ``SimpleVectorStore`` index.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
from typing import Any

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import (
    Document,
    ImageNode,
    NodeRelationship,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from hotdata_retrieval.adapters.llamaindex import (
    HotdataBM25Retriever,
    HotdataHybridRetriever,
    HotdataVectorStore,
)
from hotdata_retrieval.errors import PlanError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

DIMENSIONS = 8


def _word_vector(word: str) -> list[float]:
    digest = hashlib.sha256(word.encode()).digest()
    return [byte / 255.0 - 0.5 for byte in digest[: DIMENSIONS - 1]]


def embed(text: str) -> list[float]:
    """The sum of a fixed vector per word (bytes of the word's SHA-256) and a constant last
    coordinate, so that no text, not even an empty one, has the zero vector."""
    total = [0.0] * (DIMENSIONS - 1)
    for word in re.findall(r"\w+", text.lower()):
        total = [a + b for a, b in zip(total, _word_vector(word))]
    return [*total, 0.25]


class WordHashEmbedding(BaseEmbedding):
    """A deterministic embedding model (:func:`embed`) that downloads nothing."""

    def _get_text_embedding(self, text: str) -> list[float]:
        return embed(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return embed(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return embed(query)


EMBED_MODEL = WordHashEmbedding()

TEXTS = {
    "n0": "fox fox fox river",
    "n1": "fox fox cloud stone",
    "n2": "fox maple ember river",
    "n3": "cloud cloud stone maple",
    "n4": "river ember ember ember",
    "n5": "maple ember ember cloud",
    "n6": "stone stone maple cloud",
    "n7": "river stone maple maple",
}
SOURCES = {key: f"d{index % 3}" for index, key in enumerate(TEXTS)}
QUERIES = ("fox", "ember")
"""Single words: each is in three nodes, three, two and one times."""
RANK_CONSTANT = 60


def _nodes() -> list[TextNode]:
    return [
        TextNode(
            id_=key,
            text=text,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=SOURCES[key])},
        )
        for key, text in TEXTS.items()
    ]


def _index(vector_store: Any) -> VectorStoreIndex:
    return VectorStoreIndex(
        _nodes(),
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=EMBED_MODEL,
    )


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One engine of each kind for the module; each test keeps its nodes in a table of its
    own."""
    opened = open_document_engine(
        request.param, tmp_path_factory.mktemp(f"llamaindex-index-{request.param}"), request
    )
    opened.kind = request.param
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def built(engine: Any) -> tuple[HotdataVectorStore, VectorStoreIndex, VectorStoreIndex]:
    """The store, the index that wrote the nodes into it, and the reference index."""
    store = HotdataVectorStore(engine, fresh_table("index"))
    return store, _index(store), _index(SimpleVectorStore())


def _reference_vector_ranking(reference: VectorStoreIndex, query: str) -> list[str]:
    ranked = reference.as_retriever(similarity_top_k=len(TEXTS)).retrieve(query)
    scores = [hit.score for hit in ranked]
    # a precondition on the data: float32 storage must not reorder near-equal similarities
    assert all(a - b > 1e-4 for a, b in itertools.pairwise(scores)), scores
    return [hit.node.node_id for hit in ranked]


def _reference_text_ranking(query: str) -> list[str]:
    counts = {key: text.split().count(query) for key, text in TEXTS.items()}
    matching = [key for key, count in counts.items() if count]
    assert len({counts[key] for key in matching}) == len(matching)  # no two tie
    return sorted(matching, key=lambda key: -counts[key])


def _reference_rrf(query: str, reference: VectorStoreIndex) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for ranking in (_reference_vector_ranking(reference, query), _reference_text_ranking(query)):
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (RANK_CONSTANT + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "text_search": {"vector_store_query_mode": "text_search"},
    "sparse": {"vector_store_query_mode": "sparse"},
    "hybrid": {"vector_store_query_mode": "hybrid"},
    "hybrid alpha=1": {"vector_store_query_mode": "hybrid", "alpha": 1.0},
    "hybrid alpha=0.5": {"vector_store_query_mode": "hybrid", "alpha": 0.5},
    "mmr": {"vector_store_query_mode": "mmr", "vector_store_kwargs": {"mmr_threshold": 0.5}},
}


def _store_query(options: dict[str, Any], query: str, k: int) -> tuple[VectorStoreQuery, dict]:
    mode = VectorStoreQueryMode(options.get("vector_store_query_mode", "default"))
    vector = (
        None
        if mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)
        else embed(query)
    )
    return (
        VectorStoreQuery(
            query_embedding=vector,
            query_str=query,
            similarity_top_k=k,
            mode=mode,
            alpha=options.get("alpha"),
        ),
        options.get("vector_store_kwargs", {}),
    )


def _expected(name: str, query: str, k: int, reference: VectorStoreIndex) -> list[str]:
    """The independent reference's node ids for mode ``name``."""
    if name in ("default", "hybrid alpha=1"):
        return _reference_vector_ranking(reference, query)[:k]
    if name in ("text_search", "sparse"):
        return _reference_text_ranking(query)[:k]
    if name == "hybrid":
        return [key for key, _ in _reference_rrf(query, reference)[:k]]
    options = MODES[name]
    hits = reference.as_retriever(similarity_top_k=k, **options).retrieve(query)
    return [hit.node.node_id for hit in hits]


@pytest.mark.parametrize("name", [name for name in MODES if name != "hybrid alpha=0.5"])
def test_the_retriever_returns_the_store_s_nodes_and_the_reference_s(built, name) -> None:
    store, written, reference = built
    opened = VectorStoreIndex.from_vector_store(store, embed_model=EMBED_MODEL)
    for query in QUERIES:
        for k in (1, 3, 5):
            stored, options = _store_query(MODES[name], query, k)
            direct = store.query(stored, **options)
            expected = _expected(name, query, k, reference)
            for index in (written, opened):
                hits = index.as_retriever(similarity_top_k=k, **MODES[name]).retrieve(query)
                assert [hit.node.node_id for hit in hits] == direct.ids == expected
                assert [hit.score for hit in hits] == direct.similarities
                assert [hit.node.get_content() for hit in hits] == [TEXTS[key] for key in expected]
                assert [hit.node.ref_doc_id for hit in hits] == [SOURCES[key] for key in expected]


def test_scores_match_the_reference_in_the_default_and_hybrid_modes(built) -> None:
    store, _, reference = built
    for query in QUERIES:
        nearest = store.query(VectorStoreQuery(query_embedding=embed(query), similarity_top_k=5))
        scanned = reference.as_retriever(similarity_top_k=5).retrieve(query)
        assert nearest.similarities == pytest.approx([hit.score for hit in scanned], abs=1e-5)
        fused = store.query(
            VectorStoreQuery(
                query_embedding=embed(query),
                query_str=query,
                similarity_top_k=5,
                mode=VectorStoreQueryMode.HYBRID,
            )
        )
        expected = _reference_rrf(query, reference)[:5]
        assert fused.ids == [key for key, _ in expected]
        assert fused.similarities == pytest.approx([score for _, score in expected], rel=1e-9)


def test_hybrid_with_alpha_between_its_branches_is_the_store_s_answer(built) -> None:
    """No reference fusion of engine-independent scores exists for a mid ``alpha`` (BM25's
    scale differs per engine); the retriever must still pass the query as it is, and the
    fused nodes come from the two branches."""
    store, written, reference = built
    for query in QUERIES:
        stored, _ = _store_query(MODES["hybrid alpha=0.5"], query, 4)
        direct = store.query(stored)
        hits = written.as_retriever(similarity_top_k=4, **MODES["hybrid alpha=0.5"]).retrieve(query)
        assert [hit.node.node_id for hit in hits] == direct.ids
        assert [hit.score for hit in hits] == direct.similarities
        assert len(hits) == 4
        assert direct.ids[0] in (
            _reference_text_ranking(query)[0],
            _reference_vector_ranking(reference, query)[0],
        )


def test_empty_node_and_document_lists_restrict_nothing(built) -> None:
    store, _, reference = built
    for query in QUERIES:
        everything = VectorStoreQuery(query_embedding=embed(query), similarity_top_k=5)
        expected = _reference_vector_ranking(reference, query)[:5]
        assert store.query(everything).ids == expected
        for restriction in ({"node_ids": []}, {"doc_ids": []}, {"node_ids": [], "doc_ids": []}):
            emptied = VectorStoreQuery(
                query_embedding=embed(query), similarity_top_k=5, **restriction
            )
            assert store.query(emptied).ids == expected


def test_document_ids_given_to_the_retriever_restrict_it(built) -> None:
    _, written, reference = built
    for query in QUERIES:
        hits = written.as_retriever(similarity_top_k=8, doc_ids=["d1"]).retrieve(query)
        ranking = _reference_vector_ranking(reference, query)
        assert [hit.node.node_id for hit in hits] == [
            key for key in ranking if SOURCES[key] == "d1"
        ]


@pytest.mark.parametrize("name", ["default", "text_search", "hybrid", "mmr"])
def test_the_query_engine_answers_from_the_store_s_nodes(built, name) -> None:
    store, written, reference = built
    engine = written.as_query_engine(llm=MockLLM(), similarity_top_k=3, **MODES[name])
    for query in QUERIES:
        response = engine.query(query)
        stored, options = _store_query(MODES[name], query, 3)
        expected = store.query(stored, **options).ids
        assert [hit.node.node_id for hit in response.source_nodes] == expected
        assert expected == _expected(name, query, 3, reference)
        for key in expected:  # MockLLM answers with its prompt, which holds the context
            assert TEXTS[key] in str(response)


def test_the_async_retriever_returns_what_the_retriever_does(built) -> None:
    _, written, _ = built
    for name in ("default", "text_search", "hybrid"):
        retriever = written.as_retriever(similarity_top_k=3, **MODES[name])
        for query in QUERIES:
            hits = asyncio.run(retriever.aretrieve(query))
            assert [hit.node.node_id for hit in hits] == [
                hit.node.node_id for hit in retriever.retrieve(query)
            ]


def test_the_hybrid_retriever_is_the_reference_fusion_in_one_query(built) -> None:
    """:class:`HotdataHybridRetriever` needs no index: reciprocal rank fusion of the
    reference rankings, with its scores; with ``alpha=1``, the nearest nodes; a question given
    with its embedding is not embedded again."""
    store, _, reference = built
    for query in QUERIES:
        for k in (1, 3, 5):
            retriever = HotdataHybridRetriever(store, embed_model=EMBED_MODEL, similarity_top_k=k)
            hits = retriever.retrieve(query)
            expected = _reference_rrf(query, reference)[:k]
            assert [hit.node.node_id for hit in hits] == [key for key, _ in expected]
            assert [hit.score for hit in hits] == pytest.approx([s for _, s in expected], rel=1e-9)
            assert [hit.node.get_content() for hit in hits] == [TEXTS[key] for key, _ in expected]
            assert [hit.node.node_id for hit in asyncio.run(retriever.aretrieve(query))] == [
                hit.node.node_id for hit in hits
            ]
            vector_alone = HotdataHybridRetriever(
                store, embed_model=EMBED_MODEL, similarity_top_k=k, alpha=1.0
            ).retrieve(query)
            assert [hit.node.node_id for hit in vector_alone] == _reference_vector_ranking(
                reference, query
            )[:k]
    given = QueryBundle(query_str="fox", embedding=embed("ember"))
    unembedded = HotdataHybridRetriever(store, embed_model=None, similarity_top_k=8)
    fused = store.query(
        VectorStoreQuery(
            query_str="fox",
            query_embedding=embed("ember"),
            similarity_top_k=8,
            mode=VectorStoreQueryMode.HYBRID,
        )
    )
    assert [hit.node.node_id for hit in unembedded.retrieve(given)] == fused.ids


def test_the_bm25_retriever_ranks_by_the_query_word_with_filters(built) -> None:
    store, _, _ = built
    for query in QUERIES:
        hits = HotdataBM25Retriever(store, similarity_top_k=5).retrieve(query)
        assert [hit.node.node_id for hit in hits] == _reference_text_ranking(query)
        assert all(a.score > b.score for a, b in itertools.pairwise(hits))
        only_d2 = HotdataBM25Retriever(store, similarity_top_k=5, doc_ids=["d2"]).retrieve(query)
        assert [hit.node.node_id for hit in only_d2] == [
            key for key in _reference_text_ranking(query) if SOURCES[key] == "d2"
        ]
        ranked = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value="d0")])
        hybrid = HotdataHybridRetriever(
            store, embed_model=EMBED_MODEL, similarity_top_k=8, filters=ranked
        ).retrieve(query)
        assert {hit.node.node_id for hit in hybrid} == {
            key for key, source in SOURCES.items() if source == "d0"
        }


def test_a_retriever_refuses_a_bad_top_k_or_an_undeclared_filter(built) -> None:
    store, _, _ = built
    for top_k in (0, -1, "3"):
        with pytest.raises(PlanError, match="similarity_top_k"):
            HotdataHybridRetriever(store, embed_model=EMBED_MODEL, similarity_top_k=top_k)
    colour = MetadataFilters(filters=[MetadataFilter(key="colour", value="red")])
    with pytest.raises(PlanError, match="'colour'"):
        HotdataBM25Retriever(store, filters=colour).retrieve("fox")
    with pytest.raises(PlanError, match="doc_ids must be a list"):
        HotdataBM25Retriever(store, doc_ids="d1")


# -- llama-index-core's index tests, run against a SimpleVectorStore index -----------------

DOCUMENTS = {
    "test_id_0": "Hello world.",
    "test_id_1": "This is a test.",
    "test_id_2": "This is another test.",
    "test_id_3": "This is a test v2.",
}


def _documents() -> list[Document]:
    return [Document(text=text, id_=key) for key, text in DOCUMENTS.items()]


def _pair(engine: Any) -> tuple[VectorStoreIndex, VectorStoreIndex]:
    """The same documents in an index over this store and one over ``SimpleVectorStore``."""
    ours = VectorStoreIndex.from_documents(
        _documents(),
        storage_context=StorageContext.from_defaults(
            vector_store=HotdataVectorStore(engine, fresh_table("documents"))
        ),
        embed_model=EMBED_MODEL,
    )
    reference = VectorStoreIndex.from_documents(_documents(), embed_model=EMBED_MODEL)
    return ours, reference


def _answers(index: VectorStoreIndex, query: str, k: int = 10) -> list[tuple[str, str, float]]:
    """(source document, text, score) of each node retrieved, best first."""
    hits = index.as_retriever(similarity_top_k=k).retrieve(query)
    return [(hit.node.ref_doc_id or "", hit.node.get_content(), hit.score or 0.0) for hit in hits]


def _same_answers(ours: VectorStoreIndex, reference: VectorStoreIndex, query: str) -> None:
    found, expected = _answers(ours, query), _answers(reference, query)
    assert [row[:2] for row in found] == [row[:2] for row in expected]
    assert [row[2] for row in found] == pytest.approx([row[2] for row in expected], abs=1e-5)


QUESTIONS = ("What is?", "another test", "Hello world backup")


def test_from_documents_answers_as_the_reference_index(engine) -> None:
    """``test_simple_query`` and ``test_query_and_similarity_scores``: the top node of a query,
    each with a score."""
    ours, reference = _pair(engine)
    for query in QUESTIONS:
        _same_answers(ours, reference, query)
        (top,) = ours.as_retriever(similarity_top_k=1).retrieve(query)
        assert top.score is not None
        assert top.node.get_content() == _answers(reference, query, 1)[0][1]
    assert len(_answers(ours, "What is?")) == len(DOCUMENTS)


def test_node_ids_source_documents_and_text_are_kept(engine) -> None:
    """``test_simple_check_ids``: nodes given with ids and a source document come back with
    them."""
    source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="ref_doc_id_test")}
    nodes = [
        TextNode(text=text, id_=f"node{index}", relationships=source)
        for index, text in enumerate(DOCUMENTS.values(), start=1)
    ]
    store = HotdataVectorStore(engine, fresh_table("ids"))
    ours = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=EMBED_MODEL,
    )
    reference = VectorStoreIndex(nodes, embed_model=EMBED_MODEL)
    for query in QUESTIONS:
        (top,) = ours.as_retriever(similarity_top_k=1).retrieve(query)
        (expected,) = reference.as_retriever(similarity_top_k=1).retrieve(query)
        assert top.node.node_id == expected.node.node_id
        assert top.node.ref_doc_id == "ref_doc_id_test"
        assert top.node.get_content() == expected.node.get_content()
    assert sorted(node.node_id for node in store.get_nodes(node_ids=["node3", "node1"])) == [
        "node1",
        "node3",
    ]


def test_insert_and_an_empty_document(engine) -> None:
    """``test_simple_insert`` and ``test_simple_insertion`` (``ainsert``)."""
    ours, reference = _pair(engine)
    for index in (ours, reference):
        index.insert(Document(text="This is a test v3.", id_="test_id_4"))
        index.insert(Document(text="", id_="test_id_5"))
        asyncio.run(index.ainsert(Document(text="Hello again.", id_="test_id_6")))
    for query in (*QUESTIONS, "test v3", "again"):
        _same_answers(ours, reference, query)
    assert "test_id_4" in [row[0] for row in _answers(ours, "test v3")]


def test_delete_then_insert_under_the_deleted_id(engine) -> None:
    """``test_simple_delete`` and ``test_simple_deletion`` (``adelete_ref_doc``)."""
    ours, reference = _pair(engine)
    for index in (ours, reference):
        index.delete_ref_doc("test_id_0")
        asyncio.run(index.adelete_ref_doc("test_id_1"))
    for query in QUESTIONS:
        _same_answers(ours, reference, query)
    assert {row[0] for row in _answers(ours, "What is?")} == {"test_id_2", "test_id_3"}
    for index in (ours, reference):
        index.insert(Document(text="Hello world backup.", id_="test_id_0"))
    for query in QUESTIONS:
        _same_answers(ours, reference, query)
    assert _answers(ours, "Hello world backup", 1)[0][:2] == ("test_id_0", "Hello world backup.")


def test_update_a_document(engine) -> None:
    """``test_simple_update`` (``aupdate_ref_doc``) and ``update_ref_doc``."""
    ours, reference = _pair(engine)
    for index in (ours, reference):
        asyncio.run(index.aupdate_ref_doc(Document(text="Hello World v1", id_="test_id_0")))
        index.update_ref_doc(Document(text="This is a test v1", id_="test_id_1"))
    for query in (*QUESTIONS, "world v1"):
        _same_answers(ours, reference, query)
    texts = {row[0]: row[1] for row in _answers(ours, "What is?")}
    assert texts["test_id_0"] == "Hello World v1"
    assert texts["test_id_1"] == "This is a test v1"
    assert len(texts) == len(DOCUMENTS)


def test_an_image_node_comes_back_as_an_image_node(engine) -> None:
    """``test_query_image_node``: an image node inserted into an index over the store is
    retrieved as itself, its image kept. (An index over a store that keeps the text lists
    its image and index nodes, and only those, in ``node_ids``: LlamaIndex then restricts the
    query to them, whatever store it runs on.)"""
    store = HotdataVectorStore(engine, fresh_table("images"))
    index = VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=EMBED_MODEL,
    )
    index.insert_nodes([ImageNode(image="potato", id_="image")])
    (hit,) = index.as_retriever().retrieve("What is?")
    assert isinstance(hit.node, ImageNode)
    assert (hit.node.node_id, hit.node.image) == ("image", "potato")


def test_index_delete_nodes_removes_them_from_the_store(engine) -> None:
    ours, reference = _pair(engine)
    for index in (ours, reference):
        (node_id,) = [
            hit.node.node_id
            for hit in index.as_retriever(similarity_top_k=10).retrieve("x")
            if hit.node.ref_doc_id == "test_id_2"
        ]
        index.delete_nodes([node_id])
    for query in QUESTIONS:
        _same_answers(ours, reference, query)
    assert "test_id_2" not in {row[0] for row in _answers(ours, "another test")}
