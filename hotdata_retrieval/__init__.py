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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotdata_retrieval.compile import (
        compile_plan,
        get_dialect,
        known_dialects,
        parse_filter,
        to_sql,
    )
    from hotdata_retrieval.errors import (
        CaseError,
        CatalogError,
        ConcurrentWriteError,
        DatabaseError,
        DimensionMismatchError,
        DuplicateColumnError,
        EmbedderUnavailableError,
        EmbeddingError,
        EmbeddingInputError,
        EmbeddingOutputError,
        EngineError,
        EngineUnavailableError,
        HotdataApiError,
        HotdataConfigError,
        HotdataRetrievalError,
        HybridSearchError,
        InputLimitError,
        InvalidLimitError,
        KeyTypeError,
        LoadError,
        MissingExtraError,
        PlanError,
        RefusedStatementError,
        SqlLimitError,
        SqlParseError,
        TableNameError,
        ToolError,
        TuningError,
        UnknownDialectError,
        UnknownEngineError,
        UnknownRuleError,
        UnsupportedFeatureError,
        UnsupportedOnDialectError,
        UnvisitableNodeError,
    )
    from hotdata_retrieval.fusion import (
        FusedHit,
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
        BranchRanking,
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
        TableUnion,
        TieBreaker,
        VectorSearch,
        filter_from_object,
        plan_from_document,
        plan_to_document,
        register_fusion,
    )

_EXPORTED_FROM: dict[str, tuple[str, ...]] = {
    "hotdata_retrieval.compile": (
        "compile_plan",
        "get_dialect",
        "known_dialects",
        "parse_filter",
        "to_sql",
    ),
    "hotdata_retrieval.errors": (
        "CaseError",
        "CatalogError",
        "ConcurrentWriteError",
        "DatabaseError",
        "DimensionMismatchError",
        "DuplicateColumnError",
        "EmbedderUnavailableError",
        "EmbeddingError",
        "EmbeddingInputError",
        "EmbeddingOutputError",
        "EngineError",
        "EngineUnavailableError",
        "HotdataApiError",
        "HotdataConfigError",
        "HotdataRetrievalError",
        "HybridSearchError",
        "InputLimitError",
        "InvalidLimitError",
        "KeyTypeError",
        "LoadError",
        "MissingExtraError",
        "PlanError",
        "RefusedStatementError",
        "SqlLimitError",
        "SqlParseError",
        "TableNameError",
        "ToolError",
        "TuningError",
        "UnknownDialectError",
        "UnknownEngineError",
        "UnknownRuleError",
        "UnsupportedFeatureError",
        "UnsupportedOnDialectError",
        "UnvisitableNodeError",
    ),
    "hotdata_retrieval.fusion": (
        "FusedHit",
        "competition_ranks",
        "distribution_based_score_fusion",
        "min_max_fusion",
        "rank_branch",
        "reciprocal_rank_fusion",
        "reference_fusion",
        "register_reference_fusion",
    ),
    "hotdata_retrieval.plan": (
        "And",
        "Bm25Search",
        "BranchRanking",
        "Comparison",
        "ComparisonOperator",
        "ContainsAll",
        "ContainsAny",
        "DistanceMetric",
        "DistributionBasedScoreFusion",
        "Fusion",
        "InList",
        "IsNull",
        "MinMaxFusion",
        "NearestNeighborSearch",
        "Not",
        "Or",
        "ReciprocalRankFusion",
        "SearchPlan",
        "StartsWith",
        "TableName",
        "TableUnion",
        "TieBreaker",
        "VectorSearch",
        "filter_from_object",
        "plan_from_document",
        "plan_to_document",
        "register_fusion",
    ),
}
"""Where each public name lives, by module: imported on first use (PEP 562), so ``import
hotdata_retrieval`` and ``hdq --help`` do not load sqlglot and its dialects until a plan is
compiled. The ``TYPE_CHECKING`` imports above state the same names for type checkers
(``tests/test_lazy_imports.py`` checks the two agree)."""

_MODULE_OF = {name: module for module, names in _EXPORTED_FROM.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'hotdata_retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__version__ = "0.1.0"

__all__ = [
    # plans
    "SearchPlan",
    "TieBreaker",
    "BranchRanking",
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
    "TableUnion",
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
    # errors (every one defined in hotdata_retrieval.errors)
    "HotdataRetrievalError",
    "PlanError",
    "TableNameError",
    "UnknownDialectError",
    "UnsupportedFeatureError",
    "DuplicateColumnError",
    "UnknownEngineError",
    "EngineError",
    "SqlLimitError",
    "RefusedStatementError",
    "HotdataApiError",
    "HotdataConfigError",
    "InvalidLimitError",
    "InputLimitError",
    "DatabaseError",
    "ConcurrentWriteError",
    "LoadError",
    "HybridSearchError",
    "DimensionMismatchError",
    "UnvisitableNodeError",
    "KeyTypeError",
    "CatalogError",
    "SqlParseError",
    "UnknownRuleError",
    "EmbeddingError",
    "EmbedderUnavailableError",
    "EmbeddingInputError",
    "EmbeddingOutputError",
    "TuningError",
    "MissingExtraError",
    "ToolError",
    "UnsupportedOnDialectError",
    "CaseError",
    "EngineUnavailableError",
]
