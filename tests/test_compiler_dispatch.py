"""The compiler's dispatch and its dialect tables: visitor methods per plan node, search nodes
lowered by the dialect's generator, profiles as cache keys, every dialect registered by
``hotdata_retrieval.compile``."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import given
from sqlglot import exp

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    HotdataRetrievalError,
    InList,
    IsNull,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
    VectorSearch,
    compile_plan,
    to_sql,
)
from hotdata_retrieval.compile import (
    HOTDATA,
    HOTDATA_NATIVE,
    DialectProfile,
    FusedScore,
    Hotdata,
    PlanCompiler,
    SearchNode,
    SemanticDistance,
    TextSearch,
    UnsupportedOnDialectError,
    VectorDistance,
)
from hotdata_retrieval.compile.compiler import LiteralBinder
from hotdata_retrieval.compile.nodes import lower_search_nodes
from hotdata_retrieval.plan.document import plan_to_document
from hotdata_retrieval.plan.filters import Predicate, PredicateVisitor, predicate_columns
from hotdata_retrieval.plan.search import Fusion
from hotdata_retrieval.plan.visitor import NodeVisitor, UnvisitableNodeError
from hotdata_retrieval.spec.cases import _passes
from tests.plans import PLANS
from tests.strategies import plans, predicates

TEXT = Bm25Search(table="docs", column="body", query_text="q")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.5])


# -- dialects are registered by compile, and profiles are cache keys ---------------------------


def test_every_dialect_is_registered_by_importing_compile_alone() -> None:
    code = (
        "import sys; from hotdata_retrieval.compile import known_dialects; "
        "assert 'hotdata_retrieval.spec' not in sys.modules; print(' '.join(known_dialects()))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(run.stdout.split()) >= {"hotdata", "hotdata-native"}


def test_spec_native_still_exports_the_native_profile() -> None:
    from hotdata_retrieval.spec.native import HOTDATA_NATIVE as from_spec
    from hotdata_retrieval.spec.native import native_profile

    assert from_spec is HOTDATA_NATIVE
    assert native_profile() is HOTDATA_NATIVE


def test_templates_are_keyed_on_the_profile_not_its_name() -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]))
    plain = to_sql(plan, HOTDATA)
    # The same name, another capability: it must not be served the first profile's statement.
    evolved = attrs.evolve(HOTDATA, native_hybrid_search="hybrid_search")
    assert evolved.name == HOTDATA.name and evolved != HOTDATA
    native = to_sql(plan, evolved)
    assert "hybrid_search(" in native and "hybrid_search(" not in plain
    assert to_sql(plan, HOTDATA) == plain
    assert native == to_sql(plan, HOTDATA_NATIVE)

    class Louder(PlanCompiler):
        def visit_bm25_search(self, branch: Bm25Search, request: Any) -> Any:
            compiled = super().visit_bm25_search(branch, request)
            compiled.select.set("distinct", exp.Distinct())
            return compiled

    louder = attrs.evolve(HOTDATA, compiler=Louder)
    assert "SELECT DISTINCT" in to_sql(plan, louder) and "DISTINCT" not in plain


def test_profiles_derive_their_function_names_from_the_generator() -> None:
    assert HOTDATA.text_search_function == "bm25_search"
    assert HOTDATA.semantic_search_function == "vector_search"
    assert HOTDATA.semantic_distance_function == "vector_distance"
    assert set(HOTDATA.distance_functions.values()) == {
        "cosine_distance",
        "l2_distance",
        "negative_dot_product",
    }
    assert HOTDATA_NATIVE.distance_functions == HOTDATA.distance_functions


# -- search nodes ------------------------------------------------------------------------------


def _laid_out_alike(text: str) -> str:
    """``text`` with its line breaks and indentation undone: a statement template is laid out
    with its values as short slots, so where a long value (a query vector inside a function's
    arguments) tips sqlglot's line width, a render with the values in place breaks the line
    and ``to_sql`` does not."""
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(text.split())))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_abstract_tree_renders_through_the_generator_as_to_sql(name: str) -> None:
    plan = PLANS[name]
    tree = PlanCompiler(HOTDATA, LiteralBinder(HOTDATA)).compile(plan)
    kinds = {type(node) for node in tree.find_all(SearchNode)}
    assert kinds, "the compiler emits search nodes"
    assert tree.sql(dialect=Hotdata) == to_sql(plan, pretty=False)
    pretty = to_sql(plan)
    assert _laid_out_alike(tree.sql(dialect=Hotdata, pretty=True)) == _laid_out_alike(pretty)
    lowered = compile_plan(plan)
    assert not list(lowered.find_all(SearchNode))
    assert lowered.sql(dialect=Hotdata) == to_sql(plan, pretty=False)
    assert _laid_out_alike(lowered.sql(dialect=Hotdata, pretty=True)) == _laid_out_alike(pretty)


def test_search_nodes_carry_what_they_search_as_data() -> None:
    filtered = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[TEXT, NEAREST, VectorSearch(table="docs", column="body", query_text="s")]
        ),
        filter=IsNull(column="deleted_at"),
    )
    tree = PlanCompiler(HOTDATA, LiteralBinder(HOTDATA)).compile(filtered)
    (text,) = tree.find_all(TextSearch)
    assert text.args["k"] is None  # filtered: the bound comes after the WHERE
    assert text.args["column"].name == "body"
    (distance,) = tree.find_all(VectorDistance)
    assert distance.args["metric"] == "cosine"
    assert len(list(tree.find_all(SemanticDistance))) == 1


def test_an_unsupported_search_is_a_typed_error_naming_the_dialect() -> None:
    class NoDistance(Hotdata):
        class Generator(Hotdata.Generator):  # type: ignore[misc]
            SEARCH_NODES: ClassVar[dict[Any, Any]] = {
                node: lowering
                for node, lowering in Hotdata.Generator.SEARCH_NODES.items()
                if node is not VectorDistance
            }

    profile = DialectProfile(name="no-distance", sqlglot_dialect=NoDistance)
    with pytest.raises(UnsupportedOnDialectError) as raised:
        compile_plan(SearchPlan(source=NEAREST), profile)
    error = raised.value
    assert isinstance(error, UnsupportedFeatureError) and isinstance(error, HotdataRetrievalError)
    assert str(error) == "unsupported on no-distance: nearest-neighbour search (vector distance)"
    assert (error.dialect, error.feature) == (
        "no-distance",
        "nearest-neighbour search (vector distance)",
    )
    # What the generator still lowers compiles: a filtered semantic branch's scalar distance.
    assert "vector_distance(" in to_sql(
        SearchPlan(
            source=VectorSearch(table="docs", column="body", query_text="s"),
            filter=IsNull(column="x"),
        ),
        profile,
    )


def test_a_missing_metric_is_unsupported() -> None:
    from hotdata_retrieval.compile import DistanceFunctions
    from hotdata_retrieval.plan.search import DistanceMetric

    class CosineOnly(Hotdata):
        class Generator(Hotdata.Generator):  # type: ignore[misc]
            SEARCH_NODES: ClassVar[dict[Any, Any]] = {
                **Hotdata.Generator.SEARCH_NODES,
                VectorDistance: DistanceFunctions({DistanceMetric.COSINE: "cosine_distance"}),
            }

    profile = DialectProfile(name="cosine-only", sqlglot_dialect=CosineOnly)
    assert "cosine_distance(" in to_sql(SearchPlan(source=NEAREST), profile)
    l2 = attrs.evolve(NEAREST, metric="l2")
    with pytest.raises(UnsupportedOnDialectError, match=r"^unsupported on cosine-only: the l2"):
        to_sql(SearchPlan(source=l2), profile)


def test_full_outer_join_is_a_capability() -> None:
    """Without FULL OUTER JOIN, two branches join to the UNION of their keys instead."""
    profile = attrs.evolve(HOTDATA, name="no-joins", supports_full_outer_join=False)
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]))
    sql = to_sql(plan, profile)
    assert "FULL OUTER JOIN" not in sql and "FULL OUTER JOIN" in to_sql(plan, HOTDATA)
    assert "fused_keys AS (" in sql and sql.count("LEFT JOIN") == 2


def test_lowering_replaces_a_root_search_node() -> None:
    node = VectorDistance(this=exp.column("v"), expression=exp.Literal.number(1), metric="dot")
    assert lower_search_nodes(node, Hotdata.Generator).sql() == "NEGATIVE_DOT_PRODUCT(v, 1)"


# -- dispatch ----------------------------------------------------------------------------------


def test_a_fusion_is_abstract() -> None:
    with pytest.raises(HotdataRetrievalError, match="names no fusion method"):
        Fusion(branches=[TEXT, NEAREST])


def test_every_plan_node_of_the_library_has_a_compiler_visitor() -> None:
    """Each branch kind, fusion method and filter node the library defines compiles on the
    default compiler, and each fusion method has a reference fusion (the test oracle)."""
    import hotdata_retrieval.plan.filters as filters_module
    import hotdata_retrieval.plan.search as search_module
    from hotdata_retrieval.fusion import _REFERENCES

    nodes = [
        cls
        for module in (search_module, filters_module)
        for cls in vars(module).values()
        if isinstance(cls, type)
        and cls.__module__ == module.__name__
        and isinstance(cls.__dict__.get("visit_name"), str)
        and cls is not Fusion
    ]
    names = {cls.__dict__["visit_name"] for cls in nodes}
    assert {"bm25_search", "nearest_neighbor_search", "reciprocal_rank_fusion", "not"} <= names
    forms = {form.node: form for form in filters_module.predicate_forms().values()}
    assert [
        cls.__name__
        for cls in nodes
        if not (PlanCompiler.visits(cls) or (cls in forms and PlanCompiler.interprets(forms[cls])))
    ] == []
    fusions = [cls for cls in nodes if issubclass(cls, Fusion)]
    assert [cls.__name__ for cls in fusions if cls not in _REFERENCES] == []


def test_a_node_without_a_visitor_method() -> None:
    class Leaf:
        visit_name = "leaf"

    with pytest.raises(UnvisitableNodeError, match="NodeVisitor has no visit_leaf for Leaf"):
        NodeVisitor().visit(Leaf())
    assert not NodeVisitor.visits(Leaf) and PlanCompiler.visits(Bm25Search)


def test_a_visit_method_added_or_replaced_after_a_first_dispatch_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Leaf:
        visit_name = "leaf"

    class Visitor(NodeVisitor):
        pass

    visitor = Visitor()
    with pytest.raises(UnvisitableNodeError):
        visitor.visit(Leaf())
    monkeypatch.setattr(Visitor, "visit_leaf", lambda self, node: "added", raising=False)
    assert Visitor.visits(Leaf) and visitor.visit(Leaf()) == "added"
    monkeypatch.setattr(Visitor, "visit_leaf", lambda self, node: "replaced")
    assert visitor.visit(Leaf()) == "replaced"

    # The same for a compiler: a fusion visitor given to a compiler class after a plan with that
    # fusion was refused compiles the next plan.
    class Later(PlanCompiler):
        pass

    profile = attrs.evolve(HOTDATA, name="later", compiler=Later)
    plan = SearchPlan(source=_FirstRankFusion(branches=[TEXT, NEAREST]))
    with pytest.raises(UnsupportedOnDialectError, match="'first_rank'"):
        to_sql(plan, profile)
    monkeypatch.setattr(
        Later,
        "visit_first_rank_fusion",
        lambda self, fusion, branches: FusedScore(score=branches[0].rank),
        raising=False,
    )
    assert "text_ranked.branch_rank AS score" in to_sql(plan, profile)


@attrs.frozen(kw_only=True)
class _FirstRankFusion(Fusion):
    """A fusion no compiler knows: the first branch's rank (only compiled, never run; not
    registered, so plan documents never see it)."""

    visit_name: ClassVar[str] = "first_rank_fusion"
    method: ClassVar[str] = "first_rank"


@attrs.frozen(kw_only=True)
class _ScaledFirstRankFusion(Fusion):
    """A fusion written outside the library whose options are a plain list and a dict (no
    converter to a tuple): the first branch's rank times ``scales[0]``, plus ``offsets["all"]``."""

    visit_name: ClassVar[str] = "scaled_first_rank_fusion"
    method: ClassVar[str] = "scaled_first_rank"
    scales: list[float] = attrs.field(factory=lambda: [1.0])
    offsets: dict[str, float] = attrs.field(factory=dict)


