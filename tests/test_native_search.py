"""The local engine answers a BM25 or nearest-neighbour branch, or a reciprocal rank or min-max
fusion of such branches, natively (``engines/local/native.py``) with exactly the rows its
compiled statement returns on DataFusion: the same keys, order, scores, distances, branch ranks
and raw scores, on random corpora built for ties (at the depth cut and the page cut, within a
branch and between fused scores), rows without vectors, keys that do not follow row order,
filters of SQL's three-valued logic, and pages. Plans it does not answer run the statement."""

from __future__ import annotations

import decimal
import math
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    DistributionBasedScoreFusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    Not,
    Or,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.fastpath import TIE_COLUMN
from hotdata_retrieval.engines.results import SearchResult, executed_plan, search_result

WORDS = ("fox", "dog", "cat", "owl", "bee")


def _corpus(seed: int, rows: int, *, text_keys: bool) -> pa.Table:
    """Short texts over five words (BM25 ties are common), small integral 2-d vectors
    (distance ties are common), some rows without a vector or a category, and keys in an
    order unrelated to the rows' (so a tie cut by key is not a tie cut by rowid)."""
    rng = random.Random(seed)
    keys: list[Any] = list(range(rows))
    rng.shuffle(keys)
    if text_keys:
        keys = [f"k{key:03d}" if key % 2 else f"K{key}" for key in keys]
    return pa.table(
        {
            "id": keys,
            "code": [f"c{position:03d}" for position in range(rows)],
            "body": [" ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for _ in range(rows)],
            "title": [" ".join(rng.choices(WORDS, k=rng.randint(1, 2))) for _ in range(rows)],
            "category": [rng.choice(["a", "b", None]) for _ in range(rows)],
            "rating": [rng.choice([1, 2, 3, None]) for _ in range(rows)],
            "embedding": pa.array(
                [
                    None
                    if rng.random() < 0.1
                    else [float(rng.randint(-3, 3)), float(rng.randint(1, 3))]
                    for _ in range(rows)
                ],
                pa.list_(pa.float32()),
            ),
        }
    )


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        local.load_table(
            "numbers", _corpus(11, 70, text_keys=False), text_columns=["body", "title"]
        )
        local.load_table("texts", _corpus(12, 70, text_keys=True), text_columns=["body", "title"])
        yield local


class _Spy:
    """Counts the statements the engine hands to DataFusion."""

    def __init__(self, engine: LocalEngine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statements: list[str] = []
        run = engine._sessions.run

        def counted(statement: str, reported: str) -> Any:
            self.statements.append(statement)
            return run(statement, reported)

        monkeypatch.setattr(engine._sessions, "run", counted)


def statement_result(engine: LocalEngine, plan: SearchPlan) -> SearchResult:
    """The plan's compiled statement run on DataFusion, as typed hits: the plan the engine
    executes, its filter values typed by the tables' columns as the engine types them (a
    number compared with a float32 column rounded to float32, with a decimal column as the
    decimal it writes: docs/plans.md)."""
    from hotdata_retrieval.compile import HOTDATA, compile_plan
    from hotdata_retrieval.compile.statements import render
    from hotdata_retrieval.engines.checks import (
        ColumnFacts,
        arrow_column_facts,
        arrow_float32_columns,
        merged_kinds,
    )
    from hotdata_retrieval.engines.local._search import check_plan, unbound_table_searches
    from hotdata_retrieval.engines.local.fastpath import restore_tie_breaks

    loaded = {table: engine._loaded(table) for table in plan.tables}
    decimals: dict[str, tuple[int, int]] = {}
    for one in loaded.values():
        decimals.update(arrow_column_facts(one.data.schema).decimals)
    executed = executed_plan(
        plan,
        merged_kinds(check_plan(plan, loaded).values()),
        ColumnFacts(
            float32=frozenset().union(
                *(arrow_float32_columns(one.data.schema) for one in loaded.values())
            ),
            decimals=decimals,
        ),
    )
    # The statement as the engine runs it row by row: the key tie-break a nearest branch
    # leaves out for an index's sake put back, so tied rows come in key order (their order
    # against a ranking is checked in tests/parity/test_nearest_tie_filters.py), and a table
    # search over a table keyed otherwise than the plan unbounded.
    tree = compile_plan(executed)
    restore_tie_breaks(tree)
    rekeyed = {
        table: one.entry.rows
        for table, one in loaded.items()
        if executed.key_column is not None and one.entry.key_column != executed.key_column
    }
    if rekeyed:
        unbound_table_searches(engine, tree, rekeyed)
    statement = render(HOTDATA, tree)
    return search_result(plan, executed, engine.sql(statement).to_pylist(), to_sql(executed))


FILTERS = [
    None,
    Comparison(column="category", operator="=", value="a"),
    Not(operand=Comparison(column="category", operator="=", value="a")),
    Or(
        operands=[
            Comparison(column="rating", operator=">=", value=2),
            IsNull(column="category"),
        ]
    ),
    Not(operand=InList(column="rating", values=[1, 3])),
]


@st.composite
def fused_plans(draw: st.DrawFn) -> SearchPlan:
    table = draw(st.sampled_from(["numbers", "texts"]))
    branches: list[Any] = []
    for index in range(draw(st.integers(min_value=2, max_value=4))):
        if draw(st.booleans()):
            branches.append(
                Bm25Search(
                    table=table,
                    column=draw(st.sampled_from(["body", "title"])),
                    query_text=" ".join(
                        draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
                    ),
                    name=f"b{index}",
                )
            )
        else:
            branches.append(
                NearestNeighborSearch(
                    table=table,
                    column="embedding",
                    query_vector=[float(draw(st.integers(-2, 2))), 1.0],
                    metric=draw(st.sampled_from(["cosine", "l2", "dot"])),
                    name=f"b{index}",
                )
            )
    depth = draw(st.sampled_from([3, 7, 20, 100]))
    limit = draw(st.integers(min_value=1, max_value=depth))
    offset = draw(st.integers(min_value=0, max_value=depth - limit))
    weights = draw(
        st.none()
        | st.lists(
            st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=len(branches), max_size=len(branches)
        ).filter(any)
    )
    if draw(st.booleans()):
        fusion: Any = ReciprocalRankFusion(
            branches=branches,
            depth=depth,
            weights=weights,
            rank_constant=draw(st.sampled_from([1, 2, 60])),
            min_score=draw(st.none() | st.sampled_from([0.01, 0.03])),
        )
    else:
        fusion = MinMaxFusion(
            branches=branches,
            depth=depth,
            weights=weights,
            min_score=draw(st.none() | st.sampled_from([0.2, 0.5, 0.9])),
        )
    include_branch_scores = draw(st.booleans())
    nearest = [b.name for b in branches if isinstance(b, NearestNeighborSearch)]
    # page_scores computes a nearest branch's distance for rows it did not return; the plan
    # returns it only with the branch scores
    page_scores = (
        draw(st.lists(st.sampled_from(nearest), unique=True))
        if include_branch_scores and nearest
        else []
    )
    return SearchPlan(
        source=fusion,
        columns=draw(st.sampled_from([["id"], ["body", "category"], ["rating", "title"]])),
        limit=limit,
        offset=offset,
        filter=draw(st.sampled_from(FILTERS)),
        include_branch_scores=include_branch_scores,
        page_scores=page_scores,
    )


@st.composite
def single_plans(draw: st.DrawFn) -> SearchPlan:
    table = draw(st.sampled_from(["numbers", "texts"]))
    if draw(st.booleans()):
        branch: Any = Bm25Search(
            table=table,
            column=draw(st.sampled_from(["body", "title"])),
            query_text=" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))),
        )
    else:
        branch = NearestNeighborSearch(
            table=table,
            column="embedding",
            query_vector=[float(draw(st.integers(-2, 2))), 1.0],
            metric=draw(st.sampled_from(["cosine", "l2", "dot"])),
        )
    return SearchPlan(
        source=branch,
        columns=draw(st.sampled_from([["id"], ["body", "category"], ["rating", "title"]])),
        limit=draw(st.integers(min_value=1, max_value=30)),
        offset=draw(st.integers(min_value=0, max_value=80)),
        filter=draw(st.sampled_from(FILTERS)),
        # a nearest branch cuts ties by rowid whatever the key: another unique key is native
        key_column=draw(st.sampled_from(["id", "code"]))
        if isinstance(branch, NearestNeighborSearch)
        else "id",
    )


@settings(max_examples=200, deadline=None)
@given(plan=fused_plans() | single_plans())
def test_the_native_answer_is_the_statement_answer(engine: LocalEngine, plan: SearchPlan) -> None:
    expected = statement_result(engine, plan)
    with pytest.MonkeyPatch.context() as patch:
        spy = _Spy(engine, patch)
        result = engine.search(plan)
    assert spy.statements == []  # answered natively: DataFusion ran nothing
    assert result.hits == expected.hits
    assert result.sql == expected.sql
    assert result.underfilled == expected.underfilled


def _page_plan(table: str, **options: Any) -> SearchPlan:
    text = Bm25Search(table=table, column="body", query_text="fox dog")
    nearest = NearestNeighborSearch(table=table, column="embedding", query_vector=[1.0, 1.0])
    return SearchPlan(source=ReciprocalRankFusion(branches=[text, nearest], depth=30), **options)


@pytest.mark.parametrize("table", ["numbers", "texts"])
def test_pages_are_slices_of_one_ranking(engine: LocalEngine, table: str) -> None:
    whole = engine.search(_page_plan(table, limit=30)).keys
    pages = [engine.search(_page_plan(table, limit=7, offset=start)).keys for start in (0, 7, 14)]
    assert [key for page in pages for key in page] == whole[:21]


def test_a_text_query_that_matches_nothing_fuses_the_other_branch(engine: LocalEngine) -> None:
    text = Bm25Search(table="numbers", column="body", query_text="zebra")
    nearest = NearestNeighborSearch(table="numbers", column="embedding", query_vector=[1.0, 1.0])
    plan = SearchPlan(source=MinMaxFusion(branches=[text, nearest]), limit=5)
    result = engine.search(plan)
    assert result.hits == statement_result(engine, plan).hits
    assert len(result.hits) == 5
    assert all(hit.branches["text"].rank is None for hit in result.hits)


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(
            SearchPlan(
                source=DistributionBasedScoreFusion(
                    branches=[
                        Bm25Search(table="numbers", column="body", query_text="fox"),
                        NearestNeighborSearch(
                            table="numbers", column="embedding", query_vector=[1.0, 1.0]
                        ),
                    ]
                )
            ),
            id="dbsf",
        ),
        pytest.param(
            SearchPlan(
                source=ReciprocalRankFusion(
                    branches=[
                        Bm25Search(table="numbers", column="body", query_text="fox"),
                        NearestNeighborSearch(
                            table="numbers", column="embedding", query_vector=[1.0, 1.0]
                        ),
                    ]
                ),
                key_column="code",
            ),
            id="another key column",
        ),
        pytest.param(
            SearchPlan(
                source=Bm25Search(table="numbers", column="body", query_text="fox"),
                key_column="code",
            ),
            id="text branch on another key column",
        ),
    ],
)
def test_plans_it_does_not_answer_run_the_statement(
    engine: LocalEngine, plan: SearchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = statement_result(engine, plan)
    spy = _Spy(engine, monkeypatch)
    result = engine.search(plan)
    assert len(spy.statements) == 1
    assert result.hits == expected.hits


def test_an_engine_embedded_branch_runs_the_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as engine:
        engine.load_table(
            "t", _corpus(3, 20, text_keys=False), text_columns=["body"], embed_columns=["body"]
        )
        plan = SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="t", column="body", query_text="fox"),
                    VectorSearch(table="t", column="body", query_text="fox"),
                ]
            )
        )
        spy = _Spy(engine, monkeypatch)
        result = engine.search(plan)
        assert len(spy.statements) == 1
        assert result.hits == statement_result(engine, plan).hits


