"""Pathological plans: deep filters and many branches (issue 9, item 6).

Two documented limits, :data:`MAX_FILTER_DEPTH` and :data:`MAX_FUSION_BRANCHES`, are enforced
with :class:`PlanError` wherever a plan is made, so no recursive walk (the plan's own, the
compiler's, sqlglot's parser and generator on the output, the linter) can run out of stack.
At each limit the plan compiles, the SQL parses back and lints clean; one past it is refused,
naming the value. The SQL of large plans is checked for its content and its size, never for
how long it took: timings live in ``benchmarks/bench_compile.py``.
"""

from __future__ import annotations

import functools
import operator
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from hotdata_retrieval.compile import compile_plan, parse_filter, to_sql
from hotdata_retrieval.compile import compiler as compiler_module
from hotdata_retrieval.compile.filter_text import MAX_TEXT_NESTING
from hotdata_retrieval.compile.hotdata import Hotdata
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.lint import lint
from hotdata_retrieval.plan import (
    MAX_FILTER_DEPTH,
    MAX_FUSION_BRANCHES,
    And,
    Bm25Search,
    Comparison,
    InList,
    IsNull,
    NearestNeighborSearch,
    Not,
    Or,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    plan_from_document,
    plan_to_document,
)
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_TERMS,
    Predicate,
    filter_depth,
    predicate_columns,
)
from hotdata_retrieval.spec.native import HOTDATA_NATIVE

TEXT = Bm25Search(table="docs", column="body", query_text="q")
DEEP = 1000
STACK_BUDGET = 500
"""Frames every walk over a plan at the limits may use: half of Python's default limit."""


def leaf(index: int) -> Comparison:
    return Comparison(column=f"c{index}", operator="=", value=index)


def alternating(levels: int) -> Predicate:
    """``((c0 = 0 AND c1 = 1) OR c2 = 2) AND c3 = 3 ...``: ``levels`` levels, each a new
    group, the shape that made compile time triple every two levels."""
    predicate: Predicate = leaf(0)
    for level in range(1, levels + 1):
        connective = And if level % 2 else Or
        predicate = connective(operands=(predicate, leaf(level)))
    return predicate


def fusion(count: int) -> ReciprocalRankFusion:
    return ReciprocalRankFusion(
        branches=[Bm25Search(table="docs", column="body", query_text=f"q{i}") for i in range(count)]
    )


def frames() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