class _ScaledCompiler(PlanCompiler):
    def visit_scaled_first_rank_fusion(
        self, fusion: _ScaledFirstRankFusion, branches: Any
    ) -> FusedScore:
        scaled = exp.Mul(this=exp.Literal.number(fusion.scales[0]), expression=branches[0].rank)
        offset = exp.Literal.number(fusion.offsets.get("all", 0))
        return FusedScore(score=exp.Add(this=scaled, expression=offset))


def test_fusion_options_that_are_lists_or_dicts_compile_each_to_their_own_sql() -> None:
    profile = attrs.evolve(HOTDATA, name="scaled", compiler=_ScaledCompiler)

    def sql(**options: Any) -> str:
        plan = SearchPlan(source=_ScaledFirstRankFusion(branches=[TEXT, NEAREST], **options))
        text = to_sql(plan, profile)
        assert text == compile_plan(plan, profile).sql(dialect=Hotdata, pretty=True)
        return text

    assert "3.0 * text_ranked.branch_rank + 0 AS score" in sql(scales=[3.0, 1.0])
    assert "2.0 * text_ranked.branch_rank + 0 AS score" in sql(scales=[2.0, 1.0])
    assert "3.0 * text_ranked.branch_rank + 0 AS score" in sql(scales=[3.0, 1.0])
    assert "+ 7 AS score" in sql(offsets={"all": 7})
    assert "+ 8 AS score" in sql(offsets={"all": 8})


