"""The embedded local engine: engine semantics, every snapshot plan executed, fusion checked
against separately executed branches, persistence and bad inputs."""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    rank_branch,
    reciprocal_rank_fusion,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import EngineError, LocalEngine
from hotdata_retrieval.plan.filters import IsNull, predicate_columns
from tests.plans import PLANS, VECTOR

WORDS = [
    "error",
    "crash",
    "login",
    "billing",
    "upgrade",
    "version",
    "timeout",
    "refund",
    "password",
    "sync",
    "disk",
    "fox",
]
FILTER_VALUES: dict[str, Any] = {
    "lang": ["en", "de"],
    "year": [2019, 2020, 2021],
    "tag": ["billing", "login", "other"],
    "deleted_at": [None, "2024-01-01"],
    "status": ["open", "spam"],
    "category": ["x", "y"],
}


def _vector(rng: random.Random, dimensions: int) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(dimensions)]


def _table_for(
    plan: SearchPlan, rows: int = 30, seed: int = 7, first_key: int = 1
) -> tuple[pa.Table, list[str], list[str]]:
    """A table holding every column ``plan`` reads, with text and embed columns named, keyed
    from ``first_key``."""
    rng = random.Random(seed)
    text_columns = sorted(
        {b.column for b in plan.branches if isinstance(b, (Bm25Search, VectorSearch))}
    )
    embed_columns = sorted({b.column for b in plan.branches if isinstance(b, VectorSearch)})
    vector_columns = sorted(
        {b.column for b in plan.branches if isinstance(b, NearestNeighborSearch)}
    )
    filters = predicate_columns(plan.filter) if plan.filter is not None else set()
    data: dict[str, Any] = {plan.key_column: list(range(first_key, first_key + rows))}
    for column in text_columns:
        data[column] = [
            " ".join(rng.choices(WORDS, k=6)) + " E1234" * (i % 3 == 0) for i in range(rows)
        ]
    for column in vector_columns:
        data[column] = pa.array(
            [_vector(rng, len(VECTOR)) for _ in range(rows)], type=pa.list_(pa.float32())
        )
    for column in sorted(filters):
        values = FILTER_VALUES.get(column, [f"{column} {i}" for i in range(3)])
        data[column] = [rng.choice(values) for _ in range(rows)]
    # every other column the plan reads (projection, tie-breakers, facets, group columns)
    read = sorted(set().union(*plan.table_columns().values()))
    for column in (*plan.projection, *read):
        data.setdefault(column, [f"{column} {i % 4}" for i in range(rows)])
    return pa.table(data), text_columns, embed_columns


@pytest.fixture
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=32)) as local:
        yield local


# -- engine semantics (engine contract §1, test vectors of §6) --------------------------------


def test_distance_udfs_match_the_engine(engine: LocalEngine) -> None:
    engine.load_table(
        "vectors",
        pa.table(
            {
                "id": [1, 2, 3],
                "v": pa.array([[1, 0, 0, 0], [0, 0, 0, 0], None], type=pa.list_(pa.float32())),
            }
        ),
    )
    result = engine.sql(
        "SELECT id, l2_distance(v, ARRAY[0.0, 1.0, 0.0, 0.0]) AS l2, "
        "cosine_distance(v, ARRAY[0.0, 1.0, 0.0, 0.0]) AS cosine, "
        "negative_dot_product(v, ARRAY[2.0, 1.0, 0.0, 0.0]) AS dot FROM vectors ORDER BY id"
    )
    assert result.column("l2").to_pylist() == [2.0, 1.0, None]  # squared, not 1.414
    assert result.column("cosine").to_pylist() == [1.0, 1.0, None]  # zero vector: 1.0
    assert result.column("dot").to_pylist() == [-2.0, -0.0, None]
    assert {result.schema.field(name).type for name in ("l2", "cosine", "dot")} == {pa.float32()}