@contextmanager
def stack_budget(budget: int = STACK_BUDGET) -> Iterator[None]:
    """Run the block with only ``budget`` frames of stack above this one."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(frames() + budget)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def where_text(sql: str) -> str:
    """The text of the first WHERE clause of ``sql``."""
    where = sqlglot.parse_one(sql, read="hotdata").find(exp.Where)
    assert where is not None
    return where.this.sql(dialect="hotdata")


# -- filter depth -------------------------------------------------------------------------


def test_depth_counts_connective_nodes_on_the_longest_path() -> None:
    a, b, c = leaf(1), leaf(2), leaf(3)
    assert filter_depth(a) == 0
    assert filter_depth(And(operands=[a, b, c])) == 1
    assert filter_depth(Not(operand=Or(operands=[a, b]))) == 2
    assert filter_depth(And(operands=[a, Or(operands=[b, Not(operand=c)])])) == 3
    assert filter_depth(alternating(7)) == 7


def test_chaining_one_connective_extends_one_node() -> None:
    predicates = [leaf(index) for index in range(DEEP)]
    conjunction = functools.reduce(operator.and_, predicates)
    disjunction = functools.reduce(operator.or_, predicates)
    assert isinstance(conjunction, And) and conjunction.operands == tuple(predicates)
    assert isinstance(disjunction, Or) and disjunction.operands == tuple(predicates)
    assert filter_depth(conjunction) == filter_depth(disjunction) == 1
    a, b, c, d = predicates[:4]
    assert (a & b) & (c & d) == And(operands=[a, b, c, d])
    assert (a | b) & c == And(operands=[Or(operands=[a, b]), c])
    assert (a & b) | (c & d) == Or(operands=[And(operands=[a, b]), And(operands=[c, d])])
    with pytest.raises(PlanError, match="expected a filter predicate"):
        (a & b) & "c = 1"  # type: ignore[operator]


def negations(levels: int) -> Predicate:
    """A filter ``levels`` deep whose text nests deepest: NOT over a group over NOT ...,
    down to ``a NOT IN (...)`` (its own NOT and parenthesis)."""
    predicate: Predicate = InList(column="a", values=[1, 2], negated=True)
    for level in range(1, levels + 1):
        if level % 2:
            predicate = Not(operand=predicate)
        else:
            connective = And if level % 4 else Or
            predicate = connective(operands=[leaf(level), predicate])
    return predicate


@pytest.mark.parametrize("shape", [alternating, negations], ids=["alternating", "negations"])
def test_a_filter_at_the_depth_limit_compiles_parses_back_and_lints(
    shape: Callable[[int], Predicate],
) -> None:
    predicate = shape(MAX_FILTER_DEPTH)
    assert filter_depth(predicate) == MAX_FILTER_DEPTH
    sources: list[Any] = [
        TEXT,
        ReciprocalRankFusion(
            branches=[TEXT, NearestNeighborSearch(table="docs", column="emb", query_vector=[1.0])]
        ),
        fusion(compiler_module.JOIN_CHAIN_MAX_BRANCHES + 1),
    ]
    for source in sources:
        plan = SearchPlan(source=source, filter=predicate)
        with stack_budget():
            sql = to_sql(plan)
            tree = sqlglot.parse_one(sql, read="hotdata")
            assert lint(sql) == []
            rendered = tree.sql(dialect="hotdata", pretty=True)
            assert sqlglot.parse_one(rendered, read="hotdata") == tree
            assert parse_filter(where_text(sql)) == predicate
            decoded = plan_from_document(plan_to_document(plan))
            assert decoded == plan and hash(decoded) == hash(plan) and repr(decoded) == repr(plan)
            assert predicate_columns(predicate) <= {"a", *(f"c{i}" for i in range(99))}
        filtered = [where for where in tree.find_all(exp.Where) if where.find(exp.EQ, exp.In)]
        assert len(filtered) == len(plan.branches)
    # The native hybrid_search call carries the filter as text, which the engine parses back.
    native = SearchPlan(source=sources[1], filter=predicate)
    with stack_budget():
        sql = to_sql(native, HOTDATA_NATIVE)
        call = sqlglot.parse_one(sql, read="hotdata").find(exp.Anonymous)
        assert call is not None and call.name == "hybrid_search"
        arguments = [argument.name for argument in call.expressions]
        assert parse_filter(arguments[arguments.index("filter") + 1]) == predicate


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda inner: And(operands=[inner, leaf(99)]), id="And"),
        pytest.param(lambda inner: Or(operands=[inner, leaf(99)]), id="Or"),
        pytest.param(lambda inner: Not(operand=inner), id="Not"),
        pytest.param(lambda inner: ~inner, id="~"),
        pytest.param(lambda inner: inner & leaf(99), id="&"),
        pytest.param(lambda inner: inner | leaf(99), id="|"),
    ],
)
def test_one_level_past_the_depth_limit_is_a_plan_error(
    build: Callable[[Predicate], Predicate],
) -> None:
    at_limit = Not(operand=alternating(MAX_FILTER_DEPTH - 1))  # neither an AND nor an OR on top
    assert filter_depth(at_limit) == MAX_FILTER_DEPTH
    with pytest.raises(PlanError) as raised:
        build(at_limit)
    error = raised.value
    assert error.field == "filter"
    assert error.value == MAX_FILTER_DEPTH + 1
    assert f"{MAX_FILTER_DEPTH + 1} levels" in str(error)
    assert "nested too deeply" in str(error)


def deep_builders() -> dict[str, Callable[[int], Predicate]]:
    """Ways to nest a filter ``n`` levels, each building from the inside out."""

    def nest(step: Callable[[Predicate, int], Predicate]) -> Callable[[int], Predicate]:
        def build(levels: int) -> Predicate:
            predicate: Predicate = IsNull(column="c")
            for level in range(levels):
                predicate = step(predicate, level)
            return predicate

        return build

    return {
        "Not": nest(lambda inner, _: Not(operand=inner)),
        "~": nest(lambda inner, _: ~inner),
        "And/Or": nest(
            lambda inner, level: (And if level % 2 else Or)(operands=[inner, leaf(level)])
        ),
        "&/|": nest(lambda inner, level: inner & leaf(level) if level % 2 else inner | leaf(level)),
        "Not/And": nest(
            lambda inner, level: (
                Not(operand=inner) if level % 2 else And(operands=[leaf(level), inner])
            )
        ),
    }


@pytest.mark.parametrize("name", sorted(deep_builders()))
def test_a_filter_1000_deep_is_a_plan_error_from_the_python_api(name: str) -> None:
    with pytest.raises(PlanError) as raised:
        deep_builders()[name](DEEP)
    assert raised.value.value == MAX_FILTER_DEPTH + 1


def deep_document(levels: int, kind: str) -> dict[str, Any]:
    predicate: dict[str, Any] = {"column": "c", "is_null": True}
    for level in range(levels):
        if kind == "not":
            predicate = {"not": predicate}
        else:
            connective = "and" if level % 2 else "or"
            predicate = {connective: [predicate, {"column": f"c{level}", "op": "=", "value": 1}]}
    return {"table": "docs", "branches": [{"kind": "text", "column": "b", "query_text": "q"}],
            "filter": predicate}  # fmt: skip


@pytest.mark.parametrize("kind", ["not", "and/or"])
def test_plan_documents_at_and_past_the_depth_limit(kind: str) -> None:
    plan = plan_from_document(deep_document(MAX_FILTER_DEPTH, kind))
    assert plan.filter is not None and filter_depth(plan.filter) == MAX_FILTER_DEPTH
    assert plan_from_document(plan_to_document(plan)) == plan
    for levels in (MAX_FILTER_DEPTH + 1, DEEP):
        with pytest.raises(PlanError, match="nested too deeply") as raised:
            plan_from_document(deep_document(levels, kind))
        assert raised.value.field == "filter"
        assert raised.value.value == MAX_FILTER_DEPTH + 1
        assert str(raised.value).startswith("filter.")


def test_to_sql_never_meets_a_filter_past_the_limit() -> None:
    # A plan holds only predicates that were built, so every door to to_sql is shut before it.
    deep_text = "NOT " * DEEP + "c = 1"
    with pytest.raises(PlanError, match="nested too deeply"):
        to_sql(SearchPlan(source=TEXT, filter=parse_filter(deep_text)))
    with pytest.raises(PlanError, match="nested too deeply"):
        to_sql(plan_from_document(deep_document(DEEP, "and/or")))
    with pytest.raises(PlanError, match="nested too deeply"):
        to_sql(SearchPlan(source=TEXT, filter=deep_builders()["And/Or"](DEEP)))


# -- filter text --------------------------------------------------------------------------


def test_filter_text_at_the_nesting_limit_parses() -> None:
    spare = MAX_TEXT_NESTING - MAX_FILTER_DEPTH
    deepest = where_text(to_sql(SearchPlan(source=TEXT, filter=alternating(MAX_FILTER_DEPTH))))
    text = "(" * spare + deepest + ")" * spare
    with stack_budget():
        assert parse_filter(text) == alternating(MAX_FILTER_DEPTH)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("(" * (MAX_TEXT_NESTING + 1) + "a = 1" + ")" * (MAX_TEXT_NESTING + 1), id="("),
        pytest.param("NOT " * (MAX_TEXT_NESTING + 1) + "a = 1", id="NOT"),
        pytest.param("NOT (" * 11 + "a = 1" + ")" * 11, id="NOT ("),
        pytest.param("(" * DEEP + "a = 1" + ")" * DEEP, id="( 1000"),
        pytest.param("NOT " * DEEP + "a = 1", id="NOT 1000"),
        pytest.param("a IN (" + "ARRAY[" * DEEP + "1" + "]" * DEEP + ")", id="[ 1000"),
        pytest.param("a = " + "- " * DEEP + "1", id="- 1000"),
    ],
)
def test_filter_text_nested_too_deeply_is_a_plan_error(text: str) -> None:
    with pytest.raises(PlanError, match="nested too deeply") as raised:
        parse_filter(text)
    assert raised.value.field == "filter"
    assert raised.value.value == text


def test_filter_text_may_be_long_when_it_is_flat() -> None:
    negations = " AND ".join(f"NOT c{i} = {i}" for i in range(200))
    assert filter_depth(parse_filter(negations)) == 2
    chain = " OR ".join(f"c{i} = {i}" for i in range(MAX_FILTER_TERMS))
    parsed = parse_filter(chain)
    assert isinstance(parsed, Or) and len(parsed.operands) == MAX_FILTER_TERMS
    with pytest.raises(PlanError, match="MAX_FILTER_TERMS"):
        parse_filter(chain + f" OR c{MAX_FILTER_TERMS} = 0")
    mixed = "a NOT IN (1, 2) AND b IS NOT NULL AND NOT c = 1"
    assert parse_filter(mixed) == And(
        operands=[
            InList(column="a", values=[1, 2], negated=True),
            IsNull(column="b", negated=True),
            Not(operand=Comparison(column="c", operator="=", value=1)),
        ]
    )


# -- branch count -------------------------------------------------------------------------


def test_a_fusion_at_the_branch_limit_compiles_parses_back_and_lints() -> None:
    plan = SearchPlan(
        source=fusion(MAX_FUSION_BRANCHES), include_branch_scores=True, filter=alternating(4)
    )
    with stack_budget():
        sql = to_sql(plan)
        tree = sqlglot.parse_one(sql, read="hotdata")
        assert plan_from_document(plan_to_document(plan)) == plan
    assert lint(sql) == []  # its time grows with the square of the CTE count; its stack does not
    ctes = [cte.alias for cte in tree.find_all(exp.CTE)]
    assert len(ctes) == 2 * MAX_FUSION_BRANCHES + 2
    assert len(plan.result_columns) == 1 + 2 * MAX_FUSION_BRANCHES


def test_one_branch_past_the_limit_is_a_plan_error() -> None:
    branches = fusion(2).branches[:1] * (MAX_FUSION_BRANCHES + 1)
    with pytest.raises(PlanError, match=f"{MAX_FUSION_BRANCHES + 1} branches") as raised:
        ReciprocalRankFusion(branches=branches)
    assert raised.value.field == "branches"
    assert raised.value.value == MAX_FUSION_BRANCHES + 1
    document = {
        "table": "docs",
        "branches": [{"kind": "text", "column": "body", "query_text": "q"}]
        * (MAX_FUSION_BRANCHES + 1),
    }
    with pytest.raises(PlanError, match=f"{MAX_FUSION_BRANCHES + 1} branches") as raised:
        plan_from_document(document)
    assert raised.value.field == "branches"
    assert raised.value.value == MAX_FUSION_BRANCHES + 1


# -- the output of large plans ------------------------------------------------------------


def test_deepest_alternating_filter_output() -> None:
    """The reported shape (alternating AND/OR groups), as deep as a plan may nest it; 64
    levels, as once asked for, is past the limit."""
    with pytest.raises(PlanError):
        alternating(64)
    levels = MAX_FILTER_DEPTH
    sql = to_sql(SearchPlan(source=TEXT, filter=alternating(levels)))
    where = sqlglot.parse_one(sql, read="hotdata").find(exp.Where)
    assert where is not None
    assert len(list(where.find_all(exp.EQ))) == levels + 1  # every comparison, once
    assert len(list(where.find_all(exp.Paren))) == levels - 1  # one group per level below the top
    assert len(list(where.find_all(exp.And))) == levels // 2
    assert len(list(where.find_all(exp.Or))) == levels // 2
    assert all(sql.count(f"c{level} = {level}\n") == 1 for level in range(7, levels + 1))
    # The groups too deep to fit on one line open one line each, indented one step deeper.
    opening = [line for line in sql.splitlines() if line.strip() == "("]
    assert [len(line) - len(line.lstrip()) for line in opening] == list(
        range(2, 2 * len(opening) + 1, 2)
    )


def fused_sql(count: int) -> str:
    return to_sql(SearchPlan(source=fusion(count), include_branch_scores=True))


def test_thousand_branch_fusion_output() -> None:
    count = 1000
    sql = fused_sql(count)
    tree = sqlglot.parse_one(sql, read="hotdata")
    ctes = {cte.alias: cte.this for cte in tree.find_all(exp.CTE)}
    names = SearchPlan(source=fusion(count)).branch_names
    assert list(ctes) == [
        *(f"{name}_{suffix}" for name in names for suffix in ("hits", "ranked")),
        "fused_keys",
        "fused",
    ]
    keys = ctes["fused_keys"]
    assert isinstance(keys, exp.Union)
    assert len(list(keys.find_all(exp.Select))) == count
    fused = ctes["fused"]
    assert isinstance(fused, exp.Select)
    joins = fused.args["joins"]
    assert len(joins) == count
    assert all(join.side == "LEFT" and not join.find(exp.Coalesce) for join in joins)
    score = next(item for item in fused.expressions if item.alias == "score")
    assert len(list(score.find_all(exp.Coalesce))) == count
    assert len(fused.expressions) == 2 + 2 * count
    # Linear: ten times the branches, ten times the text, within the fixed part's share.
    assert 9.5 < len(sql) / len(fused_sql(count // 10)) < 10.5


def test_small_fusions_keep_the_full_outer_join_chain() -> None:
    chain = compiler_module.JOIN_CHAIN_MAX_BRANCHES
    assert chain >= 3  # the snapshots pin the chain for two and three branches
    assert "FULL OUTER JOIN" in fused_sql(chain) and "fused_keys" not in fused_sql(chain)
    assert "FULL OUTER JOIN" not in fused_sql(chain + 1) and "fused_keys" in fused_sql(chain + 1)


def _engine_table(rows: int) -> pa.Table:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return pa.table(
        {
            "id": list(range(1, rows + 1)),
            "body": [" ".join(words[(i * k) % 8] for k in range(1, 5)) for i in range(rows)],
            "title": [" ".join(words[(i + k) % 8] for k in range(2)) for i in range(rows)],
            "lang": ["en" if i % 3 else "de" for i in range(rows)],
            "embedding": pa.array(
                [[float((i * 7) % 5), float((i * 3) % 4) - 1.5, 1.0] for i in range(rows)],
                type=pa.list_(pa.float32()),
            ),
        }
    )


def test_the_keys_form_returns_the_rows_and_scores_of_the_join_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    branches: list[Any] = [
        Bm25Search(table="docs", column="body", query_text="alpha gamma"),
        Bm25Search(table="docs", column="title", query_text="beta"),
        Bm25Search(table="docs", column="body", query_text="zeta eta", name="body_2"),
        NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0, 1.0]),
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=[0.0, 1.0, 0.5], metric="l2"
        ),
        VectorSearch(table="docs", column="body", query_text="delta"),
    ]
    plans = [
        SearchPlan(
            source=ReciprocalRankFusion(branches=branches[:count], weights=weights, depth=10),
            columns=["id", "title"],
            limit=8,
            filter=Comparison(column="lang", operator="=", value="en") | IsNull(column="title"),
            include_branch_scores=True,
        )
        for count in (5, 6)
        for weights in (None, [0.5, 2, 1, 0, 1, 3][:count])
    ]
    with LocalEngine(embedder=_embedder()) as engine:
        engine.load_table(
            "docs", _engine_table(40), text_columns=["body", "title"], embed_columns=["body"]
        )
        for plan in plans:
            keys_form = compile_plan(plan).sql(dialect=Hotdata, pretty=True)
            assert "fused_keys" in keys_form
            with monkeypatch.context() as patch:
                patch.setattr(compiler_module, "JOIN_CHAIN_MAX_BRANCHES", len(plan.branches))
                chain_form = compile_plan(plan).sql(dialect=Hotdata, pretty=True)
            assert "fused_keys" not in chain_form
            expected = engine.sql(chain_form)
            assert expected.num_rows == 8
            assert engine.sql(keys_form).equals(expected)


def _embedder() -> Any:
    from hotdata_retrieval.embed import HashingEmbedder

    return HashingEmbedder(dimensions=8)