class _Count(PredicateVisitor[int]):
    """Counts leaves, each read from its row: an interpretation of its own, to check every
    node dispatches."""

    def read_row(self, node: Any, form: Any, *args: Any) -> int:
        return 1

    @classmethod
    def reads_row(cls, form: Any) -> bool:
        return True

    def visit_and(self, node: Any) -> int:
        return sum(map(self.predicate, node.operands))

    visit_or = visit_and

    def visit_not(self, node: Any) -> int:
        return self.predicate(node.operand)


@given(predicates)
def test_every_predicate_interpretation_dispatches_every_node(predicate: Predicate) -> None:
    leaves = _Count().predicate(predicate)
    assert 1 <= len(predicate_columns(predicate)) <= leaves
    assert plan_to_document(SearchPlan(source=TEXT, filter=predicate))["filter"] is not None
    row = dict.fromkeys(predicate_columns(predicate))  # every column NULL
    assert _passes(predicate, row) in (True, False, None)
    compiler = PlanCompiler(HOTDATA, LiteralBinder(HOTDATA))
    assert isinstance(compiler.predicate(predicate), exp.Expr)


def test_three_valued_truth_of_a_row() -> None:
    lang = Comparison(column="lang", operator="=", value="en")
    assert _passes(lang | InList(column="tag", values=[]), {"lang": None, "tag": "x"}) is None
    assert _passes(~InList(column="tag", values=[]), {"tag": None}) is True  # NOT FALSE
    assert _passes(~InList(column="tag", values=["x"]), {"tag": None}) is None
    assert _passes(lang & IsNull(column="tag"), {"lang": "de", "tag": None}) is False


SAME_AS_HOTDATA = attrs.evolve(HOTDATA, name="same-as-hotdata", compiler=PlanCompiler)


@given(plans())
def test_generated_plans_compile_through_the_profile_compiler(plan: SearchPlan) -> None:
    assert to_sql(plan, SAME_AS_HOTDATA) == to_sql(plan)
