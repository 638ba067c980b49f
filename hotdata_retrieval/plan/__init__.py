"""The typed retrieval-plan AST.

Frozen, keyword-only attrs nodes validated at construction. This package never imports
sqlglot or any engine: :mod:`hotdata_retrieval.compile` turns plans into SQL.
"""

from hotdata_retrieval.plan.document import (
    PLAN_JSON_SCHEMA,
    plan_from_document,
    plan_to_document,
)
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Comparison,
    ComparisonOperator,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
)
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import (
    MAX_FUSION_BRANCHES,
    Bm25Search,
    Branch,
    DistanceMetric,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)

__all__ = [
    "MAX_FILTER_DEPTH",
    "MAX_FUSION_BRANCHES",
    "PLAN_JSON_SCHEMA",
    "plan_from_document",
    "plan_to_document",
    "DEFAULT_CATALOG",
    "DEFAULT_SCHEMA",
    "And",
    "Bm25Search",
    "Branch",
    "Comparison",
    "ComparisonOperator",
    "DistanceMetric",
    "InList",
    "IsNull",
    "NearestNeighborSearch",
    "Not",
    "Or",
    "Predicate",
    "ReciprocalRankFusion",
    "SearchPlan",
    "TableName",
    "VectorSearch",
]