def test_dimension_mismatch_names_both_lengths(engine: LocalEngine) -> None:
    engine.load_table(
        "vectors", pa.table({"id": [1], "v": pa.array([[1.0, 0.0]], type=pa.list_(pa.float32()))})
    )
    with pytest.raises(
        EngineError, match=r"query vector length \(3\) must match row 1's dimensionality \(2\)"
    ):
        engine.sql("SELECT l2_distance(v, ARRAY[1.0, 2.0, 3.0]) FROM vectors")


def test_bm25_search_returns_rowid_order_and_needs_an_index(engine: LocalEngine) -> None:
    engine.load_table(
        "docs",
        pa.table(
            {"id": [1, 2, 3], "body": ["fox", "fox fox fox", "fox fox"], "title": ["a", "b", "c"]}
        ),
        text_columns=["body"],
    )
    unsorted = engine.sql(
        "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'fox', 5)"
    )
    assert unsorted.column("id").to_pylist() == [1, 2, 3]
    ranked = engine.sql(
        "SELECT id FROM bm25_search('default.public.docs', 'body', 'fox', 5) ORDER BY score DESC"
    )
    assert ranked.column("id").to_pylist() == [2, 3, 1]
    assert unsorted.schema.field("score").type == pa.float32()
    with pytest.raises(
        EngineError, match=r"No BM25 index found on column 'title' for default.public.docs"
    ):
        engine.sql("SELECT * FROM bm25_search('default.public.docs', 'title', 'a', 5)")


def test_bm25_search_k_bounds_the_rows(engine: LocalEngine) -> None:
    engine.load_table(
        "docs", pa.table({"id": list(range(10)), "body": ["fox"] * 10}), text_columns=["body"]
    )
    assert engine.sql("SELECT id FROM bm25_search('docs', 'body', 'fox', 3)").num_rows == 3
    assert engine.sql("SELECT id FROM bm25_search('docs', 'body', 'fox')").num_rows == 10


def test_vector_search_limit_without_sort_takes_the_lowest_rowids(engine: LocalEngine) -> None:
    bodies = [f"{word} report" for word in WORDS]
    engine.load_table(
        "docs", pa.table({"id": list(range(len(bodies))), "body": bodies}), embed_columns=["body"]
    )
    unsorted = engine.sql(
        "SELECT id FROM vector_search('default.public.docs', 'body', 'crash', 8) LIMIT 3"
    )
    nearest = engine.sql(
        "SELECT id FROM vector_search('default.public.docs', 'body', 'crash', 8) "
        "ORDER BY _distance ASC LIMIT 3"
    )
    everything = (
        engine.sql("SELECT id FROM vector_search('default.public.docs', 'body', 'crash', 8)")
        .column("id")
        .to_pylist()
    )
    assert everything == sorted(everything)
    assert unsorted.column("id").to_pylist() == everything[:3]
    assert nearest.column("id").to_pylist()[0] == WORDS.index("crash")


# -- every snapshot plan runs ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_snapshot_plan_executes(name: str) -> None:
    plan = PLANS[name]
    catalog, schema, _ = plan.tables[0].parts
    with LocalEngine(
        embedder=HashingEmbedder(dimensions=16), catalog=catalog, schema=schema
    ) as local:
        # every table of the plan (a union's members, a side table) holds every column it
        # reads, keyed apart so that keys stay unique across a union
        for position, name in enumerate(plan.tables):
            table, text_columns, embed_columns = _table_for(plan, first_key=1 + 100 * position)
            local.load_table(
                name.name,
                table,
                key_column=plan.key_column,
                text_columns=text_columns,
                embed_columns=embed_columns,
            )
        result = local.search(plan)
    assert len(result) <= plan.limit * (plan.group_size if plan.group_by else 1)
    assert len(set(result.keys)) == len(result)
    scores = [hit.ranking_value for hit in result]
    descending = plan.fusion is not None or plan.branches[0].higher_is_better
    if plan.group_by is None:  # a group's rows follow its best one (tests/parity: groups)
        assert scores == sorted(scores, reverse=descending)
    for hit in result:
        assert set(hit.columns) == set(plan.projection)
        assert set(hit.branches) == set(plan.branch_names)


