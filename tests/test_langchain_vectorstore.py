"""The LangChain VectorStore, checked by LangChain's own standard suite
(``langchain_tests.integration_tests.VectorStoreIntegrationTests``, sync and async) on every
engine a document table runs on (the local engine, SQLite, DuckDB, PostgreSQL, LanceDB,
turbopuffer and Hotdata, the last two over their fake APIs), and by the cases the standard
suite leaves out, on each of them too: filters, scores, maximal marginal relevance on the
returned vectors, BM25 and hybrid search, bad input. Expected orders are computed here with
NumPy, independently of the engines."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from hotdata_retrieval.adapters.langchain import HotdataVectorStore
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import (
    EngineError,
    HotdataRetrievalError,
    MissingCapabilityError,
    PlanError,
)
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One engine of each kind for the module; each test keeps its documents in a table of
    its own."""
    opened = open_document_engine(
        request.param, tmp_path_factory.mktemp(f"vectorstore-{request.param}"), request
    )
    yield opened
    opened.close()


class TestStandardSuite(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, engine: Any) -> HotdataVectorStore:  # type: ignore[override]
        return HotdataVectorStore(engine, fresh_table(), self.get_embeddings())


class _Axes:
    """Embeds a text by the words it holds: a fixed, known vector per word, so the
    expected order is computed here, independently of the engine."""

    words = ("red", "green", "blue", "fox", "sky")

    def _vector(self, text: str) -> list[float]:
        vector = [float(text.split().count(word)) for word in self.words]
        return vector if any(vector) else [0.1] * len(self.words)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


TEXTS = ["red fox", "green fox", "blue sky", "red sky", "green green sky"]
METADATAS = [
    {"colour": "red", "year": 2020},
    {"colour": "green", "year": 2021},
    {"colour": "blue", "year": 2022},
    {"colour": "red", "year": 2023},
    {"colour": "green", "year": 2024, "nested": {"a": [1, 2]}},
]


@pytest.fixture()
def store(engine: Any) -> HotdataVectorStore:
    vector_store = HotdataVectorStore(
        engine,
        fresh_table("notes"),
        _Axes(),  # type: ignore[arg-type]
        filter_columns={"colour": "string", "year": "int64"},
    )
    vector_store.add_texts(TEXTS, METADATAS, ids=[str(i) for i in range(len(TEXTS))])
    return vector_store


def _rows(store: HotdataVectorStore) -> list[dict[str, Any]]:
    """The store's rows, by key (engines read their rows in different orders)."""
    rows = store.store.engine.read_table(store.store.table).to_pylist()
    return sorted(rows, key=lambda row: row["id"])


def _cosine_order(query: str, keep: list[int]) -> list[str]:
    axes = _Axes()
    q = np.asarray(axes.embed_query(query))

    def distance(i: int) -> float:
        v = np.asarray(axes.embed_query(TEXTS[i]))
        return 1.0 - float(q @ v) / (np.linalg.norm(q) * np.linalg.norm(v))

    return [str(i) for i in sorted(keep, key=lambda i: (distance(i), str(i)))]


@pytest.mark.parametrize(
    ("filter", "keep"),
    [
        (None, [0, 1, 2, 3, 4]),
        ({"colour": "red"}, [0, 3]),
        ({"year": {"$gte": 2022}}, [2, 3, 4]),
        ("colour = 'green' OR year < 2021", [0, 1, 4]),
        ({"id": {"$in": ["1", "2"]}}, [1, 2]),
    ],
)
def test_filtered_similarity_matches_a_brute_force_order(store, filter, keep) -> None:
    found = [document.id for document in store.similarity_search("red sky", k=5, filter=filter)]
    assert found == _cosine_order("red sky", keep)


def test_scores_are_distances_and_relevance_is_one_minus_distance(store) -> None:
    pairs = store.similarity_search_with_score("red fox", k=2)
    assert pairs[0][0].id == "0"
    assert pairs[0][1] == pytest.approx(0.0, abs=1e-6)
    expected = 1.0 - 1.0 / (math.sqrt(2) * math.sqrt(2))  # "red fox" against "red sky"
    assert pairs[1][1] == pytest.approx(expected, abs=1e-6)
    relevance = store.similarity_search_with_relevance_scores("red fox", k=2)
    assert [score for _, score in relevance] == pytest.approx([1.0, 1.0 - expected], abs=1e-6)


def test_metadata_round_trips_exactly(store) -> None:
    assert [document.metadata for document in store.get_by_ids(["4", "0"])] == [
        METADATAS[4],
        METADATAS[0],
    ]


