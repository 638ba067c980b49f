"""The one router, ``routing.plan_search``, under both policies: the local engine's (hybrid may
fuse an engine-embedded column) and the Hotdata engine's (hybrid needs a plain index)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    TableName,
    VectorSearch,
    routing,
)
from hotdata_retrieval.routing import (
    HOTDATA_ROUTING,
    LOCAL_ROUTING,
    RoutingPolicy,
    SearchMode,
    SearchPlan,
    TableIndexes,
    VectorIndex,
    search_request,
)


def plan_search(
    indexes: TableIndexes,
    query: str,
    *,
    embed_query: object = None,
    policy: RoutingPolicy = LOCAL_ROUTING,
    **options: object,
) -> SearchPlan:
    """The router with the request built from keywords (``search_request``), as most of the
    tests here state one."""
    request = search_request(indexes.table, query, **options)
    return routing.plan_search(indexes, request, embed_query=embed_query, policy=policy)  # type: ignore[arg-type]


POLICIES = pytest.mark.parametrize(
    "policy", [LOCAL_ROUTING, HOTDATA_ROUTING], ids=["local", "hotdata"]
)
PLAIN = VectorIndex(column="embedding", source_column=None, metric="dot")
BODY = VectorIndex(column="body_embedding", source_column="body")
TITLE = VectorIndex(column="title_embedding", source_column="title")


def embed(text: str) -> Sequence[float]:
    return [float(len(text)), 1.0]


def _indexes(*vectors: VectorIndex, bm25: tuple[str, ...] = ("body",)) -> TableIndexes:
    return TableIndexes(table=TableName.parse("docs"), bm25_columns=bm25, vectors=vectors)


def _kinds(indexes: TableIndexes, policy: RoutingPolicy, **options: object) -> list[str]:
    plan = plan_search(indexes, "q", policy=policy, **options)  # type: ignore[arg-type]
    return [branch.kind for branch in plan.branches]


def test_the_policies() -> None:
    assert RoutingPolicy() == LOCAL_ROUTING  # the default
    assert LOCAL_ROUTING.fuse_provider_indexes and not HOTDATA_ROUTING.fuse_provider_indexes
    assert HOTDATA_ROUTING.pending_indexes and not LOCAL_ROUTING.pending_indexes


# -- text ------------------------------------------------------------------------------------


@POLICIES
def test_text(policy: RoutingPolicy) -> None:
    indexes = _indexes(bm25=("body", "title"))
    plan = plan_search(indexes, "q", mode="text", policy=policy)
    assert plan.source == Bm25Search(table="docs", column="body", query_text="q")
    assert plan.projection == ("id", "body")
    chosen = plan_search(indexes, "q", mode="text", text_column="Title", policy=policy)
    assert chosen.source == Bm25Search(table="docs", column="title", query_text="q")
    assert chosen.projection == ("id", "title")


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            LOCAL_ROUTING,
            r"column 'lang' of 'default\.public\.docs' has no BM25 index; indexed: body",
        ),
        (HOTDATA_ROUTING, "has no ready BM25 index; ready: body"),
    ],
    ids=["local", "hotdata"],
)
def test_text_refusals_speak_of_ready_indexes_where_they_build(
    policy: RoutingPolicy, message: str
) -> None:
    with pytest.raises(PlanError, match=message):
        plan_search(_indexes(), "q", mode="text", text_column="lang", policy=policy)
    ready = "ready " if policy.pending_indexes else ""
    with pytest.raises(PlanError, match=f"has no {ready}BM25 index$"):
        plan_search(_indexes(BODY, bm25=()), "q", mode="text", policy=policy)


# -- semantic and nearest ---------------------------------------------------------------------


@POLICIES
def test_semantic(policy: RoutingPolicy) -> None:
    provider = plan_search(_indexes(BODY, bm25=()), "q", mode="semantic", policy=policy)
    assert provider.source == VectorSearch(table="docs", column="body", query_text="q")
    plain = plan_search(
        _indexes(PLAIN, bm25=()), "q", mode="semantic", embed_query=embed, policy=policy
    )
    assert plain.source == NearestNeighborSearch(
        table="docs", column="embedding", query_vector=[1.0, 1.0], metric="dot"
    )
    assert plain.projection == ("id",)
    with pytest.raises(PlanError, match=r"plain vector column 'embedding'.*needs an embedder"):
        plan_search(_indexes(PLAIN, bm25=()), "q", mode="semantic", policy=policy)
    # provider-backed is preferred; vector_column and text_column choose
    both = _indexes(PLAIN, TITLE, BODY)
    assert plan_search(both, "q", mode="semantic", policy=policy).branches[0].column == "title"
    by_source = plan_search(both, "q", mode="semantic", text_column="body", policy=policy)
    assert by_source.branches[0].column == "body"
    by_column = plan_search(
        both, "q", mode="semantic", vector_column="embedding", embed_query=embed, policy=policy
    )
    assert by_column.branches[0].column == "embedding"


@POLICIES
def test_semantic_refusals(policy: RoutingPolicy) -> None:
    with pytest.raises(PlanError, match=r"has no (ready )?vector index over 'lang'"):
        plan_search(_indexes(BODY), "q", mode="semantic", text_column="lang", policy=policy)
    # a plain index records no text column, so it may be the one over 'lang'
    plan = plan_search(
        _indexes(PLAIN), "q", mode="semantic", text_column="lang", embed_query=embed, policy=policy
    )
    assert plan.branches[0].column == "embedding"
    with pytest.raises(PlanError, match=r"column 'nope' of 'default\.public\.docs' has no"):
        plan_search(_indexes(BODY), "q", mode="semantic", vector_column="nope", policy=policy)
    with pytest.raises(PlanError, match=r"has no (ready )?vector index$"):
        plan_search(_indexes(), "q", mode="semantic", policy=policy)


@POLICIES
def test_nearest_embeds_here_on_either_kind_of_index(policy: RoutingPolicy) -> None:
    plan = plan_search(_indexes(BODY), "q", mode="nearest", embed_query=embed, policy=policy)
    assert plan.source == NearestNeighborSearch(
        table="docs", column="body_embedding", query_vector=[1.0, 1.0]
    )
    with pytest.raises(PlanError, match=r"engine-embedded vector column.*needs an embedder"):
        plan_search(_indexes(BODY), "q", mode="nearest", policy=policy)


# -- hybrid: the policy's rule ----------------------------------------------------------------


def test_hybrid_fuses_an_engine_embedded_column_under_the_local_policy_only() -> None:
    plan = plan_search(_indexes(BODY), "q", mode="hybrid", embed_query=embed)
    assert isinstance(plan.source, ReciprocalRankFusion)
    assert [b.column for b in plan.branches] == ["body", "body_embedding"]
    with pytest.raises(PlanError, match="cannot share its table with a BM25 index"):
        plan_search(_indexes(BODY), "q", mode="hybrid", embed_query=embed, policy=HOTDATA_ROUTING)
    with pytest.raises(PlanError, match="provider-backed vector index, which cannot be fused"):
        plan_search(
            _indexes(BODY, PLAIN),
            "q",
            mode="hybrid",
            vector_column="body_embedding",
            embed_query=embed,
            policy=HOTDATA_ROUTING,
        )
    # with a plain index beside it, Hotdata fuses the plain one
    plan = plan_search(
        _indexes(BODY, PLAIN), "q", mode="hybrid", embed_query=embed, policy=HOTDATA_ROUTING
    )
    assert plan.branches[1].column == "embedding"


@POLICIES
def test_hybrid_picks_the_column_made_from_the_searched_text(policy: RoutingPolicy) -> None:
    indexes = _indexes(PLAIN, BODY, TITLE, bm25=("body", "title"))
    if policy.fuse_provider_indexes:
        plan = plan_search(indexes, "q", mode="hybrid", text_column="title", embed_query=embed)
        assert plan.branches[1].column == "title_embedding"
    else:  # only the plain index can be fused, and it is the only one
        plan = plan_search(indexes, "q", mode="hybrid", embed_query=embed, policy=policy)
        assert plan.branches[1].column == "embedding"


@POLICIES
def test_hybrid_refuses_to_guess_between_several(policy: RoutingPolicy) -> None:
    second = VectorIndex(column="title_vec", source_column=None)
    kind = "vector" if policy.fuse_provider_indexes else "plain vector"
    with pytest.raises(PlanError, match=f"has 2 {kind} indexes"):
        plan_search(_indexes(PLAIN, second), "q", mode="hybrid", embed_query=embed, policy=policy)
    chosen = plan_search(
        _indexes(PLAIN, second),
        "q",
        mode="hybrid",
        vector_column="title_vec",
        embed_query=embed,
        policy=policy,
    )
    assert chosen.branches[1].column == "title_vec"
    # auto declines to guess and searches the words
    assert _kinds(_indexes(PLAIN, second), policy, embed_query=embed) == ["text"]
    with pytest.raises(PlanError, match="needs an embedder"):
        plan_search(_indexes(PLAIN), "q", mode="hybrid", policy=policy)


# -- auto ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vectors", "bm25", "embedder", "local", "hotdata"),
    [
        ((PLAIN,), ("body",), True, ["text", "nearest"], ["text", "nearest"]),
        ((PLAIN,), ("body",), False, ["text"], ["text"]),
        ((BODY,), ("body",), True, ["text", "nearest"], ["text"]),
        ((BODY,), ("body",), False, ["text"], ["text"]),
        ((BODY, PLAIN), ("body",), True, ["text", "nearest"], ["text", "nearest"]),
        ((), ("body",), True, ["text"], ["text"]),
        ((BODY,), (), True, ["semantic"], ["semantic"]),
        ((PLAIN,), (), True, ["nearest"], ["nearest"]),
    ],
)
def test_auto(
    vectors: tuple[VectorIndex, ...],
    bm25: tuple[str, ...],
    embedder: bool,
    local: list[str],
    hotdata: list[str],
) -> None:
    indexes = _indexes(*vectors, bm25=bm25)
    options = {"embed_query": embed if embedder else None}
    assert _kinds(indexes, LOCAL_ROUTING, **options) == local
    assert _kinds(indexes, HOTDATA_ROUTING, **options) == hotdata


@pytest.mark.parametrize(
    ("policy", "message"),
    [(LOCAL_ROUTING, "has no BM25 or vector index"), (HOTDATA_ROUTING, "no ready BM25 or")],
    ids=["local", "hotdata"],
)
def test_auto_without_any_index(policy: RoutingPolicy, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        plan_search(_indexes(bm25=()), "q", policy=policy)


def test_unknown_modes_and_bad_names_are_plan_errors() -> None:
    with pytest.raises(PlanError, match="unknown mode 'fuzzy'; expected one of auto, text"):
        plan_search(_indexes(), "q", mode="fuzzy")
    with pytest.raises(PlanError, match="text_column must not be empty"):
        plan_search(_indexes(), "q", text_column="")
    assert plan_search(_indexes(), "q", mode=SearchMode.TEXT).branches[0].kind == "text"


def test_the_plans_options_pass_through() -> None:
    plan = plan_search(
        TableIndexes(table=TableName.parse("docs"), bm25_columns=("body",), key_column="doc_id"),
        "q",
        limit=3,
        offset=6,
        columns=["title"],
        include_branch_scores=True,
    )
    assert (plan.limit, plan.offset, plan.projection, plan.key_column) == (
        3,
        6,
        ("title",),
        "doc_id",
    )
    assert plan.include_branch_scores


def test_the_hotdata_engines_route_search_is_the_router_under_its_policy() -> None:
    pytest.importorskip("hotdata_framework")
    from hotdata_retrieval.engines.hotdata import route_search

    indexes = _indexes(PLAIN, BODY)
    for mode in SearchMode:
        assert route_search(indexes, "q", mode=mode, embed_query=embed) == plan_search(
            indexes, "q", mode=mode, embed_query=embed, policy=HOTDATA_ROUTING
        )


def test_a_search_request_is_hashable_and_its_fusion_options_are_read_only() -> None:
    from hotdata_retrieval.routing import FusionChoice, SearchRequest

    request = SearchRequest(
        table="docs", query="x", mode="hybrid", fusion={"method": "rrf", "weights": [1, 2]}
    )
    same = SearchRequest(
        table="docs", query="x", mode="hybrid", fusion={"method": "rrf", "weights": (1, 2)}
    )
    assert request == same and hash(request) == hash(same)
    assert request.fusion is not None and request.fusion.options["weights"] == (1, 2)
    with pytest.raises(TypeError):
        request.fusion.options["bogus"] = 1  # type: ignore[index]
    assert FusionChoice(method="min-max").method == "min_max"