# -- fused SQL equals the reference fusion of separately executed branches --------------------


corpora = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    corpus=corpora,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    limit=st.integers(1, 8),
    offset=st.integers(0, 4),
    filtered=st.booleans(),
    weights=st.sampled_from([None, [1.0, 2.0], [0.5, 1.0]]),
    seed=st.integers(0, 1000),
)
def test_fused_sql_equals_reference_fusion_of_branches(
    corpus: list[str], query: str, limit: int, offset: int, filtered: bool, weights: Any, seed: int
) -> None:
    rng = random.Random(seed)
    table = pa.table(
        {
            "id": list(range(1, len(corpus) + 1)),
            "body": corpus,
            "category": [rng.choice("ab") for _ in corpus],
            "embedding": pa.array([_vector(rng, 4) for _ in corpus], type=pa.list_(pa.float32())),
        }
    )
    branches = [
        Bm25Search(table="docs", column="body", query_text=query),
        NearestNeighborSearch(table="docs", column="embedding", query_vector=_vector(rng, 4)),
    ]
    where = Comparison(column="category", operator="=", value="a") if filtered else None
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=branches, weights=weights),
        limit=limit,
        offset=offset,
        filter=where,
        columns=["id"],
    )
    with LocalEngine() as local:
        local.load_table("docs", table, text_columns=["body"])
        fused = local.search(plan)
        rankings = []
        for branch in branches:
            alone = local.search(
                SearchPlan(source=branch, limit=plan.depth, filter=where, columns=["id"])
            )
            rankings.append(
                rank_branch(
                    [(hit.key, hit.ranking_value) for hit in alone],
                    higher_is_better=branch.higher_is_better,
                )
            )
    expected = reciprocal_rank_fusion(
        [keys for keys, _ in rankings],
        ranks=[ranks for _, ranks in rankings],
        weights=weights,
        limit=limit,
        offset=offset,
    )
    assert fused.keys == [hit.key for hit in expected]
    for hit, reference in zip(fused, expected):
        assert hit.score == pytest.approx(reference.score, abs=1e-9)
        assert tuple(branch.rank for branch in hit.branches.values()) == reference.ranks


# -- bad inputs --------------------------------------------------------------------------------


@pytest.fixture
def docs(engine: LocalEngine) -> LocalEngine:
    engine.load_table(
        "docs",
        pa.table(
            {
                "id": [1, 2, 3],
                "body": ["red fox", "blue sky", "fox den"],
                "embedding": pa.array([[1, 0], [0, 1], [1, 1]], type=pa.list_(pa.float32())),
            }
        ),
        text_columns=["body"],
        embed_columns=["body"],
    )
    return engine


def test_missing_table(docs: LocalEngine) -> None:
    with pytest.raises(EngineError, match=r"table 'default\.public\.nope' not found"):
        docs.search(SearchPlan(source=Bm25Search(table="nope", column="body", query_text="x")))


def test_missing_bm25_index(docs: LocalEngine) -> None:
    docs.load_table("plain", pa.table({"id": [1], "body": ["fox"]}))
    with pytest.raises(EngineError, match="No BM25 index found on column 'body'"):
        docs.search(SearchPlan(source=Bm25Search(table="plain", column="body", query_text="fox")))


def test_missing_column(docs: LocalEngine) -> None:
    with pytest.raises(EngineError, match="column 'title' not found"):
        docs.search(
            SearchPlan(
                source=Bm25Search(table="docs", column="body", query_text="x"), columns=["title"]
            )
        )


def test_wrong_vector_dimension(docs: LocalEngine) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 2.0, 3.0])
    )
    with pytest.raises(
        PlanError, match="query vector has 3 dimensions; column 'embedding' holds 2"
    ):
        docs.search(plan)
    semantic_dimensions = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="body_embedding", query_vector=[1.0])
    )
    with pytest.raises(PlanError, match="holds 32"):
        docs.search(semantic_dimensions)