def test_maximal_marginal_relevance_reads_the_returned_vectors(store) -> None:
    relevant = [
        document.id
        for document in store.max_marginal_relevance_search(
            "green sky", k=2, fetch_k=5, lambda_mult=1.0
        )
    ]
    assert relevant == _cosine_order("green sky", [0, 1, 2, 3, 4])[:2]
    diverse = [
        document.id
        for document in store.max_marginal_relevance_search(
            "green sky", k=2, fetch_k=5, lambda_mult=0.0
        )
    ]
    assert diverse[0] == relevant[0] and diverse[1] != relevant[1]


def test_text_search_is_bm25_and_hybrid_fuses(store) -> None:
    assert {document.id for document in store.text_search("fox", k=5)} == {"0", "1"}
    assert [
        document.id for document in store.text_search("fox", k=5, filter={"colour": "red"})
    ] == ["0"]
    fused = [document.id for document in store.hybrid_search("green fox", k=3)]
    assert fused[0] == "1"  # first in both branches
    minmax = store.hybrid_search("green fox", k=3, fusion={"method": "min_max", "alpha": 0.5})
    assert minmax[0].id == "1"


def test_delete_all_and_from_texts(engine: Any) -> None:
    vector_store = HotdataVectorStore.from_texts(
        TEXTS,
        _Axes(),  # type: ignore[arg-type]
        ids=["a", "b", "c", "d", "e"],
        engine=engine,
        table=fresh_table("made"),
    )
    assert len(vector_store.store) == 5
    assert vector_store.delete() is True
    assert vector_store.similarity_search("red", k=3) == []
    assert vector_store.text_search("red", k=3) == []
    assert len(vector_store.store) == 0


def test_from_texts_without_an_engine_keeps_the_texts_on_a_local_engine() -> None:
    vector_store = HotdataVectorStore.from_texts(TEXTS, _Axes(), table="made")  # type: ignore[arg-type]
    try:
        assert isinstance(vector_store.store.engine, LocalEngine)
        assert sorted(d.page_content for d in vector_store.similarity_search("red", k=5)) == sorted(
            TEXTS
        )
    finally:
        vector_store.store.engine.close()


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda s: s.similarity_search("red", k=2, filter={"missing": 1}), "'missing'"),
        (lambda s: s.similarity_search("red", k=0), "k"),
        (lambda s: s.add_texts(["x"], [{"year": "soon"}]), "'year'"),
        (lambda s: s.add_texts(["x"], [{"when": object()}]), "JSON"),
        (lambda s: s.add_texts(["x", "y"], ids=["same", "same"]), "'same'"),
        (lambda s: s.add_texts(["x"], ids=[""]), "non-empty string"),
        (lambda s: s.add_texts(["x"], [{}, {}]), "as long as"),
        (lambda s: s.get_by_ids("12"), "list"),
        (lambda s: s.delete("12"), "list"),
        (lambda s: s.similarity_search_by_vector([1.0, 2.0], k=1), "dimension"),
        (lambda s: s.hybrid_search("red", fusion="nope"), "nope"),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(store, call, words) -> None:
    before = _rows(store)
    with pytest.raises((PlanError, EngineError)) as raised:
        call(store)
    assert words in str(raised.value)
    assert _rows(store) == before


def test_a_filter_column_named_as_a_store_column_is_refused(engine: Any) -> None:
    with pytest.raises(PlanError, match="'text'"):
        HotdataVectorStore(engine, "t", _Axes(), filter_columns={"text": "string"})  # type: ignore[arg-type]
    with pytest.raises(PlanError, match="'decimal-ish'"):
        HotdataVectorStore(engine, "t", _Axes(), filter_columns={"n": "decimal-ish"})  # type: ignore[arg-type]


class _ReadOnly:
    """An engine that searches and reads but changes no row, and says why it reads no row
    by key."""

    capability_refusals: ClassVar[dict[str, str]] = {"read_rows": "its rows have no key"}

    def search(self, plan: Any) -> Any: ...
    def read_table(self, table: str) -> Any: ...
    def read_rows(self, table: str, keys: Any) -> Any: ...

    tables: ClassVar[dict[str, Any]] = {}


