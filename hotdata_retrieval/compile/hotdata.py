"""The Hotdata engine's dialect: DataFusion SQL, close to PostgreSQL.

Differences from sqlglot's ``postgres`` dialect, each with its source:

- Function names are emitted exactly as written. DataFusion looks table functions up
  case-sensitively: sqlglot's default upper-casing produces ``BM25_SEARCH(``, which fails with
  ``table function 'BM25_SEARCH' not found`` (measured, ``shared/reference/local-engines.md``
  §A).
- ``cosine_distance``, ``l2_distance``, ``negative_dot_product`` and ``vector_search`` parse as
  plain calls and keep their names; sqlglot would otherwise turn a parsed ``cosine_distance``
  into a generic node that other dialects rename (Snowflake's is a *similarity*,
  local-engines §E) and ``vector_search`` into BigQuery's ``VECTOR_SEARCH``.
- Keywords used as identifiers are quoted. Quoting a lower-case name is safe on the engine
  (engine contract §4: a parquet column named ``all`` resolves when quoted).

The generator's ``SEARCH_NODES`` table spells the compiler's search nodes as the engine's
functions (``bm25_search``, ``vector_search``, ``vector_distance`` and the three distance
functions). Two profiles render with it: ``hotdata`` (:data:`HOTDATA`, the default) and
``hotdata-native`` (:data:`HOTDATA_NATIVE`), the same dialect with the native
``hybrid_search`` of ``docs/spec/hybrid_search.md`` declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from hotdata_retrieval.compile.dialect import (
    DialectProfile,
    get_dialect,
    known_dialects,
    register_dialect,
)
from hotdata_retrieval.compile.keywords import QUOTED_WORDS
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    DistanceFunctions,
    Lowering,
    ScalarFunction,
    SearchNode,
    SemanticDistance,
    SemanticSearch,
    TableFunction,
    TemporalLiteral,
    TextSearch,
    VectorDistance,
)
from hotdata_retrieval.plan.search import DistanceMetric

HYBRID_SEARCH_FUNCTION = "hybrid_search"
"""The native fused search's table function, as ``docs/spec/hybrid_search.md`` names it."""


RESERVED_WORDS = QUOTED_WORDS
"""Words quoted when they name a table, schema or column (:mod:`.keywords`)."""


_ENGINE_FUNCTIONS = frozenset({"COSINE_DISTANCE", "VECTOR_SEARCH", "SEARCH", "DOT_PRODUCT"})
"""Names sqlglot would parse into other vendors' nodes (BigQuery's ``VECTOR_SEARCH`` and
``SEARCH``, a generic ``COSINE_DISTANCE``); on this engine they are its own functions, so
they parse as plain calls that keep their name and arguments."""


class Hotdata(Postgres):
    """sqlglot dialect for the Hotdata engine (registered with sqlglot as ``hotdata``)."""

    NORMALIZE_FUNCTIONS = False

    class Tokenizer(Postgres.Tokenizer):
        COMMENTS_TERMINATE_AT_NEWLINE_ONLY = True
        """A ``--`` comment ends at a line feed, never at a carriage return alone: DataFusion's
        SQL parser in its default ``generic`` dialect (``datafusion.sql_parser.dialect``)
        reads ``SELECT 1 AS a -- c\\r, 2 AS b`` as one column (observed with datafusion 55;
        its ``postgresql`` dialect, like sqlglot's, ends the comment at the ``\\r``). The
        linter, the local engine's fast-path rewrite and every other parse of engine SQL
        must see the statement the engine runs."""

    class Parser(Postgres.Parser):  # type: ignore[valid-type,misc]  # sqlglot nests classes as attributes
        FUNCTIONS: ClassVar[dict[str, Any]] = {
            name: builder
            for name, builder in Postgres.Parser.FUNCTIONS.items()
            if name not in _ENGINE_FUNCTIONS
        }

    class Generator(Postgres.Generator):  # type: ignore[valid-type,misc]  # as above
        RESERVED_KEYWORDS: ClassVar[set[str]] = set(RESERVED_WORDS)
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **Postgres.Generator.TRANSFORMS,
            **COMPILER_TRANSFORMS,
            TemporalLiteral: lambda generator, node: generator.sql(_utc_temporal(node)),
        }
        SEARCH_NODES: ClassVar[Mapping[type[SearchNode], Lowering]] = {
            TextSearch: TableFunction("bm25_search"),
            SemanticSearch: TableFunction("vector_search"),
            # Contract §1.3: resolves the index's model and metric and embeds the query itself.
            SemanticDistance: ScalarFunction("vector_distance"),
            VectorDistance: DistanceFunctions(
                {
                    DistanceMetric.COSINE: "cosine_distance",
                    DistanceMetric.L2: "l2_distance",
                    DistanceMetric.DOT: "negative_dot_product",
                }
            ),
        }
        """How each search node is spelled on the engine (engine contract §1)."""

        def boolean_sql(self, expression: exp.Boolean) -> str:
            """``true`` and ``false`` in lower case, as the integrations that write SQL for
            the engine spell them (hotdata-langchain's filters: ``live = true``); the engine
            reads either case."""
            return "true" if expression.this else "false"

        def paren_sql(self, expression: exp.Paren) -> str:
            """Keep a short parenthesised expression on one line, even when pretty.

            A multi-line one is laid out as sqlglot's own ``paren_sql`` does, from the text
            already rendered: rendering it a second time (by calling the parent method) made
            each nested group cost twice its child, exponential in the filter's depth.
            """
            inner = self.sql(expression, "this")
            if "\n" not in inner:
                return f"({inner})"
            body = self.seg(self.indent(inner), sep="")
            return f"({body}{self.seg(')', sep='')}"


