"""A dialect and fusion methods added from outside the library, through its extension points.

Everything below lives in this test only; it touches no library source file:

- the toy dialect needed **no** library file touched (:data:`TOY_DIALECT_TOUCHED`): one
  sqlglot dialect whose generator spells full-text search ``fts_match`` and has no lowering
  for nearest-neighbour search, one ``PlanCompiler`` subclass, one ``DialectProfile``;
- the toy fusion ("max rank": a row's score is the largest ``1 / rank`` over the branches
  that found it) needed **no** library file touched (:data:`TOY_FUSION_TOUCHED`): one
  ``Fusion`` subclass registered with ``register_fusion``, one ``visit_max_rank_fusion`` on a
  compiler subclass, one reference function registered with ``register_reference_fusion``;
- a score-normalised fusion (min-max normalised raw scores, summed: the shape issue 15's
  methods take) shows the other hook: window columns added to each branch's ranked CTE.

Inside the library, a new fusion method is the same three pieces with the visitor written on
``PlanCompiler`` itself (``docs/architecture.md``, "How to add a fusion").
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, ClassVar

import attrs
import pyarrow as pa
import pytest
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    SearchPlan,
    UnknownDialectError,
    UnsupportedFeatureError,
    VectorSearch,
    compile_plan,
    to_sql,
)
from hotdata_retrieval.compile import (
    COMPILER_TRANSFORMS,
    HOTDATA,
    BranchRequest,
    CompiledBranch,
    DialectProfile,
    FusedBranch,
    FusedScore,
    PlanCompiler,
    SemanticSearch,
    TableFunction,
    TextSearch,
    get_dialect,
    register_dialect,
)
from hotdata_retrieval.compile.compiler import column, identifier, table_reference
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.fusion import (
    FusedHit,
    fuse_candidates,
    rank_branch,
    reference_fusion,
    register_reference_fusion,
)
from hotdata_retrieval.plan.document import plan_from_document, plan_json_schema, plan_to_document
from hotdata_retrieval.plan.search import Fusion, fusion_methods, register_fusion

TOY_DIALECT_TOUCHED: tuple[str, ...] = ()
"""Library source files the toy dialect needed changed: none."""

TOY_FUSION_TOUCHED: tuple[str, ...] = ()
"""Library source files the toy fusion method needed changed: none."""


# -- a toy dialect ------------------------------------------------------------------------------


class Toy(Postgres):
    """A toy engine's SQL: full-text search is ``fts_match(table, column, query)``, with no
    bound argument, and it has no nearest-neighbour search at all."""

    class Generator(Postgres.Generator):  # type: ignore[misc]
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **Postgres.Generator.TRANSFORMS,
            **COMPILER_TRANSFORMS,
        }
        SEARCH_NODES: ClassVar[dict[Any, Any]] = {
            TextSearch: TableFunction("fts_match"),
            SemanticSearch: TableFunction("semantic_match"),
        }


class ToyCompiler(PlanCompiler):
    """The toy engine's text search takes no k: the branch always bounds with LIMIT."""

    def visit_bm25_search(self, branch: Bm25Search, request: BranchRequest) -> CompiledBranch:
        source = exp.Table(
            this=self.search(
                TextSearch(
                    this=table_reference(branch.table),
                    column=identifier(branch.column),
                    query=self.binder.text(branch, "query_text"),
                )
            )
        )
        select = self.branch_select(
            request,
            raw=column("score"),
            source=source,
            raw_column="score",
            higher_is_better=True,
            tie_break=True,
            bounded=True,
        )
        return CompiledBranch(select=select)


TOY = register_dialect(DialectProfile(name="toy", sqlglot_dialect=Toy, compiler=ToyCompiler))

TEXT = Bm25Search(table="docs", column="body", query_text="it's here")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.5, -1.0])


def test_the_toy_dialect_spells_text_search_its_own_way() -> None:
    sql = to_sql(SearchPlan(source=TEXT, limit=5), "toy")
    assert "FROM FTS_MATCH('default.public.docs', 'body', 'it''s here')" in sql
    assert "LIMIT 5" in sql and "bm25_search" not in sql
    assert get_dialect("toy") is TOY
    assert TOY.text_search_function == "fts_match"  # what a reader of its SQL looks for
    assert TOY.distance_functions == {}