def test_an_infinite_distance_runs_a_score_fusion_as_the_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A squared L2 distance beyond Float32 is an infinity in the statement; min-max of it is
    the statement's own arithmetic, so the statement runs. Reciprocal rank fusion needs only
    ranks and is answered natively."""
    data = pa.table(
        {
            "id": [1, 2, 3],
            "body": ["fox", "fox dog", "dog"],
            "embedding": pa.array([[3e38, 0.0], [1.0, 0.0], [0.0, 1.0]], pa.list_(pa.float32())),
        }
    )
    with LocalEngine() as engine:
        engine.load_table("t", data, text_columns=["body"], vector_metric="l2")
        branches = [
            Bm25Search(table="t", column="body", query_text="fox"),
            NearestNeighborSearch(
                table="t", column="embedding", query_vector=[-3e38, 0.0], metric="l2"
            ),
        ]
        for fusion, statements in (
            (MinMaxFusion(branches=branches), 1),
            (ReciprocalRankFusion(branches=branches), 0),
        ):
            plan = SearchPlan(source=fusion, limit=3)
            expected = statement_result(engine, plan)
            with monkeypatch.context() as patch:
                spy = _Spy(engine, patch)
                result = engine.search(plan)
            assert len(spy.statements) == statements
            assert [hit.key for hit in result] == [hit.key for hit in expected]
            assert result.hits[0].branches["nearest"].raw_score is not None


def test_a_table_with_a_column_named_like_a_computed_one_runs_the_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _corpus(5, 20, text_keys=False).append_column(TIE_COLUMN, pa.array([1.0] * 20))
    with LocalEngine() as engine:
        engine.load_table("t", data)
        plan = SearchPlan(
            source=NearestNeighborSearch(table="t", column="embedding", query_vector=[1.0, 1.0]),
            limit=5,
        )
        spy = _Spy(engine, monkeypatch)
        result = engine.search(plan)
        assert len(spy.statements) == 1
        assert result.hits == statement_result(engine, plan).hits


# -- cases found by breaking the native search -------------------------------------------------


def _assert_native_is_statement(engine: LocalEngine, plan: SearchPlan) -> None:
    assert engine.search(plan).hits == statement_result(engine, plan).hits


def _floats_engine(values: pa.Array) -> LocalEngine:
    engine = LocalEngine()
    engine.load_table(
        "t",
        pa.table(
            {
                "id": list(range(len(values))),
                "body": ["fox"] * len(values),
                "x": values,
                "emb": pa.array(
                    [[1.0, float(i)] for i in range(len(values))], pa.list_(pa.float32())
                ),
            }
        ),
        text_columns=["body"],
    )
    return engine


def _every_shape(filter_: Any) -> list[SearchPlan]:
    text = Bm25Search(table="t", column="body", query_text="fox")
    nearest = NearestNeighborSearch(table="t", column="emb", query_vector=[1.0, 0.5])
    return [
        SearchPlan(source=source, limit=5, filter=filter_)
        for source in (text, nearest, ReciprocalRankFusion(branches=[text, nearest]))
    ]


@pytest.mark.parametrize(
    "filter_",
    [
        Comparison(column="x", operator="<", value=0),
        Comparison(column="x", operator=">", value=0),
        Comparison(column="x", operator="=", value=-2.0),
        Comparison(column="x", operator="<>", value=1.0),
        InList(column="x", values=[1.0, 2.0]),
    ],
)
def test_nan_compares_in_total_order_as_datafusion_does(filter_: Any) -> None:
    """DataFusion orders floats by IEEE 754 totalOrder: a NaN with its sign bit set is below
    every number, one without above, and a NaN equals a NaN."""
    negative_nan = np.array([0xFFF8_0000_0000_0000], dtype=np.uint64).view(np.float64)
    values = pa.array(np.concatenate([negative_nan, [float("nan"), 1.0, -2.0, 0.0]]), pa.float64())
    for kind in (pa.float64(), pa.float32()):
        with _floats_engine(values.cast(kind)) as engine:
            for plan in _every_shape(filter_):
                _assert_native_is_statement(engine, plan)


@pytest.mark.parametrize(
    ("values", "filter_"),
    [
        (
            pa.array(
                [decimal.Decimal("1.15"), decimal.Decimal("123456789.12")], pa.decimal128(12, 2)
            ),
            Comparison(column="x", operator="<=", value=1.15),
        ),
        (
            pa.array(
                [decimal.Decimal("1.15"), decimal.Decimal("123456789.12")], pa.decimal128(12, 2)
            ),
            Comparison(column="x", operator="=", value=123456789.12),
        ),
        (pa.array([16777216.0, 0.1], pa.float32()), InList(column="x", values=[16777217, 0.5])),
        (pa.array([16777216.0, 0.1], pa.float32()), InList(column="x", values=[0.5, "0.1"])),
        (pa.array([1.0, 2.0], pa.float32()), InList(column="x", values=[], negated=True)),
    ],
)
def test_filters_the_mask_cannot_read_as_sql_run_the_statement(values: Any, filter_: Any) -> None:
    with _floats_engine(values) as engine:
        for plan in _every_shape(filter_):
            _assert_native_is_statement(engine, plan)


def test_a_distance_too_small_for_float32_is_zero_on_every_path() -> None:
    """Dot distances below Float32's smallest round to -0.0 or 0.0 by sign; SQL orders -0.0
    before 0.0, so every path reports 0.0 and the rows tie."""
    with LocalEngine() as engine:
        engine.load_table(
            "t",
            pa.table(
                {
                    "id": [0, 1, 2],
                    "emb": pa.array(
                        [[-1e-20, 0.0], [1e-20, 0.0], [1.0, 0.0]], pa.list_(pa.float32())
                    ),
                }
            ),
            vector_metric="dot",
        )
        tiny = NearestNeighborSearch(
            table="t", column="emb", query_vector=[1e-30, 0.0], metric="dot", name="a"
        )
        other = NearestNeighborSearch(
            table="t", column="emb", query_vector=[1.0, 1.0], metric="l2", name="b"
        )
        for source in (tiny, ReciprocalRankFusion(branches=[tiny, other])):
            plan = SearchPlan(source=source, limit=3, include_branch_scores=source is not tiny)
            _assert_native_is_statement(engine, plan)
        distances = [hit.distance for hit in engine.search(SearchPlan(source=tiny, limit=3))]
        assert [math.copysign(1.0, d) for d in distances if d == 0.0] == [1.0, 1.0]


@pytest.fixture(scope="module")
def wide() -> Iterator[LocalEngine]:
    """600 rows of the tie-heavy corpus: a filter can keep a small share of them."""
    with LocalEngine() as local:
        local.load_table("wide", _corpus(13, 600, text_keys=False), text_columns=["body"])
        yield local


@pytest.mark.parametrize("kept", [1, 5, 9, 40, 75, 76, 300])
@pytest.mark.parametrize("limit", [1, 10, 30])
def test_a_selective_filter_answers_as_the_statement(
    wide: LocalEngine, kept: int, limit: int
) -> None:
    """A filter keeping few rows: the nearest branch ranks the kept rows alone (at most one
    row in SELECTIVE_MASK_FRACTION) and the text branch asks BM25 for a growing prefix of its
    order; both give the statement's rows, ties and pages included."""
    codes = random.Random(kept).sample([f"c{position:03d}" for position in range(600)], kept)
    text = Bm25Search(table="wide", column="body", query_text="fox owl")
    nearest = NearestNeighborSearch(table="wide", column="embedding", query_vector=[1.0, 2.0])
    for source in (text, nearest, ReciprocalRankFusion(branches=[text, nearest], depth=40)):
        for offset in (0, 3):
            plan = SearchPlan(
                source=source,
                filter=InList(column="code", values=codes),
                limit=limit,
                offset=offset,
            )
            _assert_native_is_statement(wide, plan)


