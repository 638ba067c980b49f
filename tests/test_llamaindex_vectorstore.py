"""The LlamaIndex vector store, checked against LlamaIndex's own reference store, on every
engine a document table runs on (``tests/document_engines.py``).

The cases follow llama-index-core's vector-store tests (``tests/vector_stores/
test_simple.py``: every filter operator, AND / OR / NOT, top-k under a filter, node-id and
document-id restrictions, delete by source document); each query runs on
``SimpleVectorStore`` (the independent reference, an in-memory scan in LlamaIndex) and on
:class:`HotdataVectorStore` over the local engine, and the two must return the same ids in
the same order with the same similarities. The operators the filter language cannot express
(``text_match``) and filters on undeclared keys are typed errors here, where the reference
store answers them; those cases check the error. SQLite holds no list column, so there the
list-valued key ``quality`` is no filter column and a filter on it is that typed error."""

from __future__ import annotations

import math
from typing import Any

import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore
from hotdata_retrieval.errors import EngineError, PlanError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

FILTER_COLUMNS = {"weight": "float64", "rank": "string", "quality": "list<string>"}
LIST_KEYS = {"quality"}
WITHOUT_LISTS = {"sqlite"}
"""The engines that hold no list column (SQLite: ``store_column_type``)."""


def _filter_columns(engine: Any) -> dict[str, str]:
    if engine.kind in WITHOUT_LISTS:
        return {key: kind for key, kind in FILTER_COLUMNS.items() if key not in LIST_KEYS}
    return FILTER_COLUMNS


def _reads_a_list(filters: Any) -> bool:
    if filters is None:
        return False
    return any(
        _reads_a_list(item) if isinstance(item, MetadataFilters) else item.key in LIST_KEYS
        for item in filters.filters
    )