def test_the_toy_dialect_compiles_semantic_search_without_a_scalar_distance() -> None:
    filtered = SearchPlan(
        source=VectorSearch(table="docs", column="body", query_text="q"),
        filter=Comparison(column="lang", operator="=", value="en"),
    )
    sql = to_sql(filtered, TOY)
    assert "FROM SEMANTIC_MATCH('default.public.docs', 'body', 'q', 10)" in sql


@pytest.mark.parametrize(
    "plan",
    [
        SearchPlan(source=NEAREST),
        SearchPlan(source=NEAREST, filter=Comparison(column="lang", operator="=", value="en")),
    ],
    ids=["nearest", "filtered nearest"],
)
def test_the_toy_dialect_refuses_nearest_neighbour_search_while_compiling(
    plan: SearchPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_text(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("SQL text was written before the plan was refused")

    monkeypatch.setattr(Toy, "generate", no_text)
    message = r"^unsupported on toy: nearest-neighbour search \(vector distance\)$"
    with pytest.raises(UnsupportedFeatureError, match=message):
        to_sql(plan, "toy")
    with pytest.raises(UnsupportedFeatureError, match=message):
        compile_plan(plan, "toy")


def test_a_toy_fusion_of_a_nearest_branch_is_refused_too() -> None:
    plan = SearchPlan(source=MaxRankFusion(branches=[TEXT, NEAREST]))
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on toy: "):
        to_sql(plan, TOY)


# -- a toy fusion method: max rank ---------------------------------------------------------------


@register_fusion
@attrs.frozen(kw_only=True)
class MaxRankFusion(Fusion):
    """Max-rank fusion: a row scores the largest ``1 / rank`` over the branches that found it."""

    visit_name: ClassVar[str] = "max_rank_fusion"
    method: ClassVar[str] = "max_rank"


def max_rank_reference(
    fusion: MaxRankFusion,
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    limit: int | None,
    offset: int,
) -> list[FusedHit]:
    """The reference: ``max(1 / rank)`` over the branches that found the row."""
    return fuse_candidates(
        ranked_lists,
        lambda key_ranks, raw: max(1.0 / rank for rank in key_ranks if rank is not None),
        ranks=ranks,
        limit=limit,
        offset=offset,
    )


register_reference_fusion(MaxRankFusion, max_rank_reference)


@register_fusion
@attrs.frozen(kw_only=True)
class ToyMinMaxFusion(Fusion):
    """Score-normalised fusion: each branch's raw scores scaled to [0, 1] over its
    candidates (best 1), summed over the branches that found the row (the library's own
    ``MinMaxFusion`` is a weighted convex combination; this toy stays unweighted)."""

    visit_name: ClassVar[str] = "toy_min_max_fusion"
    method: ClassVar[str] = "toy_min_max"


def min_max_reference(
    fusion: ToyMinMaxFusion,
    ranked_lists: Sequence[Sequence[Hashable]],
    *,
    ranks: Sequence[Sequence[int]] | None,
    scores: Sequence[Sequence[float]] | None,
    limit: int | None,
    offset: int,
) -> list[FusedHit]:
    assert scores is not None
    bounds = [(min(raw), max(raw)) if raw else (0.0, 0.0) for raw in scores]

    def score(key_ranks: Sequence[int | None], raw: Sequence[float | None]) -> float:
        total = 0.0
        for (low, high), value, branch in zip(bounds, raw, fusion.branches):
            if value is None or high == low:
                continue
            scaled = (value - low) / (high - low)
            total += scaled if branch.higher_is_better else 1.0 - scaled
        return total

    return fuse_candidates(
        ranked_lists, score, ranks=ranks, scores=scores, limit=limit, offset=offset
    )


register_reference_fusion(ToyMinMaxFusion, min_max_reference)


class FusionsCompiler(PlanCompiler):
    """The Hotdata compiler with the two toy fusion methods' visitors."""

    def visit_max_rank_fusion(
        self, fusion: MaxRankFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        terms = [
            exp.Coalesce(
                this=exp.Div(this=exp.Literal.number("1.0"), expression=branch.rank, typed=True),
                expressions=[exp.Literal.number(0)],
            )
            for branch in branches
        ]
        return FusedScore(score=exp.Greatest(this=terms[0], expressions=terms[1:]))

    def visit_toy_min_max_fusion(
        self, fusion: ToyMinMaxFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        ranked_columns = []
        terms: list[exp.Expr] = []
        for fused in branches:
            raw = exp.column(fused.branch.raw_score_column)
            ranked_columns.append(
                (
                    exp.alias_(exp.Window(this=exp.Min(this=raw.copy())), "raw_low"),
                    exp.alias_(exp.Window(this=exp.Max(this=raw.copy())), "raw_high"),
                )
            )
            low, high = fused.column("raw_low"), fused.column("raw_high")
            scaled = exp.Div(
                this=exp.Paren(
                    this=exp.Sub(
                        this=exp.Cast(this=fused.raw, to=exp.DataType.build("DOUBLE")),
                        expression=exp.Cast(this=low, to=exp.DataType.build("DOUBLE")),
                    )
                ),
                expression=exp.Nullif(
                    this=exp.Paren(
                        this=exp.Sub(
                            this=exp.Cast(this=high, to=exp.DataType.build("DOUBLE")),
                            expression=exp.Cast(this=low.copy(), to=exp.DataType.build("DOUBLE")),
                        )
                    ),
                    expression=exp.Literal.number(0),
                ),
                typed=True,
            )
            if not fused.branch.higher_is_better:
                scaled = exp.Sub(this=exp.Literal.number("1.0"), expression=exp.Paren(this=scaled))
            terms.append(exp.Coalesce(this=scaled, expressions=[exp.Literal.number(0)]))
        score = terms[0]
        for term in terms[1:]:
            score = exp.Add(this=score, expression=term)
        return FusedScore(score=score, ranked_columns=tuple(ranked_columns))


FUSIONS = attrs.evolve(HOTDATA, name="hotdata-toy-fusions", compiler=FusionsCompiler)
"""The Hotdata dialect compiled by :class:`FusionsCompiler` (not registered: passed as is)."""


def test_the_toy_fusion_is_a_plan_document_method() -> None:
    assert {"rrf", "max_rank", "toy_min_max"} <= set(fusion_methods())
    plan = SearchPlan(source=MaxRankFusion(branches=[TEXT, NEAREST], depth=40))
    document = plan_to_document(plan)
    assert document["fusion"] == {
        "method": "max_rank",
        "depth": 40,
        "min_score": None,
        "ranking": "competition",
    }
    assert plan_from_document(document) == plan
    schema = plan_json_schema()
    assert {"$ref": "#/$defs/fusion_max_rank"} in schema["$defs"]["fusion"]["oneOf"]
    assert schema["$defs"]["fusion_max_rank"]["required"] == ["method"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(schema).validate(document)


def test_the_default_dialect_has_no_visitor_for_the_toy_fusion() -> None:
    plan = SearchPlan(source=MaxRankFusion(branches=[TEXT, NEAREST]))
    with pytest.raises(UnsupportedFeatureError, match=r"^unsupported on hotdata: .*'max_rank'"):
        to_sql(plan)


def test_native_hybrid_search_takes_only_reciprocal_rank_fusion() -> None:
    plan = SearchPlan(source=MaxRankFusion(branches=[TEXT, NEAREST]))
    native = attrs.evolve(FUSIONS, name="toy-native", native_hybrid_search="hybrid_search")
    sql = to_sql(plan, native)
    assert "hybrid_search" not in sql and "GREATEST(" in sql


WORDS = ("fox", "dog", "cat", "owl", "bee")


def _corpus(rng: random.Random, rows: int) -> pa.Table:
    """Short texts over five words (BM25 ties are common) and small integral 2-d vectors
    (distance ties are common); keys follow row order, so ties at a depth cut fall the same
    way in the engine (rowid) and in the reference (key)."""
    return pa.table(
        {
            "id": list(range(rows)),
            "body": [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(rows)],
            "embedding": pa.array(
                [[float(rng.randint(-3, 3)), float(rng.randint(1, 3))] for _ in range(rows)],
                pa.list_(pa.float32()),
            ),
        }
    )


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        local.load_table("docs", _corpus(random.Random(11), 80), text_columns=["body"])
        yield local


def _expected(engine: LocalEngine, plan: SearchPlan, *, whole: bool = False) -> list[FusedHit]:
    """The reference fusion over each branch as the engine ranks it alone (``whole``: every
    fused candidate, not the plan's page)."""
    fusion = plan.fusion
    assert fusion is not None
    lists, ranks, scores = [], [], []
    for branch in fusion.branches:
        alone = SearchPlan(source=branch, columns=["id"], limit=1000)
        rows = engine.sql(to_sql(alone)).to_pylist()
        candidates = [(row["id"], row[branch.raw_score_column]) for row in rows]
        keys, branch_ranks = rank_branch(
            candidates, higher_is_better=branch.higher_is_better, depth=plan.depth
        )
        raw_of = dict(candidates)
        lists.append(keys)
        ranks.append(branch_ranks)
        scores.append([float(raw_of[key]) for key in keys])
    if whole:
        return reference_fusion(fusion, lists, ranks=ranks, scores=scores)
    return reference_fusion(
        fusion, lists, ranks=ranks, scores=scores, limit=plan.limit, offset=plan.offset
    )


def _random_branches(rng: random.Random) -> list[Any]:
    branches: list[Any] = [
        Bm25Search(table="docs", column="body", query_text=rng.choice(WORDS)),
        NearestNeighborSearch(
            table="docs",
            column="embedding",
            query_vector=[float(rng.randint(-2, 2)), 1.0],
            metric=rng.choice(["cosine", "l2", "dot"]),
        ),
    ]
    if rng.random() < 0.5:
        branches.append(
            Bm25Search(table="docs", column="body", query_text=" ".join(rng.sample(WORDS, 2)))
        )
    rng.shuffle(branches)
    return branches


@pytest.mark.parametrize("seed", range(12))
def test_max_rank_fusion_on_the_local_engine_equals_its_reference(
    engine: LocalEngine, seed: int
) -> None:
    rng = random.Random(seed)
    depth = rng.choice([5, 12, 30])
    limit = rng.randint(1, depth)
    plan = SearchPlan(
        source=MaxRankFusion(branches=_random_branches(rng), depth=depth),
        limit=limit,
        offset=rng.randint(0, depth - limit),
        columns=["id"],
        include_branch_scores=True,
    )
    rows = engine.sql(to_sql(plan, FUSIONS)).to_pylist()
    expected = _expected(engine, plan)
    assert [(row["id"], row["score"]) for row in rows] == [(hit.key, hit.score) for hit in expected]
    rank_columns = [f"{name}_rank" for name in plan.branch_names]
    assert [tuple(row[name] for name in rank_columns) for row in rows] == [
        hit.ranks for hit in expected
    ]


@pytest.mark.parametrize("seed", range(6))
def test_a_score_normalised_fusion_uses_window_columns_of_the_ranked_ctes(
    engine: LocalEngine, seed: int
) -> None:
    rng = random.Random(100 + seed)
    depth = rng.choice([8, 20])
    plan = SearchPlan(
        source=ToyMinMaxFusion(branches=_random_branches(rng), depth=depth),
        limit=depth,
        columns=["id"],
    )
    sql = to_sql(plan, FUSIONS)
    assert "MIN(score) OVER () AS raw_low" in sql or "MIN(_distance) OVER () AS raw_low" in sql
    got = {row["id"]: row["score"] for row in engine.sql(sql).to_pylist()}
    expected = {hit.key: hit.score for hit in _expected(engine, plan, whole=True)}
    assert len(got) == min(depth, len(expected))
    for key, score in got.items():
        assert score == pytest.approx(expected[key], rel=1e-9, abs=1e-12)
    cut = sorted(expected.values(), reverse=True)[len(got) - 1]
    assert min(got.values()) == pytest.approx(cut, rel=1e-9, abs=1e-12)


def test_an_engine_searches_with_a_profile_that_carries_the_toy_fusion(
    engine: LocalEngine,
) -> None:
    """``LocalEngine(profile=...)``: a fusion defined outside the library reaches
    ``search`` (through its statement: the native search takes only the library's methods),
    with the same hits as its reference."""
    plan = SearchPlan(
        source=MaxRankFusion(branches=_random_branches(random.Random(5)), depth=20),
        limit=7,
        columns=["id"],
    )
    with pytest.raises(UnsupportedFeatureError, match="max_rank"):
        engine.search(plan)  # the default profile has no visitor for it
    with LocalEngine(engine.root, profile=FUSIONS) as extended:
        result = extended.search(plan)
        assert extended.profile is FUSIONS
    expected = _expected(engine, plan)
    assert [(hit.key, hit.score) for hit in result] == [(hit.key, hit.score) for hit in expected]
    assert result.sql == to_sql(executed_plan(plan), FUSIONS)


@pytest.mark.parametrize("profile", ["sqlite", TOY])
def test_a_profile_of_another_dialect_is_refused(profile: Any) -> None:
    with pytest.raises(EngineError, match="runs the Hotdata dialect's SQL; dialect profile"):
        LocalEngine(profile=profile)


def test_an_unknown_profile_name_is_refused() -> None:
    with pytest.raises(UnknownDialectError):
        LocalEngine(profile="no-such-dialect")