def test_a_shape_checked_against_a_table_is_not_checked_again(
    docs: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotdata_retrieval.engines.local import _search

    checked: list[SearchPlan] = []
    check_table = _search._check_table
    monkeypatch.setattr(
        _search,
        "_check_table",
        lambda plan, *rest: (checked.append(plan), check_table(plan, *rest)),
    )

    def text(query: str, **options: Any) -> SearchPlan:
        return SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text=query), **options
        )

    assert docs.search(text("fox", columns=["id"])).keys == [1, 3]
    assert docs.search(text("sky", columns=["id"])).keys == [2]
    assert len(checked) == 1  # the same shape, another query
    with pytest.raises(EngineError, match="column 'title' not found"):
        docs.search(text("fox", columns=["title"]))
    with pytest.raises(EngineError, match="column 'title' not found"):
        docs.search(text("fox", columns=["title"]))  # a refused shape is checked every time
    assert len(checked) == 3


def test_a_checked_shape_still_checks_the_query_vector_length(docs: LocalEngine) -> None:
    def nearest(vector: list[float]) -> SearchPlan:
        return SearchPlan(
            source=NearestNeighborSearch(table="docs", column="embedding", query_vector=vector)
        )

    assert len(docs.search(nearest([1.0, 0.0])).keys) == 3
    with pytest.raises(PlanError, match="query vector has 3 dimensions; column 'embedding'"):
        docs.search(nearest([1.0, 0.0, 0.5]))


@pytest.mark.parametrize(
    ("column", "valid", "refused", "message"),
    [
        ("n", 1, True, "with TRUE, a boolean"),
        ("n", 0, False, "with FALSE, a boolean"),
        ("flag", True, 1, "with 1, a number"),
        ("flag", True, 1.0, "with 1.0, a number"),
        ("flag", False, 0, "with 0, a number"),
    ],
)
def test_a_checked_shape_does_not_pass_a_filter_value_equal_in_python(
    engine: LocalEngine, column: str, valid: Any, refused: Any, message: str
) -> None:
    # 1 == 1.0 == True in Python, with one hash: a shape remembered for a filter on one
    # must not pass another that the column's kind refuses
    engine.load_table(
        "flags",
        pa.table({"id": [1, 2], "body": ["fox", "fox"], "n": [1, 0], "flag": [True, False]}),
        text_columns=["body"],
    )

    def plan(value: Any) -> SearchPlan:
        return SearchPlan(
            source=Bm25Search(table="flags", column="body", query_text="fox"),
            filter=Comparison(column=column, operator="=", value=value) | IsNull(column="id"),
        )

    assert len(engine.search(plan(valid)).keys) == 1
    for _ in range(2):
        with pytest.raises(PlanError, match=message):
            engine.search(plan(refused))


def test_a_checked_shape_without_values_still_checks_each_new_value(engine: LocalEngine) -> None:
    # a plan whose shape without its filter's values passed skips every check but the
    # values' own: a value of the same type that the column's type cannot read is refused
    engine.load_table(
        "counts",
        pa.table({"id": [1, 2, 3], "body": ["fox", "fox", "den"], "n": [42, 7, 42]}),
        text_columns=["body"],
    )

    def plan(value: Any) -> SearchPlan:
        return SearchPlan(
            source=Bm25Search(table="counts", column="body", query_text="fox"),
            filter=Comparison(column="n", operator="=", value=value),
        )

    assert engine.search(plan("42")).keys == [1]
    assert engine.search(plan("7")).keys == [2]  # another value, the same shape
    for _ in range(2):
        with pytest.raises(PlanError, match=r"'1\.5'"):
            engine.search(plan("1.5"))
    assert engine.search(plan(7)).keys == [2]


