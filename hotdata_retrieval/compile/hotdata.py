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
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from hotdata_retrieval.compile.dialect import DialectProfile, register_dialect
from hotdata_retrieval.compile.keywords import QUOTED_WORDS
from hotdata_retrieval.compile.nodes import (
    ValueSlot,
    VectorLiteral,
    value_slot_sql,
    vector_literal_sql,
)
from hotdata_retrieval.plan.search import DistanceMetric

__all__ = ["HOTDATA", "Hotdata"]


RESERVED_WORDS = QUOTED_WORDS
"""Words quoted when they name a table, schema or column (:mod:`.keywords`)."""


_ENGINE_FUNCTIONS = frozenset({"COSINE_DISTANCE", "VECTOR_SEARCH", "SEARCH", "DOT_PRODUCT"})
"""Names sqlglot would parse into other vendors' nodes (BigQuery's ``VECTOR_SEARCH`` and
``SEARCH``, a generic ``COSINE_DISTANCE``); on this engine they are its own functions, so
they parse as plain calls that keep their name and arguments."""


class Hotdata(Postgres):
    """sqlglot dialect for the Hotdata engine (registered with sqlglot as ``hotdata``)."""

    NORMALIZE_FUNCTIONS = False

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
            VectorLiteral: vector_literal_sql,
            ValueSlot: value_slot_sql,
        }

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


HOTDATA = register_dialect(
    DialectProfile(
        name="hotdata",
        sqlglot_dialect=Hotdata,
        distance_functions={
            DistanceMetric.COSINE: "cosine_distance",
            DistanceMetric.L2: "l2_distance",
            DistanceMetric.DOT: "negative_dot_product",
        },
        text_search_function="bm25_search",
        semantic_search_function="vector_search",
        # Contract §1.3: resolves the index's model and metric and embeds the query itself.
        semantic_distance_function="vector_distance",
        vector_literal_open="ARRAY[",
        vector_literal_close="]",
        supports_full_outer_join=True,
    )
)
"""The Hotdata engine profile: the primary, default dialect."""
