"""The native ``hybrid_search`` table function of the local engine, rule by rule of
``docs/spec/hybrid_search.md`` (each test names the rule it pins), and the CTE form's
declared divergences from it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import attrs
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    rank_branch,
    reciprocal_rank_fusion,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import EngineError, LocalEngine
from hotdata_retrieval.engines.local.hybrid import HybridSearchCall, HybridSearchError, parse_call
from hotdata_retrieval.plan.search import DEFAULT_DEPTH, DistanceMetric
from hotdata_retrieval.spec.cases import BASE, Doc, distance
from hotdata_retrieval.spec.native import HOTDATA_NATIVE

VECTOR_TYPE = pa.list_(pa.float32())


def _table(docs: list[Doc], **extra: list[Any]) -> pa.Table:
    columns: dict[str, Any] = {
        "id": pa.array([doc.key for doc in docs], type=pa.int64()),
        "body": pa.array([doc.body for doc in docs], type=pa.string()),
        "category": pa.array([doc.category for doc in docs], type=pa.string()),
        "embedding": pa.array([doc.vector for doc in docs], type=VECTOR_TYPE),
    }
    columns.update(extra)
    return pa.table(columns)


@pytest.fixture
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as local:
        local.load_table("docs", _table(BASE), text_columns=["body"])
        yield local


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if value is None:
        return "NULL"
    if isinstance(value, (list, tuple)):
        return "ARRAY[" + ", ".join(repr(float(x)) for x in value) + "]"
    return repr(value)


def call_sql(
    k: int = 10,
    *,
    table: str = "docs",
    text: str = "body",
    vector_column: str = "embedding",
    query: str = "zebra",
    vector: Any = (1.0, 0.0),
    order: bool = True,
    **options: Any,
) -> str:
    arguments = [table, text, vector_column, query]
    parts = [_literal(value) for value in arguments] + [_literal(vector), str(k)]
    for name, value in options.items():
        parts.extend([_literal(name), _literal(value)])
    sql = f"SELECT * FROM hybrid_search({', '.join(parts)})"
    return sql + (" ORDER BY score DESC, id ASC" if order else "")


def hybrid(engine: LocalEngine, k: int = 10, **options: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = engine.sql(call_sql(k, **options)).to_pylist()
    return rows


def keys(rows: list[dict[str, Any]]) -> list[Any]:
    return [row["id"] for row in rows]


# -- R1 signature and options ----------------------------------------------------------------


def test_signature_takes_six_arguments_then_option_pairs(engine: LocalEngine) -> None:
    plain = hybrid(engine, 5)
    every = hybrid(
        engine,
        5,
        depth=20,
        rank_constant=60,
        text_weight=1.0,
        vector_weight=1.0,
        metric="cosine",
        offset=0,
        key="id",
        filter="id > 0",
        debug=False,
    )
    assert plain == every
    reordered = engine.sql(
        "SELECT * FROM hybrid_search('default.public.docs', 'body', 'embedding', 'zebra', "
        "ARRAY[1.0, 0.0], 5, 'key', 'id', 'rank_constant', 60, 'depth', 20) "
        "ORDER BY score DESC, id ASC"
    ).to_pylist()
    assert reordered == plain


def test_named_argument_syntax_is_not_available_in_datafusion(engine: LocalEngine) -> None:
    with pytest.raises(EngineError, match="Unsupported function argument type: depth => 20"):
        engine.sql(
            "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'zebra', "
            "ARRAY[1.0, 0.0], 5, depth => 20)"
        )


# -- R2 output columns and types -------------------------------------------------------------


def test_output_columns_and_types(engine: LocalEngine) -> None:
    result = engine.sql(call_sql(3, order=False))
    assert result.column_names == ["id", "body", "category", "score"]
    assert result.schema.field("score").type == pa.float64()
    assert not result.schema.field("score").nullable
    debug = engine.sql(call_sql(3, order=False, debug=True))
    assert debug.column_names == [
        "id",
        "body",
        "category",
        "score",
        "text_rank",
        "text_score",
        "vector_rank",
        "vector_distance",
    ]
    types = {name: debug.schema.field(name).type for name in debug.column_names[3:]}
    assert types == {
        "score": pa.float64(),
        "text_rank": pa.uint64(),
        "text_score": pa.float32(),
        "vector_rank": pa.uint64(),
        "vector_distance": pa.float32(),
    }


def test_rows_come_back_in_final_order(engine: LocalEngine) -> None:
    unordered = engine.sql(call_sql(8, order=False)).to_pylist()
    ordered = hybrid(engine, 8)
    assert unordered == ordered


# -- R3 fused score ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rank_constant", "text_weight", "vector_weight"),
    [(60, 1.0, 1.0), (1, 1.0, 1.0), (0.5, 2.0, 0.25), (61.5, 3.0, 1.0)],
)
def test_fused_score_is_weighted_rrf_with_one_based_ranks(
    engine: LocalEngine, rank_constant: float, text_weight: float, vector_weight: float
) -> None:
    rows = hybrid(
        engine,
        8,
        rank_constant=rank_constant,
        text_weight=text_weight,
        vector_weight=vector_weight,
        debug=True,
    )
    assert len(rows) == 8
    for row in rows:
        text = 0.0 if row["text_rank"] is None else text_weight / (rank_constant + row["text_rank"])
        vector = (
            0.0
            if row["vector_rank"] is None
            else vector_weight / (rank_constant + row["vector_rank"])
        )
        assert row["score"] == text + vector
    assert sorted(r["vector_rank"] for r in rows) == list(range(1, 9))


# -- R4 branch ranking and its ties -----------------------------------------------------------


def test_rows_tied_in_a_branch_share_its_rank(engine: LocalEngine) -> None:
    docs = [Doc(12, 1, "a", (1, 1)), Doc(10, 1, "b", (1, 1)), Doc(11, 1, "a", (1, 1))]
    engine.load_table("ties", _table(docs), text_columns=["body"])
    rows = hybrid(engine, table="ties", debug=True)
    by_key = {row["id"]: row for row in rows}
    assert [by_key[key]["text_rank"] for key in (10, 11, 12)] == [1, 1, 1]
    assert [by_key[key]["vector_rank"] for key in (10, 11, 12)] == [1, 1, 1]
    assert [row["id"] for row in rows] == [10, 11, 12]  # equal fused scores: by key
    assert len({row["text_score"] for row in rows}) == 1
    assert len({row["vector_distance"] for row in rows}) == 1


def test_a_tie_in_one_branch_leaves_the_order_to_the_other(engine: LocalEngine) -> None:
    # Equal text scores (tf 1 each); the vector branch orders 13, 19, 3.
    docs = [Doc(3, 1, "a", (1, 3)), Doc(13, 1, "a", (1, 0)), Doc(19, 1, "a", (1, 1))]
    engine.load_table("tie_one", _table(docs), text_columns=["body"])
    rows = hybrid(engine, table="tie_one", debug=True)
    assert [row["id"] for row in rows] == [13, 19, 3]
    assert [row["text_rank"] for row in rows] == [1, 1, 1]
    assert [row["vector_rank"] for row in rows] == [1, 2, 3]


def test_branch_ranks_are_competition_ranks(engine: LocalEngine) -> None:
    rows = hybrid(engine, debug=True)
    text_ranks = sorted(row["text_rank"] for row in rows if row["text_rank"] is not None)
    assert text_ranks == [1, 2, 2, 4, 4]  # tf 3, 2, 2, 1, 1: ties share a rank
    scores = {row["text_rank"]: row["text_score"] for row in rows if row["text_rank"]}
    assert [scores[rank] for rank in (1, 2, 4)] == sorted(scores.values(), reverse=True)


# -- R5 one-sided rows ------------------------------------------------------------------------


def test_a_row_found_by_one_branch_scores_that_branch_alone(engine: LocalEngine) -> None:
    rows = hybrid(engine, depth=3, k=3, debug=True)
    assert keys(rows) == [1, 3, 4]
    one_sided = [row for row in rows if row["text_rank"] is None or row["vector_rank"] is None]
    assert {row["id"] for row in one_sided} == {3, 4}
    for row in one_sided:
        rank = row["text_rank"] or row["vector_rank"]
        assert row["score"] == 1.0 / (60 + rank)
        missing = "vector" if row["vector_rank"] is None else "text"
        assert row[f"{missing}_{'distance' if missing == 'vector' else 'score'}"] is None


# -- R6 final order ---------------------------------------------------------------------------


def test_fused_ties_break_by_key(engine: LocalEngine) -> None:
    docs = [Doc(31, 3, "a", (4, 1)), Doc(30, 2, "b", (1, 0)), Doc(32, 1, "a", (1, 1))]
    engine.load_table("symmetric", _table(docs), text_columns=["body"])
    rows = hybrid(engine, table="symmetric", order=False, debug=True)
    assert keys(rows) == [30, 31, 32]
    assert rows[0]["score"] == rows[1]["score"]
    assert (rows[0]["text_rank"], rows[0]["vector_rank"]) == (2, 1)


# -- R7 depth and pages -----------------------------------------------------------------------


def test_default_depth() -> None:
    def call(k: int, offset: int = 0) -> HybridSearchCall:
        return parse_call(["t", "b", "v", "q", [1.0], k, "offset", offset])

    # One constant for every page: the ranking never depends on k or offset.
    assert call(2).branch_depth == DEFAULT_DEPTH == 200
    assert call(10).branch_depth == 200
    assert call(10, offset=190).branch_depth == 200
    with pytest.raises(HybridSearchError, match=r"k \+ offset = 201 reaches past the default"):
        call(10, offset=191)


def test_the_default_depth_bounds_each_branch() -> None:
    # Key i sits at vector rank i (squared distance i² from the origin); only D + 25 and
    # D + 21 match the text (D the default depth). The default depth drops both from the vector
    # branch; depth D + 30 keeps them, and the order flips.
    near, far = DEFAULT_DEPTH + 21, DEFAULT_DEPTH + 25
    docs = [Doc(i, {far: 2, near: 1}.get(i, 0), "a", (i, 0)) for i in range(1, far + 6)]
    with LocalEngine() as local:
        local.load_table("deep", _table(docs), text_columns=["body"])
        options: dict[str, Any] = {
            "table": "deep",
            "metric": "l2",
            "vector": (0.0, 0.0),
            "vector_weight": 0.5,
            # Large, so half the gap between vector ranks D + 21 and D + 25 still outweighs
            # the gap between text ranks 1 and 2.
            "rank_constant": 2000,
        }
        default = local.sql(call_sql(2, **options, debug=True)).to_pylist()
        explicit = local.sql(call_sql(2, **options, depth=DEFAULT_DEPTH, debug=True)).to_pylist()
        deeper = local.sql(call_sql(2, **options, depth=DEFAULT_DEPTH + 30, debug=True)).to_pylist()
    assert default == explicit
    assert keys(default) == [far, near]
    assert [row["vector_rank"] for row in default] == [None, None]
    assert keys(deeper) == [near, far]
    assert [row["vector_rank"] for row in deeper] == [near, far]


def test_pages_with_one_depth_tile_the_fused_list(engine: LocalEngine) -> None:
    whole = hybrid(engine, 8, depth=9, debug=True)
    pages = [hybrid(engine, 3, depth=9, offset=offset, debug=True) for offset in (0, 3, 6)]
    assert [row for page in pages for row in page] == whole


def test_depth_below_the_page_end_is_an_error(engine: LocalEngine) -> None:
    with pytest.raises(EngineError, match=r"k \+ offset = 6 reaches past depth 5"):
        hybrid(engine, 3, depth=5, offset=3)


def test_a_tie_at_the_depth_cut_is_decided_by_key(engine: LocalEngine) -> None:
    # Text ranks 4 and 6 tie (tf 1); depth 4 keeps the lower key. (The CTE form leaves this
    # to the engine: spec D3.)
    rows = hybrid(engine, 4, depth=4, debug=True)
    text_keys = {row["id"] for row in rows if row["text_rank"] is not None}
    assert 4 in text_keys and 6 not in text_keys


# -- R8 filters -------------------------------------------------------------------------------


def test_the_filter_applies_inside_each_branch_before_ranking_and_depth() -> None:
    docs = [
        Doc(1, 5, "b", (4, 1)),
        Doc(2, 4, "b", (3, 2)),
        Doc(3, 3, "a", (1, 1)),
        Doc(4, 2, "b", (1, 2)),
        Doc(5, 1, "a", (1, 4)),
        Doc(7, 1, "a", (-1, 1)),
        Doc(8, 0, "a", (1, 0)),
    ]
    with LocalEngine() as local:
        local.load_table("t", _table(docs), text_columns=["body"])
        rows = local.sql(
            call_sql(5, table="t", depth=5, filter="category = 'a'", debug=True)
        ).to_pylist()
        whole = local.sql(
            "SELECT id, score FROM bm25_search('default.public.t', 'body', 'zebra', 10)"
        ).to_pylist()
    assert {row["category"] for row in rows} == {"a"}
    text = sorted((row["text_rank"], row["id"]) for row in rows if row["text_rank"])
    assert text == [(1, 3), (2, 5), (2, 7)]  # ranked among passing rows; 5 and 7 tie
    vector = sorted((row["vector_rank"], row["id"]) for row in rows if row["vector_rank"])
    assert vector == [(1, 8), (2, 3), (3, 5), (4, 7)]
    bm25 = {row["id"]: row["score"] for row in whole}
    for row in rows:  # BM25 statistics of the whole table, not of the filtered rows
        if row["text_rank"]:
            assert row["text_score"] == pytest.approx(bm25[row["id"]], abs=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("category = 'a'", {1, 4, 5}),
        ("NOT category = 'b'", {1, 4, 5}),  # NULL category: unknown, so excluded
        ("category IS NULL", {2}),
        ("category IS NULL OR category = 'b'", {2, 3}),
        ("category IN ('a', 'b')", {1, 3, 4, 5}),
        ("category NOT IN ('a')", {3}),
        ("category IN ()", set()),
        ("category NOT IN ()", {1, 2, 3, 4, 5}),
        ("id >= 4 AND NOT (category = 'b' OR id = 5)", {4}),
        ("category IN () OR id = 1", {1}),
    ],
)
def test_filters_use_sql_three_valued_logic(text: str, expected: set[int]) -> None:
    docs = [
        Doc(1, 1, "a", (1, 0)),
        Doc(2, 1, None, (1, 1)),
        Doc(3, 2, "b", (4, 1)),
        Doc(4, 1, "a", (1, 2)),
        Doc(5, 3, "a", (3, 2)),
    ]
    with LocalEngine() as local:
        local.load_table("t", _table(docs), text_columns=["body"])
        native = local.sql(call_sql(table="t", filter=text)).to_pylist()
        cte = local.sql(f"SELECT id FROM t WHERE {text}").to_pylist() if "()" not in text else None
    assert {row["id"] for row in native} == expected
    if cte is not None:
        assert {row["id"] for row in cte} == expected


# -- R9 empty branches ------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["quokka", "the and of", "!!!"])
def test_an_empty_text_branch_leaves_the_vector_ranking(engine: LocalEngine, query: str) -> None:
    rows = hybrid(engine, 8, query=query, debug=True)
    assert keys(rows) == [4, 2, 1, 6, 8, 3, 5, 7]
    assert [row["score"] for row in rows] == [1.0 / (60 + rank) for rank in range(1, 9)]
    assert all(row["text_rank"] is None for row in rows)


def test_both_branches_empty_is_zero_rows(engine: LocalEngine) -> None:
    result = engine.sql(call_sql(filter="category = 'z'", debug=True))
    assert result.num_rows == 0
    assert "vector_distance" in result.column_names


def test_an_empty_table_is_zero_rows() -> None:
    with LocalEngine() as local:
        # a table of no vector gives its vectors' length by a fixed-size type
        empty = _table([], embedding=pa.array([], pa.list_(pa.float32(), 2)))
        local.load_table("empty", empty, text_columns=["body"])
        assert local.sql(call_sql(table="empty")).num_rows == 0


# -- R10 candidates ---------------------------------------------------------------------------


def test_null_vectors_and_null_texts_are_not_candidates() -> None:
    docs = [Doc(1, None, "a", (1, 0)), Doc(2, 2, "a", None), Doc(3, 1, "a", (1, 1))]
    with LocalEngine() as local:
        local.load_table("t", _table(docs), text_columns=["body"])
        rows = local.sql(call_sql(table="t", debug=True)).to_pylist()
    by_key = {row["id"]: row for row in rows}
    assert by_key[1]["text_rank"] is None and by_key[1]["vector_rank"] == 1
    assert by_key[2]["vector_rank"] is None and by_key[2]["text_rank"] == 1
    assert by_key[3]["vector_rank"] == 2


# -- R11 keys ---------------------------------------------------------------------------------


def test_a_repeated_or_null_key_among_candidates_is_an_error() -> None:
    docs = [Doc(1, 1, "a", (1, 0)), Doc(1, 2, "b", (1, 1)), Doc(2, 0, "a", (0, 1))]
    with LocalEngine() as local:
        local.load_table("dup", _table(docs), key_column=None, text_columns=["body"])
        with pytest.raises(
            EngineError,
            match=r"key column 'id' is not unique: 1 appears twice in the text branch",
        ):
            local.sql(call_sql(table="dup"))
        # The CTE form multiplies rows instead (spec D4).
        plan = _plan("dup")
        cte = local.sql(to_sql(plan)).to_pylist()
        assert [row["id"] for row in cte].count(1) > 1
        local.load_table(
            "nulls",
            _table([Doc(1, 1, "a", (1, 0))]).set_column(0, "id", pa.array([None], pa.int64())),
            key_column=None,
            text_columns=["body"],
        )
        with pytest.raises(EngineError, match=r"key column 'id' is NULL in a candidate row"):
            local.sql(call_sql(table="nulls"))


def test_a_key_other_than_id(engine: LocalEngine) -> None:
    engine.load_table(
        "keyed",
        _table(BASE).rename_columns(["doc", "body", "category", "embedding"]),
        key_column="doc",
        text_columns=["body"],
    )
    rows = engine.sql(call_sql(5, table="keyed", key="doc", order=False)).to_pylist()
    assert [row["doc"] for row in rows] == keys(hybrid(engine, 5))


# -- R12 weights ------------------------------------------------------------------------------


def test_a_zero_weight_keeps_the_branch_candidates_and_ranks(engine: LocalEngine) -> None:
    rows = hybrid(engine, 8, vector_weight=0.0, debug=True)
    assert keys(rows) == [3, 1, 7, 4, 6, 2, 5, 8]
    tail = rows[5:]
    assert [row["score"] for row in tail] == [0.0, 0.0, 0.0]
    assert [row["vector_rank"] for row in tail] == [2, 7, 5]


def test_both_weights_zero_is_an_error(engine: LocalEngine) -> None:
    with pytest.raises(EngineError, match="text_weight and vector_weight are both 0"):
        hybrid(engine, text_weight=0, vector_weight=0.0)


# -- R13 k larger than the candidates ---------------------------------------------------------


def test_k_larger_than_the_table_returns_every_candidate_once(engine: LocalEngine) -> None:
    rows = hybrid(engine, 1000, depth=1000)
    assert sorted(keys(rows)) == list(range(1, 9))


# -- R14 metrics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "function"),
    [
        ("cosine", "cosine_distance"),
        ("l2", "l2_distance"),
        ("euclidean", "l2_distance"),
        ("dot", "negative_dot_product"),
        ("ip", "negative_dot_product"),
    ],
)
def test_metrics_are_the_engine_distance_functions(
    engine: LocalEngine, metric: str, function: str
) -> None:
    query = (0.3, -1.7)
    rows = hybrid(engine, 8, metric=metric, vector=query, debug=True)
    udf = engine.sql(
        f"SELECT id, {function}(embedding, ARRAY[0.3, -1.7]) AS d FROM docs"
    ).to_pylist()
    exact = {row["id"]: row["d"] for row in udf}
    for row in rows:
        assert row["vector_distance"] == exact[row["id"]]
    ordered = sorted(exact, key=lambda key: (exact[key], key))
    assert sorted(rows, key=lambda row: row["vector_rank"]) == sorted(
        rows, key=lambda row: ordered.index(row["id"])
    )
    python = distance(DistanceMetric.parse(metric), BASE[0].vector or (), query)
    assert exact[1] == pytest.approx(python, rel=1e-6)


# -- R15 engine-side embedding ----------------------------------------------------------------


def test_a_null_query_vector_embeds_the_query_text(engine: LocalEngine) -> None:
    engine.load_table("sem", _table(BASE), text_columns=["body"], embed_columns=["body"])
    rows = engine.sql(
        call_sql(8, table="sem", vector_column="body", vector=None, query="zebra", debug=True)
    ).to_pylist()
    assert "body_embedding" not in rows[0]
    semantic = engine.sql(
        "SELECT id, _distance FROM vector_search('default.public.sem', 'body', 'zebra', 8)"
    ).to_pylist()
    exact = {row["id"]: row["_distance"] for row in semantic}
    for row in rows:
        assert row["vector_distance"] == exact[row["id"]]
    with pytest.raises(EngineError, match="ranks by cosine; metric 'l2' does not match"):
        engine.sql(call_sql(table="sem", vector_column="body", vector=None, metric="l2"))
    engine.embedder = HashingEmbedder(dimensions=16, seed=3)
    with pytest.raises(EngineError, match="was embedded by"):
        engine.sql(call_sql(table="sem", vector_column="body", vector=None))


# -- R16 errors -------------------------------------------------------------------------------


ERRORS = [
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'zebra', ARRAY[1.0, 0.0])",
        "hybrid_search: expected at least 6 arguments, got 5",
    ),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'zebra', ARRAY[1.0, 0.0], 5, "
        "'depth')",
        "hybrid_search: option 'depth' has no value",
    ),
    (call_sql(frobnicate=1), "hybrid_search: unknown option 'frobnicate'; options: debug, depth"),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'zebra', ARRAY[1.0, 0.0], 5, "
        "'depth', 20, 'depth', 30)",
        "hybrid_search: option 'depth' is given twice",
    ),
    (
        "SELECT * FROM hybrid_search(1, 'body', 'embedding', 'zebra', ARRAY[1.0, 0.0], 5)",
        "hybrid_search: the table must be a string literal, got 1",
    ),
    (call_sql(table="a.b.c.d"), r"hybrid_search: table name 'a.b.c.d' has 4 parts"),
    (call_sql(table="nope"), "table 'default.public.nope' not found"),
    (call_sql(query="  "), "hybrid_search: the query text must be a non-blank string literal"),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'q', ARRAY[]::DOUBLE[], 5)",
        "hybrid_search: the query vector must not be empty",
    ),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'q', ARRAY[0.0, 0.0], 5)",
        "hybrid_search: the query vector is all zeros, and cosine distance to a zero vector "
        "is undefined",
    ),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'q', ARRAY[1e39, 1.0], 5)",
        "hybrid_search: the query vector must fit in Float32",
    ),
    (call_sql(0), "hybrid_search: k must be a positive integer, got 0"),
    (call_sql(depth=0), "hybrid_search: depth must be a positive integer, got 0"),
    (call_sql(offset=-1), r"hybrid_search: offset must be an integer >= 0, got -1"),
    (call_sql(3, depth=4, offset=2), r"hybrid_search: k \+ offset = 5 reaches past depth 4"),
    (
        call_sql(2**63 - 1, offset=1),
        r"hybrid_search: k \+ offset = 9223372036854775808 does not fit in 64 bits",
    ),
    (
        call_sql(rank_constant=0),
        "hybrid_search: rank_constant must be a finite number > 0, got 0",
    ),
    (
        call_sql(text_weight=-1.0),
        "hybrid_search: text_weight must be a finite number >= 0, got -1.0",
    ),
    (
        call_sql(text_weight=0.0, vector_weight=0),
        "hybrid_search: text_weight and vector_weight are both 0",
    ),
    (call_sql(metric="hamming"), "hybrid_search: unknown metric 'hamming'; expected one of"),
    (call_sql(key="nope"), "hybrid_search: key column 'nope' not found in table"),
    (call_sql(filter="category LIKE '%a%'"), "hybrid_search: filter: unsupported filter"),
    (call_sql(filter="nope = 1"), "hybrid_search: filter column 'nope' not found in table"),
    (call_sql(filter="embedding IS NULL"), "hybrid_search: filter column 'embedding' is the"),
    (call_sql(filter="category = 1"), "hybrid_search: filter cannot be evaluated"),
    (call_sql(debug=1), "hybrid_search: debug must be TRUE or FALSE, got 1"),
    (call_sql(text="category"), "No BM25 index found on column 'category' for default.public"),
    (call_sql(vector_column="nope"), "hybrid_search: vector column 'nope' not found in table"),
    (call_sql(vector_column="category"), "hybrid_search: column 'category' holds string, not"),
    (call_sql(vector=None), "No vector index found on column 'embedding' for default.public"),
    (
        call_sql(vector=(1.0, 0.0, 0.0)),
        r"hybrid_search: query vector length \(3\) must match column dimensionality \(2\)",
    ),
    (
        "SELECT * FROM hybrid_search('docs', 'body', 'embedding', 'zebra', ARRAY[1.0, 0.0], "
        "CAST(random() * 10 AS BIGINT))",
        "hybrid_search: every argument must be a literal, got ",
    ),
]


@pytest.mark.parametrize(("sql", "message"), ERRORS)
def test_errors_and_their_messages(engine: LocalEngine, sql: str, message: str) -> None:
    with pytest.raises(EngineError, match=message):
        engine.sql(sql)


def test_an_output_column_name_in_the_table_is_an_error(engine: LocalEngine) -> None:
    # A searchable table may not hold a column named like an output column: the load
    # refuses it, before any search (bm25_search's own output would hold two 'score's).
    for reserved in ("score", "_distance"):
        with pytest.raises(EngineError, match=f"column '{reserved}' is reserved"):
            engine.load_table(
                "scored", _table(BASE, **{reserved: list(range(8))}), text_columns=["body"]
            )


def test_d5_a_debug_column_name_in_the_table_only_fails_the_native_call(
    engine: LocalEngine,
) -> None:
    engine.load_table("ranked", _table(BASE, vector_rank=list(range(8))), text_columns=["body"])
    assert len(hybrid(engine, table="ranked")) == 8
    with pytest.raises(EngineError, match="table column 'vector_rank' collides"):
        hybrid(engine, table="ranked", debug=True)
    assert engine.sql(to_sql(_plan("ranked"))).num_rows == 8


# -- R3-R8 against independently executed branches ---------------------------------------------


WORDS = ["zebra", "fox", "crash", "login", "billing", "sync", "disk"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    corpus=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        min_size=1,
        max_size=24,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    k=st.integers(1, 6),
    offset=st.integers(0, 4),
    filtered=st.booleans(),
    weights=st.sampled_from([(1.0, 1.0), (2.0, 0.5), (0.0, 1.0)]),
    rank_constant=st.sampled_from([60, 1, 0.5]),
    depth=st.none() | st.integers(1, 12),
    seed=st.integers(0, 1000),
)
def test_native_rows_are_the_reference_fusion_of_separately_run_branches(
    corpus: list[str],
    query: str,
    k: int,
    offset: int,
    filtered: bool,
    weights: tuple[float, float],
    rank_constant: float,
    depth: int | None,
    seed: int,
) -> None:
    rng = random.Random(seed)
    count = len(corpus)
    table = pa.table(
        {
            "id": list(range(1, count + 1)),
            "body": corpus,
            "category": [rng.choice("ab") for _ in corpus],
            "embedding": pa.array(
                [[rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0]) for _ in range(3)] for _ in corpus],
                type=VECTOR_TYPE,
            ),
        }
    )
    vector = [rng.uniform(-1, 1) for _ in range(3)]
    depth = None if depth is None else max(depth, k + offset)
    options: dict[str, Any] = {
        "text_weight": weights[0],
        "vector_weight": weights[1],
        "rank_constant": rank_constant,
        "offset": offset,
        "debug": True,
    }
    if depth is not None:
        options["depth"] = depth
    where = "category = 'a'" if filtered else "TRUE"
    if filtered:
        options["filter"] = "category = 'a'"
    # hybrid_search ranks DEFAULT_DEPTH candidates per branch when the call gives no depth
    branch_depth = DEFAULT_DEPTH if depth is None else depth
    with LocalEngine() as local:
        local.load_table("docs", table, text_columns=["body"])
        native = local.sql(call_sql(k, query=query, vector=vector, **options)).to_pylist()
        # Each branch on its own: every match, filtered, with its raw score.
        text = local.sql(
            f"SELECT id, score AS raw FROM bm25_search('docs', 'body', {_literal(query)}, "
            f"{count}) WHERE {where}"
        ).to_pylist()
        near = local.sql(
            f"SELECT id, cosine_distance(embedding, {_literal(vector)}) AS raw FROM docs "
            f"WHERE {where}"
        ).to_pylist()
    rankings = [
        rank_branch(
            [(row["id"], row["raw"]) for row in rows], higher_is_better=better, depth=branch_depth
        )
        for rows, better in ((text, True), (near, False))
    ]
    expected = reciprocal_rank_fusion(
        [keys for keys, _ in rankings],
        ranks=[ranks for _, ranks in rankings],
        weights=list(weights),
        rank_constant=rank_constant,
        limit=k,
        offset=offset,
    )
    assert keys(native) == [hit.key for hit in expected]
    for row, hit in zip(native, expected):
        assert row["score"] == hit.score
        assert (row["text_rank"], row["vector_rank"]) == hit.ranks


# -- the CTE form's declared divergences --------------------------------------------------------


def _plan(table: str, **kwargs: Any) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table=table, column="body", query_text="zebra"),
                NearestNeighborSearch(table=table, column="embedding", query_vector=[1.0, 0.0]),
            ],
            depth=kwargs.pop("depth", None),
        ),
        columns=["id", "category"],
        include_branch_scores=True,
        **kwargs,
    )


def test_d1_the_cte_form_filters_a_table_function_after_its_k() -> None:
    docs = [Doc(1, 5, "b", (4, 1)), Doc(2, 4, "b", (3, 2)), Doc(3, 3, "a", (1, 1))]
    docs += [Doc(5, 1, "a", (1, 4)), Doc(7, 1, "a", (-1, 1))]
    with LocalEngine() as local:
        local.load_table("t", _table(docs), text_columns=["body"])
        plan = _plan(
            "t", depth=3, limit=3, filter=Comparison(column="category", operator="=", value="a")
        )
        cte = local.sql(to_sql(plan)).to_pylist()
        native = local.sql(to_sql(plan, HOTDATA_NATIVE)).to_pylist()
    # D1 is closed for bm25_search: with a filter the CTE form leaves out k, so the
    # function's bound no longer comes before the WHERE, and both forms rank the same rows.
    assert "bm25_search('default.public.t', 'body', 'zebra')" in to_sql(plan, pretty=False)
    assert sorted(row["text_rank"] for row in cte if row["text_rank"]) == [1, 2, 2]
    assert sorted(row["text_rank"] for row in native if row["text_rank"]) == [1, 2, 2]


def test_d2_the_cte_form_ranks_null_vectors_last() -> None:
    # D2 is closed: the CTE form drops NULL distances before ranking, as the native call does.
    docs = [Doc(1, 1, "a", (1, 0)), Doc(2, 2, "a", None)]
    with LocalEngine() as local:
        local.load_table("t", _table(docs), text_columns=["body"])
        cte = local.sql(to_sql(_plan("t"))).to_pylist()
        native = local.sql(to_sql(_plan("t"), HOTDATA_NATIVE)).to_pylist()
    assert {row["id"]: row["nearest_rank"] for row in cte} == {1: 1, 2: None}
    assert {row["id"]: row["nearest_rank"] for row in native} == {1: 1, 2: None}
    assert [row["nearest_distance"] for row in cte if row["id"] == 2] == [None]


def test_the_native_call_parses_arguments_independently_of_the_plan() -> None:
    call = parse_call(
        ["docs", "Body", "Embedding", "q", [1, 2], 3, "metric", "IP", "key", "Doc", "debug", True]
    )
    assert attrs.asdict(call, recurse=False) | {"filter": None} == {
        "table": "docs",
        "text_column": "body",
        "vector_column": "embedding",
        "query_text": "q",
        "query_vector": (1.0, 2.0),
        "k": 3,
        "depth": None,
        "offset": 0,
        "fusion": "rrf",
        "rank_constant": 60,
        "text_weight": 1.0,
        "vector_weight": 1.0,
        "min_score": None,
        "metric": DistanceMetric.DOT,
        "key": "doc",
        "filter": None,
        "debug": True,
    }