def test_an_engine_without_a_capability_is_refused_naming_each_and_why() -> None:
    with pytest.raises(MissingCapabilityError) as raised:
        HotdataVectorStore(_ReadOnly(), "t", _Axes())  # type: ignore[arg-type]
    error = raised.value
    assert error.capabilities == ("upsert_rows", "delete_rows", "read_rows")
    assert error.reasons["read_rows"] == "its rows have no key"
    assert "upsert_rows: it has no upsert_rows" in str(error)
    assert "read_rows: its rows have no key" in str(error)
    with pytest.raises(MissingCapabilityError, match="upsert_rows"):
        HotdataVectorStore(object(), "t", _Axes())  # type: ignore[arg-type]


def test_the_store_keeps_documents_other_searches_read(store) -> None:
    engine = store.store.engine
    assert store.store.exists()
    rows = engine.read_table(store.store.table, ["id", "colour", "year"]).to_pylist()
    by_key = {row["id"]: row for row in rows}
    assert len(rows) == 5
    assert by_key["4"] == {"id": "4", "colour": "green", "year": 2024}
    assert by_key["2"] == {"id": "2", "colour": "blue", "year": 2022}
    unchanged = Document(page_content="x")
    store.add_documents([unchanged])
    assert unchanged.id is None


def test_concurrent_first_adds_keep_every_document(tmp_path) -> None:
    import threading

    engines = [LocalEngine(tmp_path / "db"), LocalEngine(tmp_path / "db")]
    try:
        stores = [HotdataVectorStore(engine, "fresh", _Axes()) for engine in engines]  # type: ignore[arg-type]
        threads = [
            threading.Thread(
                target=stores[i % 2].add_texts, args=([f"red {i}"],), kwargs={"ids": [f"d{i}"]}
            )
            for i in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(
            document.id for document in stores[0].get_by_ids(["d0", "d1", "d2", "d3"])
        ) == [
            "d0",
            "d1",
            "d2",
            "d3",
        ]
    finally:
        for engine in engines:
            engine.close()


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda s: s.add_texts("hello"), "texts must be a list"),
        (lambda s: s.add_texts(["x"], [{"year": 5.7}]), "not a whole number"),
        (lambda s: s.add_texts(["x"], [{"year": True}]), "not a whole number"),
        (lambda s: s.add_texts(["x"], [{"colour": "a", "COLOUR": "b"}]), "twice"),
        (lambda s: s.max_marginal_relevance_search("red", k=0), "k must be"),
        (lambda s: s.max_marginal_relevance_search("red", fetch_k=None), "fetch_k"),
        (
            lambda s: s.max_marginal_relevance_search("red", fetch_k=5000),
            "fetch_k must be at most 1000, got 5000",
        ),
        (
            lambda s: s.max_marginal_relevance_search("red", k=2000, fetch_k=5),
            "k must be at most 1000, got 2000",
        ),
        (lambda s: s.max_marginal_relevance_search("red", lambda_mult=float("nan")), "lambda"),
        (lambda s: s.max_marginal_relevance_search("red", lambda_mult=5), "lambda_mult"),
        (lambda s: s.text_search("red " * 5000), "max_query"),
        (lambda s: s.store.ids_matching({"year": "soon"}), "with 'soon', which is not an integer"),
    ],
)
def test_more_bad_input_is_refused_and_changes_nothing(store, call, words) -> None:
    before = _rows(store)
    with pytest.raises(HotdataRetrievalError) as raised:
        call(store)
    assert words in str(raised.value)
    assert _rows(store) == before


def test_a_whole_float_fills_an_integer_column_and_hybrid_reaches_a_deep_page(store) -> None:
    store.add_texts(["blue fox"], [{"year": 2030.0}], ids=["x"])
    assert [
        document.id for document in store.similarity_search("fox", k=9, filter={"year": 2030})
    ] == ["x"]
    many = [f"sky {i}" for i in range(150)]
    store.add_texts(many, ids=[f"m{i}" for i in range(150)])
    assert len(store.hybrid_search("sky", k=120)) == 120


def test_a_replaced_or_deleted_document_is_found_by_its_words_as_they_are(store) -> None:
    # The text index follows every change: the old words of a replaced document and the
    # words of a deleted one find nothing, the new words find it.
    store.add_texts(["blue fox"], [{"colour": "blue", "year": 2030}], ids=["0"])
    store.delete(["1"])
    assert {document.id for document in store.text_search("fox", k=5)} == {"0"}
    assert {document.id for document in store.text_search("red", k=5)} == {"3"}
    assert {document.id for document in store.text_search("blue", k=5)} == {"0", "2"}
    assert [document.id for document in store.text_search("green", k=5)] == ["4"]
    assert [
        document.id for document in store.similarity_search("blue fox", k=1, filter={"year": 2030})
    ] == ["0"]
