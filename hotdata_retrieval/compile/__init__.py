"""The compiler: plans become sqlglot trees, rendered per dialect.

:func:`to_sql` is the one door to SQL text. A dialect is a :class:`DialectProfile` (data and
flags), the sqlglot dialect whose generator lowers the compiler's search nodes to its SQL, and
optionally a :class:`PlanCompiler` subclass; ``hotdata`` — the Hotdata engine's DataFusion SQL
— is the default, and ``hotdata-native`` (the same, with a native ``hybrid_search``) is
registered beside it; the store dialects (``sqlite``, ``duckdb``, ``postgres``) are imported
when first asked for (:func:`get_dialect`). A plan a dialect cannot express raises
:class:`UnsupportedOnDialectError` ("unsupported on <dialect>: <what>") while it compiles.
"""

from hotdata_retrieval.compile.compiler import (
    BranchRequest,
    CompiledBranch,
    FusedBranch,
    FusedScore,
    PlanCompiler,
    compiler_for,
)
from hotdata_retrieval.compile.dialect import (
    DialectProfile,
    get_dialect,
    known_dialects,
    register_dialect,
)
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.compile.hotdata import (
    HOTDATA,
    HOTDATA_NATIVE,
    HYBRID_SEARCH_FUNCTION,
    Hotdata,
    native_profile,
)
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    DistanceFunctions,
    ScalarFunction,
    SearchNode,
    SemanticDistance,
    SemanticSearch,
    TableFunction,
    TextSearch,
    UnsupportedOnDialectError,
    VectorDistance,
)
from hotdata_retrieval.compile.render import compile_plan, to_sql

__all__ = [
    "COMPILER_TRANSFORMS",
    "HOTDATA",
    "HOTDATA_NATIVE",
    "HYBRID_SEARCH_FUNCTION",
    "BranchRequest",
    "CompiledBranch",
    "DialectProfile",
    "DistanceFunctions",
    "FusedBranch",
    "FusedScore",
    "Hotdata",
    "PlanCompiler",
    "ScalarFunction",
    "SearchNode",
    "SemanticDistance",
    "SemanticSearch",
    "TableFunction",
    "TextSearch",
    "UnsupportedOnDialectError",
    "VectorDistance",
    "compile_plan",
    "compiler_for",
    "get_dialect",
    "known_dialects",
    "native_profile",
    "parse_filter",
    "register_dialect",
    "to_sql",
]