def test_the_shapes_a_table_remembers_are_bounded(docs: LocalEngine) -> None:
    from hotdata_retrieval.engines.local.tables import CHECKED_SHAPES

    loaded = docs._loaded("docs")
    for limit in range(1, CHECKED_SHAPES + 10):
        docs.search(
            SearchPlan(
                source=Bm25Search(table="docs", column="body", query_text="fox"), limit=limit
            )
        )
        assert len(loaded._checked_shapes) <= CHECKED_SHAPES
    assert loaded._checked_shapes


def test_k_larger_than_the_table_returns_every_match(docs: LocalEngine) -> None:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0]),
        limit=100,
    )
    assert docs.search(plan).keys == [1, 3, 2]


def test_stop_word_queries_return_nothing(docs: LocalEngine) -> None:
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="the and of"))
    assert docs.search(plan).keys == []


@pytest.mark.parametrize("query", ["!!! ... ???", "-- ;"])
def test_punctuation_queries_are_refused_or_empty_branches(docs: LocalEngine, query: str) -> None:
    with pytest.raises(PlanError, match="holds no word to search for"):
        Bm25Search(table="docs", column="body", query_text=query)
    branch = Bm25Search(table="docs", column="body", query_text=query, allow_empty=True)
    assert docs.search(SearchPlan(source=branch)).keys == []


def test_quotes_in_queries_are_text(docs: LocalEngine) -> None:
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox' OR 1=1 --"))
    assert sorted(docs.search(plan).keys) == [1, 3]


def test_empty_corpus(engine: LocalEngine) -> None:
    engine.load_table(
        "empty",
        pa.table({"id": pa.array([], pa.int64()), "body": pa.array([], pa.string())}),
        text_columns=["body"],
    )
    plan = SearchPlan(source=Bm25Search(table="empty", column="body", query_text="fox"))
    assert engine.search(plan).keys == []


def test_semantic_search_needs_the_embedding_model(docs: LocalEngine) -> None:
    plan = SearchPlan(source=VectorSearch(table="docs", column="body", query_text="fox"), limit=2)
    assert len(docs.search(plan)) == 2
    docs.embedder = HashingEmbedder(dimensions=32, seed=1)
    with pytest.raises(EngineError, match="was embedded by"):
        docs.search(plan)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key_column": "nope"}, "key column 'nope' not found"),
        ({"text_columns": ["nope"]}, "column 'nope' not found"),
        ({"text_columns": ["id"]}, "not text"),
    ],
)
def test_bad_loads(engine: LocalEngine, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EngineError, match=message):
        engine.load_table("docs", pa.table({"id": [1], "body": ["x"]}), **kwargs)


def test_duplicated_or_null_keys_are_rejected(engine: LocalEngine) -> None:
    with pytest.raises(EngineError, match="not unique"):
        engine.load_table("docs", pa.table({"id": [1, 1], "body": ["x", "y"]}))
    with pytest.raises(EngineError, match="NULL"):
        engine.load_table("docs", pa.table({"id": [1, None], "body": ["x", "y"]}))


# -- persistence and reloads --------------------------------------------------------------------


class CountingEmbedder(HashingEmbedder):
    """Counts how many texts it embeds."""

    def __init__(self) -> None:
        super().__init__(dimensions=8)
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return super().embed_documents(texts)


@pytest.mark.parametrize(
    "column",
    [
        pa.array([datetime.time(1, 2, 3), None], pa.time32("s")),
        pa.array([datetime.time(1, 2, 3, 4000), None], pa.time32("ms")),
        pa.array([datetime.time(1, 2, 3, 5), None], pa.time64("us")),
        pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5), None], pa.timestamp("s")),
        pa.array([datetime.date(2026, 1, 2), None], pa.date64()),
    ],
    ids=["time32[s]", "time32[ms]", "time64[us]", "timestamp[s]", "date64"],
)
def test_a_reopened_table_reads_a_temporal_column_as_loaded(tmp_path: Any, column: Any) -> None:
    # Parquet has no seconds unit nor date64: pyarrow reads time32[s] back as time32[ms]
    data = pa.table({"id": [1, 2], "body": ["fox", "owl"], "at": column})
    with LocalEngine(tmp_path) as engine:
        engine.load_table("docs", data, text_columns=["body"])
    with LocalEngine(tmp_path) as reopened:
        read = reopened.read_rows("docs", [1, 2])
    assert read.schema.field("at").type == column.type
    assert read.column("at").to_pylist() == column.to_pylist()