def _nodes() -> list[TextNode]:
    rows: list[tuple[str, list[float], dict[str, Any], str]] = [
        ("n1", [1.0, 0.0, 0.1], {"weight": 1.0, "rank": "a", "quality": ["medium", "high"]}, "d1"),
        ("n2", [0.0, 1.0, 0.2], {"weight": 2.0, "rank": "c", "quality": ["medium"]}, "d2"),
        ("n3", [1.0, 1.0, 0.3], {"weight": 3.0, "rank": "c", "quality": ["low", "high"]}, "d3"),
        ("n4", [0.2, 0.9, 0.9], {"weight": 4.0, "quality": []}, "d3"),
        ("n5", [0.7, 0.1, 0.5], {"rank": "", "note": {"deep": [1, 2]}}, "d4"),
    ]
    return [
        TextNode(
            id_=node_id,
            text=f"lorem ipsum {node_id} " + ("fox" if index % 2 else "sky"),
            embedding=vector,
            metadata=metadata,
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=document)},
        )
        for index, (node_id, vector, metadata, document) in enumerate(rows)
    ]


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One engine of each kind for the module; each test keeps its nodes in a table of its
    own."""
    opened = open_document_engine(
        request.param, tmp_path_factory.mktemp(f"llamaindex-{request.param}"), request
    )
    opened.kind = request.param
    yield opened
    opened.close()


def _stores(engine: Any) -> tuple[SimpleVectorStore, HotdataVectorStore]:
    ours = HotdataVectorStore(engine, fresh_table("nodes"), filter_columns=_filter_columns(engine))
    ours.add(_nodes())
    reference = SimpleVectorStore()
    reference.add(_nodes())
    return reference, ours


@pytest.fixture()
def stores(engine: Any) -> tuple[SimpleVectorStore, HotdataVectorStore]:
    """The two stores holding the nodes, for a test that changes them."""
    return _stores(engine)


@pytest.fixture(scope="module")
def read_stores(engine: Any) -> tuple[SimpleVectorStore, HotdataVectorStore]:
    """The two stores holding the nodes, shared by the tests that only query them."""
    return _stores(engine)


def _leaf(key: str, operator: FilterOperator, value: Any) -> MetadataFilter:
    return MetadataFilter(key=key, operator=operator, value=value)


F = FilterOperator
CASES: dict[str, MetadataFilters | None] = {
    "none": None,
    "eq": MetadataFilters(filters=[_leaf("rank", F.EQ, "c")]),
    "eq float": MetadataFilters(filters=[_leaf("weight", F.EQ, 1.0)]),
    "ne (a missing key passes)": MetadataFilters(filters=[_leaf("weight", F.NE, 1.0)]),
    "gt": MetadataFilters(filters=[_leaf("weight", F.GT, 1.5)]),
    "gte": MetadataFilters(filters=[_leaf("weight", F.GTE, 1.0)]),
    "lt": MetadataFilters(filters=[_leaf("weight", F.LT, 3.0)]),
    "lte": MetadataFilters(filters=[_leaf("weight", F.LTE, 2.0)]),
    "in": MetadataFilters(filters=[_leaf("rank", F.IN, ["a", "c"])]),
    "nin (a missing key passes)": MetadataFilters(filters=[_leaf("rank", F.NIN, ["c"])]),
    "contains": MetadataFilters(filters=[_leaf("quality", F.CONTAINS, "high")]),
    "any": MetadataFilters(filters=[_leaf("quality", F.ANY, ["low", "medium"])]),
    "all": MetadataFilters(filters=[_leaf("quality", F.ALL, ["medium", "high"])]),
    "is_empty list": MetadataFilters(filters=[_leaf("quality", F.IS_EMPTY, None)]),
    "is_empty text": MetadataFilters(filters=[_leaf("rank", F.IS_EMPTY, None)]),
    "and, contradictory": MetadataFilters(
        filters=[_leaf("weight", F.EQ, 2.0), _leaf("weight", F.EQ, 3.0)]
    ),
    "and": MetadataFilters(filters=[_leaf("rank", F.EQ, "c"), _leaf("weight", F.EQ, 2.0)]),
    "or": MetadataFilters(
        filters=[_leaf("rank", F.EQ, "c"), _leaf("weight", F.EQ, 1.0)],
        condition=FilterCondition.OR,
    ),
    "not (a missing key passes)": MetadataFilters(
        filters=[_leaf("rank", F.EQ, "a")], condition=FilterCondition.NOT
    ),
    "not of two": MetadataFilters(
        filters=[_leaf("weight", F.GT, 2.5), _leaf("rank", F.EQ, "a")],
        condition=FilterCondition.NOT,
    ),
}


def _same(reference, ours, query: VectorStoreQuery) -> list[str]:
    expected = reference.query(query)
    found = ours.query(query)
    assert found.ids == expected.ids
    assert found.similarities == pytest.approx(expected.similarities, abs=1e-5)
    texts = {node.node_id: node.get_content() for node in _nodes()}
    assert [node.get_content() for node in found.nodes] == [texts[key] for key in found.ids]
    return found.ids


@pytest.mark.parametrize("name", list(CASES))
def test_filtered_queries_match_the_reference_store(read_stores, engine, name) -> None:
    reference, ours = read_stores
    for top_k in (1, 3, 5):
        query = VectorStoreQuery(
            query_embedding=[1.0, 0.8, 0.2], similarity_top_k=top_k, filters=CASES[name]
        )
        if engine.kind in WITHOUT_LISTS and _reads_a_list(CASES[name]):
            with pytest.raises(PlanError, match="'quality'"):
                ours.query(query)
        else:
            _same(reference, ours, query)


def test_node_and_document_restrictions_match_the_reference_store(read_stores) -> None:
    reference, ours = read_stores
    both = MetadataFilters(filters=[_leaf("rank", F.EQ, "c")])
    for query in (
        VectorStoreQuery(query_embedding=[1, 1, 0], similarity_top_k=5, node_ids=["n3", "n1"]),
        VectorStoreQuery(
            query_embedding=[1, 1, 0], similarity_top_k=5, filters=both, node_ids=["n3"]
        ),
    ):
        assert _same(reference, ours, query)
    # the reference store ignores doc_ids; they mean the nodes of those documents
    by_document = VectorStoreQuery(query_embedding=[1, 1, 0], similarity_top_k=5, doc_ids=["d3"])
    by_node = VectorStoreQuery(query_embedding=[1, 1, 0], similarity_top_k=5, node_ids=["n3", "n4"])
    assert ours.query(by_document).ids == reference.query(by_node).ids == ["n3", "n4"]


def test_delete_by_source_document_matches_the_reference_store(stores) -> None:
    reference, ours = stores
    reference.delete("d3")
    ours.delete("d3")
    ours.delete("no such document")
    assert _same(reference, ours, VectorStoreQuery(query_embedding=[1, 1, 0], similarity_top_k=5))
    assert len(ours.store) == 3


def test_nodes_round_trip_with_their_metadata_and_embedding(stores) -> None:
    _, ours = stores
    original = {node.node_id: node for node in _nodes()}
    for node in ours.get_nodes(node_ids=["n5", "n1"]):
        assert node.metadata == original[node.node_id].metadata
        assert node.ref_doc_id == original[node.node_id].ref_doc_id
        assert node.embedding == pytest.approx(original[node.node_id].embedding)
        assert node.get_content() == original[node.node_id].get_content()
    assert [node.node_id for node in ours.get_nodes(filters=CASES["eq"])] == ["n2", "n3"]


def test_delete_nodes_and_clear(stores) -> None:
    _, ours = stores
    ours.delete_nodes(node_ids=["n1", "n2", "missing"], filters=CASES["eq"])  # n2 only
    assert sorted(node.node_id for node in ours.get_nodes(node_ids=["n1", "n2", "n3"])) == [
        "n1",
        "n3",
    ]
    ours.delete_nodes(node_ids=["n1"])
    ours.clear()
    assert ours.query(VectorStoreQuery(query_embedding=[1, 0, 0], similarity_top_k=3)).ids == []


def test_text_hybrid_and_mmr_modes(stores) -> None:
    _, ours = stores
    text = ours.query(
        VectorStoreQuery(query_str="fox", mode=VectorStoreQueryMode.TEXT_SEARCH, similarity_top_k=5)
    )
    assert sorted(text.ids) == ["n2", "n4"]
    hybrid = ours.query(
        VectorStoreQuery(
            query_str="fox",
            query_embedding=[0.0, 1.0, 0.2],
            mode=VectorStoreQueryMode.HYBRID,
            similarity_top_k=2,
        )
    )
    assert hybrid.ids[0] == "n2"  # first in both branches
    vector_only = ours.query(
        VectorStoreQuery(
            query_str="sky",
            query_embedding=[0.0, 1.0, 0.2],
            mode=VectorStoreQueryMode.HYBRID,
            alpha=1.0,
            similarity_top_k=3,
        )
    )
    nearest = ours.query(VectorStoreQuery(query_embedding=[0.0, 1.0, 0.2], similarity_top_k=3))
    assert vector_only.ids == nearest.ids
    mmr = ours.query(
        VectorStoreQuery(
            query_embedding=[1.0, 0.8, 0.2],
            mode=VectorStoreQueryMode.MMR,
            similarity_top_k=2,
            mmr_threshold=1.0,
        )
    )
    plain = ours.query(VectorStoreQuery(query_embedding=[1.0, 0.8, 0.2], similarity_top_k=2))
    assert mmr.ids == plain.ids  # a threshold of 1 is relevance alone


def test_a_hybrid_query_explains_its_scores_when_asked(read_stores) -> None:
    """``explain_scores=True`` (a ``vector_store_kwargs`` entry) puts each node's explanation
    in its metadata: its branches' contributions add up to its similarity, the fused
    score; without it the nodes carry none."""
    _, ours = read_stores
    query = VectorStoreQuery(
        query_str="fox",
        query_embedding=[0.0, 1.0, 0.2],
        mode=VectorStoreQueryMode.HYBRID,
        alpha=0.4,
        similarity_top_k=3,
    )
    explained = ours.query(query, explain_scores=True)
    plain = ours.query(query)
    assert explained.ids == plain.ids
    for node, similarity in zip(explained.nodes, explained.similarities):
        branches = node.metadata["explanation"]["branches"]
        total = sum(branch["contribution"] for branch in branches.values())
        assert math.isclose(total, similarity, rel_tol=0.0, abs_tol=1e-9)
    assert all("explanation" not in node.metadata for node in plain.nodes)
    with pytest.raises(PlanError, match="explain_scores must be true or false"):
        ours.query(query, explain_scores="yes")


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (
            VectorStoreQuery(
                query_embedding=[1, 0, 0],
                filters=MetadataFilters(filters=[_leaf("rank", F.TEXT_MATCH, "a")]),
            ),
            "'text_match'",
        ),
        (
            VectorStoreQuery(
                query_embedding=[1, 0, 0],
                filters=MetadataFilters(filters=[_leaf("colour", F.EQ, "a")]),
            ),
            "'colour'",
        ),
        (VectorStoreQuery(query_embedding=[1, 0, 0], mode=VectorStoreQueryMode.SVM), "'svm'"),
        (VectorStoreQuery(mode=VectorStoreQueryMode.DEFAULT), "query_embedding"),
        (VectorStoreQuery(mode=VectorStoreQueryMode.TEXT_SEARCH), "query_str"),
        (VectorStoreQuery(query_embedding=[1, 0]), "dimension"),
        (VectorStoreQuery(query_embedding=[1, 0, 0], similarity_top_k=0), "k"),
    ],
)
def test_what_cannot_be_answered_is_a_typed_error(stores, query, words) -> None:
    _, ours = stores
    with pytest.raises((PlanError, EngineError)) as raised:
        ours.query(query)
    assert words in str(raised.value)


def test_a_node_without_an_embedding_is_refused_and_nothing_is_written(stores) -> None:
    _, ours = stores
    with pytest.raises(PlanError, match="'late'"):
        ours.add([TextNode(id_="fresh", text="x", embedding=[1, 0, 0]), TextNode(id_="late")])
    assert ours.get_nodes(node_ids=["fresh"]) == []


def test_ids_given_as_text_are_refused_not_split(stores) -> None:
    _, ours = stores
    for call in (lambda: ours.delete_nodes("n1"), lambda: ours.get_nodes("n1")):
        with pytest.raises(PlanError, match="node_ids must be a list"):
            call()
    assert len(ours.store) == 5


def test_mmr_threshold_given_to_the_call_is_used(stores) -> None:
    _, ours = stores
    embedding = [1.0, 0.8, 0.2]
    for threshold in (0.0, 0.3, 1.0):
        in_query = VectorStoreQuery(
            query_embedding=embedding,
            mode=VectorStoreQueryMode.MMR,
            similarity_top_k=3,
            mmr_threshold=threshold,
        )
        in_call = VectorStoreQuery(
            query_embedding=embedding, mode=VectorStoreQueryMode.MMR, similarity_top_k=3
        )
        assert ours.query(in_call, mmr_threshold=threshold).ids == ours.query(in_query).ids
    with pytest.raises(PlanError, match="mmr_prefetch_k"):
        ours.query(in_call, mmr_prefetch_k="x")
