"""Named example plans: every branch kind, filters, weights, three branches, offsets, debug
columns and every name form. Snapshot tests pin their SQL; engine tests execute them."""

from __future__ import annotations

import attrs

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    DistributionBasedScoreFusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    Not,
    ReciprocalRankFusion,
    SearchPlan,
    TableName,
    TableUnion,
    VectorSearch,
)
from hotdata_retrieval.plan._cursor import Cursor, ranking_fingerprint

VECTOR = (0.12, -0.5, 0.33, 1e-05)

TEXT = Bm25Search(table="docs", column="body", query_text="error E1234 after upgrade")
SEMANTIC = VectorSearch(table="docs", column="body", query_text="the app crashes on start")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR)

FILTER = (
    Comparison(column="lang", operator="=", value="en")
    & (
        Comparison(column="year", operator=">=", value=2020)
        | InList(column="tag", values=["billing", "login"])
    )
    & IsNull(column="deleted_at")
    & ~InList(column="status", values=["spam"])
)

PLANS: dict[str, SearchPlan] = {
    "text": SearchPlan(source=TEXT, limit=5),
    "text_offset": SearchPlan(source=TEXT, limit=5, offset=10),
    "text_filtered": SearchPlan(source=TEXT, filter=FILTER),
    "semantic": SearchPlan(source=SEMANTIC, limit=5),
    "semantic_offset": SearchPlan(source=SEMANTIC, limit=5, offset=5),
    "nearest_cosine": SearchPlan(source=NEAREST, limit=3),
    "nearest_l2": SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, metric="euclidean"
        ),
        limit=3,
    ),
    "nearest_dot": SearchPlan(
        source=NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, metric="ip"
        ),
        limit=3,
    ),
    "nearest_filtered": SearchPlan(
        source=NEAREST, limit=3, filter=Comparison(column="category", operator="=", value="x")
    ),
    "nearest_offset": SearchPlan(source=NEAREST, limit=3, offset=6, columns=["id", "title"]),
    "hybrid": SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), limit=10),
    "hybrid_weighted": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[TEXT, NEAREST], weights=[2, 0.5], rank_constant=10, depth=50
        ),
        limit=10,
    ),
    "hybrid_offset": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), limit=10, offset=40
    ),
    "hybrid_filtered": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), limit=5, filter=FILTER
    ),
    "hybrid_debug_columns": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST]),
        limit=5,
        include_branch_scores=True,
        columns=["id", "title", "body"],
    ),
    "text_and_semantic": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, SEMANTIC]), limit=5
    ),
    "three_branches": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                TEXT,
                Bm25Search(table="docs", column="title", query_text="E1234", name="title"),
                NEAREST,
            ],
            weights=[1, 0.5, 1],
        ),
        limit=5,
        include_branch_scores=True,
    ),
    "min_max": SearchPlan(source=MinMaxFusion(branches=[TEXT, NEAREST]), limit=10),
    "min_max_alpha": SearchPlan(
        source=MinMaxFusion(branches=[TEXT, NEAREST], alpha=0.75, depth=50),
        limit=5,
        offset=5,
        include_branch_scores=True,
    ),
    "min_max_three_branches_filtered": SearchPlan(
        source=MinMaxFusion(
            branches=[
                TEXT,
                Bm25Search(table="docs", column="title", query_text="E1234", name="title"),
                SEMANTIC,
            ],
            weights=[2, 1, 1],
        ),
        limit=5,
        filter=Comparison(column="lang", operator="=", value="en"),
    ),
    "min_max_min_score": SearchPlan(
        source=MinMaxFusion(branches=[TEXT, NEAREST], min_score=0.4), limit=10, offset=10
    ),
    "hybrid_min_score": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], min_score=0.02), limit=10
    ),
    "dbsf": SearchPlan(source=DistributionBasedScoreFusion(branches=[TEXT, NEAREST]), limit=10),
    "dbsf_weighted": SearchPlan(
        source=DistributionBasedScoreFusion(branches=[NEAREST, TEXT], weights=[1, 0.5], depth=40),
        limit=10,
    ),
    "empty_in_lists": SearchPlan(
        source=TEXT,
        filter=InList(column="tag", values=[])
        | Not(operand=InList(column="tag", values=[], negated=True)),
    ),
    "names_one_part": SearchPlan(source=Bm25Search(table="Docs", column="Body", query_text="x")),
    "names_two_part": SearchPlan(
        source=Bm25Search(table="support.tickets", column="body", query_text="x")
    ),
    "names_three_part": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="f1.public.results", column="notes", query_text="x"),
                NearestNeighborSearch(
                    table="F1.Public.Results", column="notes_embedding", query_vector=VECTOR
                ),
            ]
        ),
        key_column="result_id",
    ),
    "names_quoted": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(
                    table='analytics."Support Tickets"', column="Ticket Body", query_text="x"
                ),
                NearestNeighborSearch(
                    table=TableName(catalog="default", schema="analytics", name="support tickets"),
                    column="body vector",
                    query_vector=VECTOR,
                ),
            ]
        ),
        columns=["id", "ticket body", "order", "select"],
    ),
    "names_keywords": SearchPlan(
        source=NearestNeighborSearch(table="order.table", column="select", query_vector=VECTOR),
        key_column="from",
        columns=["from", "group", "user"],
    ),
    "union_nearest": SearchPlan(
        source=NearestNeighborSearch(
            table=["docs", "docs_archive"], column="embedding", query_vector=VECTOR
        ),
        filter=Comparison(column="lang", operator="=", value="en"),
        limit=5,
    ),
    "union_text_filtered": SearchPlan(
        source=Bm25Search(table=["docs", "docs_archive"], column="body", query_text="error E1234"),
        filter=Comparison(column="lang", operator="=", value="en"),
        limit=5,
    ),
    "fusion_over_three_tables": SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(
                    table="docs",
                    column="body",
                    query_text="error E1234",
                    query_syntax="terms",
                    name="text_docs",
                ),
                Bm25Search(
                    table="docs_archive",
                    column="body",
                    query_text="error E1234",
                    query_syntax="terms",
                    name="text_archive",
                ),
                NearestNeighborSearch(
                    table=TableUnion(["docs", "docs_archive"]),
                    column="embedding",
                    query_vector=VECTOR,
                    exact=True,
                    name="content",
                    result_name="distance",
                ),
                NearestNeighborSearch(
                    table="docs_cues",
                    column="cue_embedding",
                    query_vector=VECTOR,
                    exact=True,
                    name="cue",
                    filter_through_key=True,
                ),
            ],
            ranking="row_number",
        ),
        filter=Comparison(column="lang", operator="=", value="en"),
        rows_from=["docs", "docs_archive"],
        columns=["id", "body"],
        score_name=None,
        tie_breakers=["distance asc"],
    ),
    "hybrid_page_scores": SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST]),
        limit=5,
        include_branch_scores=True,
        page_scores=["nearest"],
        tie_breakers=["nearest_distance"],
    ),
}
PLANS["text_grouped"] = SearchPlan(source=TEXT, limit=5, group_by="doc_id")
PLANS["nearest_grouped"] = SearchPlan(
    source=NEAREST, limit=3, offset=3, group_by="doc_id", group_size=2
)
PLANS["hybrid_grouped"] = SearchPlan(
    source=ReciprocalRankFusion(branches=[TEXT, NEAREST]),
    limit=5,
    group_by="doc_id",
    group_size=2,
    tie_breakers=["title"],
    include_branch_scores=True,
)
PLANS["nearest_after"] = SearchPlan(
    source=NEAREST,
    limit=3,
    after=Cursor(
        value=0.25, key=17, served=6, fingerprint=ranking_fingerprint(SearchPlan(source=NEAREST))
    ).token(),
)
PLANS["hybrid_after"] = SearchPlan(
    source=ReciprocalRankFusion(branches=[TEXT, NEAREST]),
    limit=5,
    after=Cursor(
        value=0.03125,
        key=42,
        served=5,
        fingerprint=ranking_fingerprint(
            SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]))
        ),
    ).token(),
)
PLANS["text_faceted"] = SearchPlan(source=TEXT, limit=5, offset=2, facets=["lang", "doc_id"])
PLANS["nearest_faceted"] = SearchPlan(
    source=NEAREST,
    limit=3,
    facets=["lang"],
    filter=Comparison(column="title", operator="!=", value="x"),
)
PLANS["hybrid_faceted"] = SearchPlan(
    source=ReciprocalRankFusion(branches=[TEXT, NEAREST]),
    limit=5,
    facets=["lang"],
    tie_breakers=["title"],
    include_branch_scores=True,
)
PLANS["page_scores_over_three_tables"] = attrs.evolve(
    PLANS["fusion_over_three_tables"], page_scores=["content"]
)