def test_the_native_path_renders_its_statement_only_when_it_is_read(
    wide: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native answer reads no SQL: ``SearchResult.sql`` is rendered on first access,
    once, and is the compiled statement."""
    from hotdata_retrieval.compile.render import to_sql
    from hotdata_retrieval.engines.local import _search

    rendered: list[SearchPlan] = []

    def counting(plan: SearchPlan, *arguments: Any) -> str:
        rendered.append(plan)
        return to_sql(plan, *arguments)

    monkeypatch.setattr(_search, "to_sql", counting)
    plan = SearchPlan(
        source=NearestNeighborSearch(table="wide", column="embedding", query_vector=[1.0, 2.0]),
        limit=3,
    )
    result = wide.search(plan)
    assert rendered == []
    assert result.sql == to_sql(executed_plan(plan), wide.profile)
    assert result.sql == result.sql and len(rendered) == 1


@pytest.fixture(scope="module")
def dense_engine() -> Iterator[LocalEngine]:
    """A table whose rows all have a non-zero vector, large enough that an unfiltered cosine
    scan is screened by the column's reciprocal norms and a sampled threshold
    (``nearest._screen_cosine``), the integral vectors tying rows at every cut."""
    rows = 9_000
    rng = random.Random(21)
    keys = list(range(rows))
    rng.shuffle(keys)
    table = pa.table(
        {
            "id": keys,
            "body": [" ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for _ in range(rows)],
            "category": [rng.choice(["a", "b"]) for _ in range(rows)],
            "embedding": pa.array(
                [[float(rng.randint(-3, 3)), float(rng.randint(1, 3))] for _ in range(rows)],
                pa.list_(pa.float32()),
            ),
        }
    )
    with LocalEngine() as local:
        local.load_table("dense", table, text_columns=["body"])
        yield local


@pytest.mark.parametrize("query_vector", [[1.0, 1.0], [-2.0, 1.0], [0.5, 3.0]])
@pytest.mark.parametrize(
    ("fused", "limit", "offset"), [(True, 10, 0), (True, 7, 14), (False, 10, 0), (False, 30, 45)]
)
def test_the_column_screen_answers_as_the_statement(
    dense_engine: LocalEngine, query_vector: list[float], fused: bool, limit: int, offset: int
) -> None:
    nearest = NearestNeighborSearch(table="dense", column="embedding", query_vector=query_vector)
    source: Any = nearest
    if fused:
        text = Bm25Search(table="dense", column="body", query_text="fox dog")
        source = ReciprocalRankFusion(branches=[text, nearest], depth=60)
    plan = SearchPlan(source=source, limit=limit, offset=offset, include_branch_scores=fused)
    with pytest.MonkeyPatch.context() as patch:
        spy = _Spy(dense_engine, patch)
        result = dense_engine.search(plan)
    assert spy.statements == []
    index = dense_engine._loaded("dense").vector_index("embedding")
    assert isinstance(index._cosine_reciprocals, np.ndarray)  # the column screen ran
    assert result.hits == statement_result(dense_engine, plan).hits
    if not fused:
        # The statement's nearest branch runs the same scan (the fast-path rewrite): the
        # page's distances are checked against a float64 scan of every row too.
        matrix = np.asarray(index.matrix, dtype=np.float64)
        query = np.float32(query_vector).astype(np.float64)
        cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
        expected = np.sort((1 - cosines).astype(np.float32))[offset : offset + limit]
        assert [hit.ranking_value for hit in result.hits] == expected.tolist()