def test_reopening_keeps_tables_and_reloading_replaces(tmp_path: Any) -> None:
    table = pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]})
    with LocalEngine(tmp_path) as first:
        first.load_table("docs", table, text_columns=["body"])
        first.load_table("docs", table, text_columns=["body"])
    with LocalEngine(tmp_path) as second:
        assert second.sql("SELECT count(*) AS n FROM docs").column("n").to_pylist() == [2]
        plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))
        assert second.search(plan).keys == [1]
    versions = list((tmp_path / "tables" / "docs").iterdir())
    assert len([v for v in versions if v.name != "embeddings"]) == 1


def test_reload_embeds_only_changed_rows(tmp_path: Any) -> None:
    embedder = CountingEmbedder()
    with LocalEngine(tmp_path, embedder=embedder) as local:
        local.load_table(
            "docs", pa.table({"id": [1, 2], "body": ["a b", "c d"]}), embed_columns=["body"]
        )
        assert embedder.embedded == 2
        local.load_table(
            "docs",
            pa.table({"id": [1, 2, 3], "body": ["a b", "c d changed", "e"]}),
            embed_columns=["body"],
        )
        assert embedder.embedded == 4


class FailingEmbedder(HashingEmbedder):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model crashed")


def test_a_failed_load_leaves_the_previous_table(tmp_path: Any) -> None:
    with LocalEngine(tmp_path, embedder=FailingEmbedder(dimensions=8)) as local:
        local.load_table("docs", pa.table({"id": [1], "body": ["red fox"]}), text_columns=["body"])
        with pytest.raises(RuntimeError, match="model crashed"):
            local.load_table(
                "docs", pa.table({"id": [1, 2], "body": ["x", "y"]}), embed_columns=["body"]
            )
        assert local.sql("SELECT body FROM docs").column("body").to_pylist() == ["red fox"]
    with LocalEngine(tmp_path) as reopened:
        assert reopened.sql("SELECT body FROM docs").column("body").to_pylist() == ["red fox"]


# -- hardening: names, reserved columns, NULLs, ties, big k --------------------------------------


@pytest.mark.parametrize("name", ["a.b", "a/b", "../../escaped", ".", "x\\y", " padded"])
def test_unsafe_table_names_are_rejected_and_the_database_stays_usable(
    tmp_path: Any, name: str
) -> None:
    table = pa.table({"id": [1], "body": ["red fox"]})
    with LocalEngine(tmp_path / "db") as local:
        local.load_table("docs", table, text_columns=["body"])
        with pytest.raises((EngineError, PlanError)):
            local.load_table(name, table, text_columns=["body"])
    assert not (tmp_path / "escaped").exists()
    with LocalEngine(tmp_path / "db") as reopened:
        plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))
        assert reopened.search(plan).keys == [1]


@pytest.mark.parametrize("column", ["score", "_distance"])
def test_searchable_tables_may_not_hold_result_column_names(
    engine: LocalEngine, column: str
) -> None:
    with pytest.raises(EngineError, match=f"column '{column}' is reserved"):
        engine.load_table(
            "docs", pa.table({"id": [1], "body": ["x"], column: [1.0]}), text_columns=["body"]
        )
    engine.load_table("judgments", pa.table({"id": [1], column: [1.0]}))  # not searchable: fine


