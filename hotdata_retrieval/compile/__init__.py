"""The compiler: plans become sqlglot trees, rendered per dialect.

:func:`to_sql` is the one door to SQL text. A dialect is a :class:`DialectProfile` (data and
flags), the sqlglot dialect whose generator lowers the compiler's search nodes to its SQL, and
optionally a :class:`PlanCompiler` subclass; ``hotdata`` — the Hotdata engine's DataFusion SQL
— is the default, and ``hotdata-native`` (the same, with a native ``hybrid_search``) is
registered beside it. A plan a dialect cannot express raises
:class:`UnsupportedOnDialectError` ("unsupported on <dialect>: <what>") while it compiles.
"""

from hotdata_retrieval.compile import duckdb as _duckdb  # noqa: F401
from hotdata_retrieval.compile import hotdata as _hotdata  # noqa: F401  (registers the dialects)
from hotdata_retrieval.compile import postgres as _postgres  # noqa: F401
from hotdata_retrieval.compile import sqlite as _sqlite  # noqa: F401
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
