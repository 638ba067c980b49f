"""A pytest plugin: hotdata-langchain's SQL builders delegated to this library.

Loaded into hotdata-langchain's own test suite (``pytest -p langchain_builders``, with this
folder on ``PYTHONPATH``; ``nox -s integrations`` does it), before its test modules import
``hotdata_langchain.search``: the module's four builders become
:mod:`hotdata_retrieval.builders`' functions, and the VectorStore's ranking query is built by
:func:`hotdata_retrieval.builders.vector_distance_sql` — every statement the suite sees is
then the library's. The store's own checks (its filter keys and their types) still run first.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import hotdata_langchain.search as search
import hotdata_langchain.vectorstore as vectorstore

from hotdata_retrieval import builders
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.names import TableName

for _name in ("bm25_search_sql", "vector_search_sql", "vector_distance_sql", "hybrid_search_sql"):
    setattr(search, _name, getattr(builders, _name))


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
    where = None
    if filter:
        where = functools.reduce(
            operator.and_,
            [Comparison(column=key, operator="=", value=value) for key, value in filter.items()],
        )
    table = TableName(catalog="default", schema=self._schema, name=self._table)
    return builders.vector_distance_sql(
        table=str(table),
        column=vectorstore.EMBEDDING_COLUMN,
        vector=embedding,
        k=k,
        columns=[vectorstore.ID_COLUMN, vectorstore.CONTENT_COLUMN, vectorstore.METADATA_COLUMN],
        metric=self._distance,
        where=where,
        distance_alias=vectorstore.DISTANCE_ALIAS,
        include_vectors=with_vectors,
    )


vectorstore.HotdataVectorStore._search_sql = _search_sql  # type: ignore[method-assign]