def test_null_text_gets_a_null_vector_and_is_never_a_vector_candidate(engine: LocalEngine) -> None:
    engine.load_table(
        "docs",
        pa.table({"id": [1, 2, 3], "body": ["red fox", None, "blue fox"]}),
        text_columns=["body"],
        embed_columns=["body"],
    )
    vectors = engine.sql("SELECT id, body_embedding IS NULL AS missing FROM docs ORDER BY id")
    assert vectors.column("missing").to_pylist() == [False, True, False]
    embedder = engine.embedder
    semantic = SearchPlan(source=VectorSearch(table="docs", column="body", query_text="fox"))
    nearest = NearestNeighborSearch(
        table="docs", column="body_embedding", query_vector=embedder.embed_query("fox")
    )
    assert 2 not in engine.search(semantic).keys
    fused = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[Bm25Search(table="docs", column="body", query_text="fox"), nearest]
        )
    )
    assert 2 not in engine.search(fused).keys
    # A NULL vector has no distance: no candidate in a single branch either.
    alone = engine.search(SearchPlan(source=nearest))
    assert 2 not in alone.keys and len(alone.keys) == engine.tables["docs"].rows - 1
    assert all(hit.distance is not None and hit.score is None for hit in alone)


def test_ties_at_the_k_cut_are_broken_by_key_and_pages_tile(engine: LocalEngine) -> None:
    bodies = ["fox"] * 12
    engine.load_table(
        "docs",
        pa.table({"id": list(range(100, 112)), "body": bodies}),
        text_columns=["body"],
        embed_columns=["body"],
    )
    for source in (
        Bm25Search(table="docs", column="body", query_text="fox"),
        VectorSearch(table="docs", column="body", query_text="fox"),
    ):
        pages = [
            engine.search(SearchPlan(source=source, limit=4, offset=offset)).keys
            for offset in (0, 4, 8)
        ]
        assert [key for page in pages for key in page] == list(range(100, 112))
        first = engine.sql(
            f"SELECT id FROM {'bm25_search' if source.kind == 'text' else 'vector_search'}"
            "('docs', 'body', 'fox', 3)"
        )
        assert first.column("id").to_pylist() == [100, 101, 102]


def test_a_huge_k_is_capped_at_the_row_count(engine: LocalEngine) -> None:
    engine.load_table(
        "docs", pa.table({"id": [1, 2], "body": ["fox", "fox den"]}), text_columns=["body"]
    )
    rows = engine.sql("SELECT id FROM bm25_search('docs', 'body', 'fox', 9223372036854775807)")
    assert sorted(rows.column("id").to_pylist()) == [1, 2]


def test_an_unknown_filter_column_is_named(docs: LocalEngine) -> None:
    plan = SearchPlan(
        source=Bm25Search(table="docs", column="body", query_text="fox"),
        filter=Comparison(column="lang", operator="=", value="en"),
    )
    with pytest.raises(EngineError, match="column 'lang' not found"):
        docs.search(plan)


def test_a_column_named_like_a_debug_column_can_be_projected(docs: LocalEngine) -> None:
    docs.load_table(
        "ranked",
        pa.table(
            {
                "id": [1, 2],
                "body": ["red fox", "blue sky"],
                "text_rank": ["gold", "silver"],
                "embedding": pa.array([[1, 0], [0, 1]], type=pa.list_(pa.float32())),
            }
        ),
        text_columns=["body"],
    )
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="ranked", column="body", query_text="fox"),
                NearestNeighborSearch(table="ranked", column="embedding", query_vector=[1.0, 0.0]),
            ]
        ),
        columns=["id", "text_rank"],
    )
    result = docs.search(plan)
    assert result.keys[0] == 1
    assert result.hits[0].columns["text_rank"] == "gold"
    assert result.hits[0].branches["text"].rank is None  # not reported: the name is the user's


def test_dictionary_encoded_text_is_searchable(engine: LocalEngine) -> None:
    body = pa.array(["red fox", "blue sky"]).dictionary_encode()
    engine.load_table("docs", pa.table({"id": [1, 2], "body": body}), text_columns=["body"])
    plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))
    assert engine.search(plan).keys == [1]
