"""The typed retrieval-plan AST.

Frozen, keyword-only attrs nodes validated at construction. This package never imports
sqlglot or any engine: :mod:`hotdata_retrieval.compile` turns plans into SQL. Every node class
has a stable ``visit_name``, and :class:`NodeVisitor` (:class:`PredicateVisitor` for filters)
dispatches on it: each interpretation of a plan is one visitor class.
"""

from hotdata_retrieval.plan.document import (
    PLAN_JSON_SCHEMA,
    plan_from_document,
    plan_json_schema,
    plan_to_document,
)
from hotdata_retrieval.plan.filter_objects import FILTER_OBJECT_SCHEMA, filter_from_object
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Comparison,
    ComparisonOperator,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateVisitor,
    StartsWith,
    predicate_columns,
    predicate_forms,
    register_predicate,
)
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    MAX_FUSION_BRANCHES,
    Bm25Search,
    Branch,
    DistanceMetric,
    DistributionBasedScoreFusion,
    Fusion,
    MinMaxFusion,
    NearestNeighborSearch,
    NormalizedScoreFusion,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    fusion_class,
    fusion_methods,
    register_fusion,
)
from hotdata_retrieval.plan.visitor import NodeVisitor, UnvisitableNodeError

__all__ = [
    "DEFAULT_DEPTH",
    "MAX_FILTER_DEPTH",
    "MAX_FUSION_BRANCHES",
    "PLAN_JSON_SCHEMA",
    "plan_from_document",
    "plan_json_schema",
    "plan_to_document",
    "DEFAULT_CATALOG",
    "DEFAULT_SCHEMA",
    "And",
    "FILTER_OBJECT_SCHEMA",
    "filter_from_object",
    "StartsWith",
    "ContainsAll",
    "ContainsAny",
    "predicate_forms",
    "register_predicate",
    "Bm25Search",
    "Branch",
    "Comparison",
    "ComparisonOperator",
    "DistanceMetric",
    "DistributionBasedScoreFusion",
    "Fusion",
    "InList",
    "IsNull",
    "MinMaxFusion",
    "NearestNeighborSearch",
    "NormalizedScoreFusion",
    "NodeVisitor",
    "Not",
    "Or",
    "Predicate",
    "PredicateVisitor",
    "ReciprocalRankFusion",
    "SearchPlan",
    "TableName",
    "UnvisitableNodeError",
    "VectorSearch",
    "fusion_class",
    "fusion_methods",
    "predicate_columns",
    "register_fusion",
]
