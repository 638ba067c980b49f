"""A pytest plugin: hotdata-ibis's ``semantic_search`` delegated to this library.

Loaded into hotdata-ibis's own test suite (``pytest -p ibis_semantic_search``, with this
folder on ``PYTHONPATH``; ``nox -s integrations-ibis`` does it), before its test modules
import ``ibis_hotdata``: ``ibis_hotdata.vector.semantic_search`` (and the package's name for
it) becomes a call of :func:`hotdata_retrieval.adapters.ibis.semantic_search`, one plan through
``to_ibis``. Its ``distance_fn`` (one of hotdata-ibis's distance functions) is the plan's
metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ibis_hotdata
import ibis_hotdata.vector as vector

from hotdata_retrieval.adapters import ibis as adapter

_METRICS = {
    vector.cosine_distance: "cosine",
    vector.l2_distance: "l2",
    vector.negative_dot_product: "dot",
}


def semantic_search(
    table: Any,
    column: Any,
    query_vector: Sequence[float] | str,
    k: int,
    *,
    distance_fn: Any = vector.cosine_distance,
    distance_name: str = "distance",
) -> Any:
    """hotdata-ibis's signature, answered by the library."""
    if distance_fn not in _METRICS:
        raise ValueError(f"distance_fn must be one of hotdata-ibis's: {list(_METRICS)}")
    return adapter.semantic_search(
        table,
        column,
        query_vector,
        k,
        metric=_METRICS[distance_fn],
        distance_name=distance_name,
    )


vector.semantic_search = semantic_search
ibis_hotdata.semantic_search = semantic_search
