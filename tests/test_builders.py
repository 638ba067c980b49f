"""The drop-in builders: hotdata-langchain's names, signatures, defaults and error words,
with every statement compiled by the library and run on the local engine."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import PlanError, builders
from hotdata_retrieval.engines.local import LocalEngine

TABLE = "default.public.listings"
WORDS = ("cozy", "apartment", "loft", "garden", "quiet", "sunny")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> LocalEngine:
    rng = random.Random(5)
    rows = 40
    data = pa.table(
        {
            "id": [f"l{index:02d}" for index in range(rows)],
            "description": [" ".join(rng.choices(WORDS, k=5)) for _ in range(rows)],
            "city": [("sf", "la")[index % 2] for index in range(rows)],
            "embedding": pa.array(
                [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(rows)],
                type=pa.list_(pa.float32()),
            ),
        }
    )
    opened = LocalEngine(tmp_path_factory.mktemp("builders"))
    opened.load_table("listings", data, text_columns=["description"])
    return opened


def test_the_bm25_builder_writes_the_hand_built_statement() -> None:
    assert builders.bm25_search_sql(
        table=TABLE, column="description", query="cozy apartment", k=5
    ) == (
        "SELECT description, score FROM bm25_search('default.public.listings', "
        "'description', 'cozy apartment', 5) ORDER BY score DESC LIMIT 5"
    )
    assert builders.bm25_search_sql(
        table=TABLE, column="description", query="q", columns=["id", "score", "city"]
    ).startswith("SELECT id, city, score FROM")


def test_the_vector_distance_builder_keeps_the_fast_path_shape_and_names_the_alias() -> None:
    sql = builders.vector_distance_sql(
        table=TABLE,
        column="embedding",
        vector=[0.5, 0.25],
        k=3,
        columns=["id", "description", "embedding"],
        where={"city": "sf"},
        distance_alias="dist",
    )
    assert sql == (
        "SELECT id, description, cosine_distance(embedding, ARRAY[0.5, 0.25]) AS dist "
        "FROM \"default\".public.listings WHERE city = 'sf' ORDER BY dist ASC LIMIT 3"
    )


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="description", query="q", k=0),
            "k must be >= 1",
        ),
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="description", query="a\x00b"),
            "null bytes",
        ),
        (
            lambda: builders.bm25_search_sql(table="listings", column="description", query="q"),
            r"catalog\.schema\.table",
        ),
        (
            lambda: builders.bm25_search_sql(table=TABLE, column="desc ription", query="q"),
            "bare SQL identifier",
        ),
        (
            lambda: builders.vector_distance_sql(
                table=TABLE, column="embedding", vector=[], columns=["id"]
            ),
            "must not be empty",
        ),
        (
            lambda: builders.vector_distance_sql(
                table=TABLE, column="embedding", vector=[1.0], columns=["id"], metric="manhattan"
            ),
            "metric must be one of cosine, dot, l2",
        ),
        (
            lambda: builders.hybrid_search_sql(
                table=TABLE,
                column="description",
                vector_column="embedding",
                query="q",
                vector=[1.0],
                rrf_k=0,
            ),
            "rrf_k must be >= 1",
        ),
        (
            lambda: builders.hybrid_search_sql(
                table=TABLE,
                column="description",
                vector_column="embedding",
                query="q",
                vector=[1.0],
                columns=["embedding"],
            ),
            "floods the result",
        ),
    ],
)
def test_bad_input_is_a_value_error_in_the_callers_words(call: object, words: str) -> None:
    with pytest.raises(ValueError, match=words) as raised:
        call()  # type: ignore[operator]
    assert isinstance(raised.value, PlanError)


def test_the_bm25_statement_ranks_by_score_on_the_engine(engine: LocalEngine) -> None:
    rows = engine.sql(
        builders.bm25_search_sql(
            table=TABLE, column="description", query="cozy loft", k=8, columns=["id"]
        )
    ).to_pylist()
    scores = [row["score"] for row in rows]
    assert 0 < len(rows) <= 8 and scores == sorted(scores, reverse=True)


def test_the_vector_distance_statement_is_the_exact_top_k(engine: LocalEngine) -> None:
    query = [0.3, -0.2, 0.9, 0.1]
    rows = engine.sql(
        builders.vector_distance_sql(
            table=TABLE, column="embedding", vector=query, k=6, columns=["id"], where={"city": "la"}
        )
    ).to_pylist()
    data = engine.read_table("listings").to_pylist()
    kept = [row for row in data if row["city"] == "la"]
    matrix = np.asarray([row["embedding"] for row in kept], dtype=np.float64)
    distances = 1.0 - matrix @ np.asarray(query) / (
        np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    )
    expected = [kept[index]["id"] for index in np.argsort(distances, kind="stable")[:6]]
    assert [row["id"] for row in rows] == expected


def test_the_hybrid_statement_fuses_at_the_fetch_depth(engine: LocalEngine) -> None:
    sql = builders.hybrid_search_sql(
        table=TABLE,
        column="description",
        vector_column="embedding",
        query="quiet garden",
        vector=[0.1, 0.2, 0.3, 0.4],
        k=4,
    )
    assert sql.count("LIMIT 20") == 2  # max(4k, 20) candidates per branch
    rows = engine.sql(sql).to_pylist()
    assert len(rows) == 4 and [row["score"] for row in rows] == sorted(
        (row["score"] for row in rows), reverse=True
    )