UTC_TIMESTAMP_TYPE = 'Timestamp(Microsecond, Some("UTC"))'
"""The Arrow type a timestamp literal is cast to on the engine (``arrow_cast``), an instant
in UTC; filter text reads such a cast back as the datetime it names
(:func:`~hotdata_retrieval.compile.parse_filter`). Microseconds, the precision of a Python
``datetime``: they hold the years 1 to 9999, where nanoseconds hold 1677-09-21 to 2262-04-11
only and DataFusion failed on a literal past them (``Cast error: Overflow``)."""


def _utc_temporal(node: TemporalLiteral) -> exp.Expr:
    """A date literal as ``CAST('<date>' AS DATE)``; a timestamp literal as the instant it
    names, ``arrow_cast('<text>', 'Timestamp(Microsecond, Some("UTC"))')``: a zone-less text
    read in UTC, one with an offset at that offset.

    ``CAST('<text>' AS TIMESTAMP)`` is a zone-less timestamp, which DataFusion compares with
    a column of a time zone by reading it in the column's zone (``paris > TIMESTAMP
    '2020-01-01 12:00:00'`` on an Arrow ``timestamp('ms', 'Europe/Paris')`` column keeps the
    row at 12:00 UTC), where every other engine of the library reads it in UTC
    (docs/plans.md, "Filter values and column types"). ``AT TIME ZONE 'UTC'`` would say the
    same on DataFusion but LanceDB's filter reader refuses it ("is not supported SQL in
    lance"), and a ``TIMESTAMP WITH TIME ZONE`` cast is zone-less on DataFusion and refused
    by LanceDB ("Timezone not supported in timestamp"); ``arrow_cast`` to a UTC timestamp is
    read alike by both (observed with datafusion 55 and lancedb's filter reader). A UTC
    timestamp compares as the instant with a zone-less column too, reading that column in
    UTC.
    """
    text = exp.Literal.string(str(node.this))
    if str(node.args["kind"]) != "TIMESTAMP":
        return exp.Cast(this=text, to=exp.DataType.build(exp.DataType.Type.DATE))
    return exp.Anonymous(
        this="arrow_cast", expressions=[text, exp.Literal.string(UTC_TIMESTAMP_TYPE)]
    )


HOTDATA = register_dialect(
    DialectProfile(
        name="hotdata",
        sqlglot_dialect=Hotdata,
        vector_literal_open="ARRAY[",
        vector_literal_close="]",
        supports_full_outer_join=True,
        guards_null_folds=True,
    )
)
"""The Hotdata engine profile: the primary, default dialect."""

HOTDATA_NATIVE = register_dialect(
    attrs.evolve(HOTDATA, name="hotdata-native", native_hybrid_search=HYBRID_SEARCH_FUNCTION)
)
"""``hotdata`` with ``native_hybrid_search = "hybrid_search"``, for engines that implement
``docs/spec/hybrid_search.md`` (the local engine does; the Hotdata engine has no
``hybrid_search`` today, engine contract §1.6): a reciprocal rank fusion of one text branch and
one vector branch compiles to one ``hybrid_search(...)`` call; every other plan compiles
exactly as for ``hotdata``."""


def native_profile(function: str = HYBRID_SEARCH_FUNCTION) -> DialectProfile:
    """The Hotdata dialect with a native fused-search function called ``function``,
    registered as ``hotdata-native`` (for ``hybrid_search``) or ``hotdata-native-<function>``.

    >>> native_profile().name
    'hotdata-native'
    >>> native_profile("fused_search").native_hybrid_search
    'fused_search'
    """
    if function == HYBRID_SEARCH_FUNCTION:
        return HOTDATA_NATIVE
    name = f"hotdata-native-{function}"
    if name in known_dialects():
        return get_dialect(name)
    return register_dialect(attrs.evolve(HOTDATA, name=name, native_hybrid_search=function))
