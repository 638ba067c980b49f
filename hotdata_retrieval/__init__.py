"""hotdata-retrieval: compile retrieval plans — BM25, vector nearest-neighbour search and
their reciprocal rank fusion — into one SQL statement, and run them.

>>> from hotdata_retrieval import Bm25Search, NearestNeighborSearch, ReciprocalRankFusion
>>> from hotdata_retrieval import SearchPlan, to_sql
>>> plan = SearchPlan(
...     source=ReciprocalRankFusion(branches=[
...         Bm25Search(table="docs", column="body", query_text="error E1234"),
...         NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.1, 0.2]),
...     ]),
...     limit=5,
... )
>>> sql = to_sql(plan)
>>> "bm25_search('default.public.docs', 'body', 'error E1234', 100)" in sql
True
"""

from hotdata_retrieval.compile import (
    compile_plan,
    get_dialect,
    known_dialects,
    parse_filter,
    to_sql,
)
from hotdata_retrieval.errors import (
    DuplicateColumnError,
    HotdataRetrievalError,
    PlanError,
    TableNameError,
    UnknownDialectError,
    UnsupportedFeatureError,
)
from hotdata_retrieval.fusion import (
    FusedHit,
    KeyTypeError,
    competition_ranks,
    distribution_based_score_fusion,
    min_max_fusion,
    rank_branch,
    reciprocal_rank_fusion,
    reference_fusion,
    register_reference_fusion,
)
from hotdata_retrieval.plan import (
    And,
    Bm25Search,
    Comparison,
    ComparisonOperator,
    ContainsAll,
    ContainsAny,
    DistanceMetric,
    DistributionBasedScoreFusion,
    Fusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    Not,
    Or,
    ReciprocalRankFusion,
    SearchPlan,
    StartsWith,
    TableName,
    VectorSearch,
    filter_from_object,
    plan_from_document,
    plan_to_document,
    register_fusion,
)

__version__ = "0.1.0"

__all__ = [
    # plans
    "SearchPlan",
    "Bm25Search",
    "VectorSearch",
    "NearestNeighborSearch",
    "DistanceMetric",
    "Fusion",
    "ReciprocalRankFusion",
    "MinMaxFusion",
    "DistributionBasedScoreFusion",
    "register_fusion",
    "TableName",
    # filters
    "Comparison",
    "ComparisonOperator",
    "InList",
    "IsNull",
    "StartsWith",
    "ContainsAll",
    "ContainsAny",
    "And",
    "Or",
    "Not",
    "filter_from_object",
    "plan_from_document",
    "plan_to_document",
    "parse_filter",
    # compiling
    "to_sql",
    "compile_plan",
    "get_dialect",
    "known_dialects",
    # reference fusion
    "reciprocal_rank_fusion",
    "min_max_fusion",
    "distribution_based_score_fusion",
    "reference_fusion",
    "register_reference_fusion",
    "rank_branch",
    "competition_ranks",
    "FusedHit",
    "KeyTypeError",
    # errors
    "HotdataRetrievalError",
    "PlanError",
    "DuplicateColumnError",
    "TableNameError",
    "UnknownDialectError",
    "UnsupportedFeatureError",
]
