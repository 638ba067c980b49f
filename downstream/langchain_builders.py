"""A pytest plugin: hotdata-langchain's SQL builders and helpers delegated to this library.

Loaded into hotdata-langchain's own test suite (``pytest -p langchain_builders``, with this
folder on ``PYTHONPATH``; ``nox -s integrations`` does it), before its test modules import
``hotdata_langchain``:

- the four builders of ``hotdata_langchain.search`` become :mod:`hotdata_retrieval.builders`'
  functions;
- the VectorStore's ranking query is :func:`hotdata_retrieval.builders.vector_distance_sql`
  over the quoted table reference the store builds itself (``table_ref``), its equality
  filter passed as ``where=`` (the store's own checks of the filter still run first);
- the SQL helpers of ``hotdata_langchain._sql`` — ``validate_identifier``,
  ``quote_identifier``, ``quote_literal`` and ``vector_literal`` — become the library's, in
  ``_sql`` and in every module that imported them by name (the schema tools, the search
  tools, the VectorStore).

Every statement and every quoted name the suite sees is then the library's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import hotdata_langchain._sql as sql_helpers
import hotdata_langchain.schema as schema
import hotdata_langchain.search as search
import hotdata_langchain.vectorstore as vectorstore

from hotdata_retrieval import builders

BUILDERS = ("bm25_search_sql", "vector_search_sql", "vector_distance_sql", "hybrid_search_sql")
HELPERS = ("validate_identifier", "quote_identifier", "quote_literal", "vector_literal")

for _name in BUILDERS:
    setattr(search, _name, getattr(builders, _name))

for _module in (sql_helpers, schema, search, vectorstore):
    for _name in HELPERS:
        if hasattr(_module, _name):
            setattr(_module, _name, getattr(builders, _name))


def _search_sql(
    self: Any,
    embedding: Sequence[float],
    k: int,
    filter: Mapping[str, Any] | None,
    *,
    with_vectors: bool = False,
) -> str:
    """The VectorStore's ranking query, built by the library (its own filter checks
    first)."""
    self._where(filter)  # the store's checks: declared keys, value types
    return builders.vector_distance_sql(
        table=self.table_ref,
        column=vectorstore.EMBEDDING_COLUMN,
        vector=embedding,
        k=k,
        columns=[vectorstore.ID_COLUMN, vectorstore.CONTENT_COLUMN, vectorstore.METADATA_COLUMN],
        metric=self._distance,
        where=dict(filter) if filter else None,
        distance_alias=vectorstore.DISTANCE_ALIAS,
        include_vectors=with_vectors,
    )


vectorstore.HotdataVectorStore._search_sql = _search_sql  # type: ignore[method-assign]
