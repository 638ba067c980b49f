"""HNSW index settings: how the approximate nearest-neighbour graph an engine builds for a vector
column is linked, built, searched and stored.

The defaults were chosen by measurement (``benchmarks/bench_ann.py``, ``docs/benchmarks.md``
"HNSW settings": SciFact's 5,183 all-MiniLM-L6-v2 abstract embeddings, cosine, the 300 test
claims, one thread). The local engine (usearch) takes every setting; PostgreSQL (pgvector)
takes ``connectivity`` as ``m`` and ``expansion_add`` as ``ef_construction``.

The ranges are pgvector's own for ``m``, ``ef_construction`` and ``ef_search``, so one
settings object means the same on either engine; within them every value builds a working
index, and beyond them a graph costs more memory and build time for no measurable recall.

This module needs neither engine's dependencies.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import attrs

from hotdata_retrieval.errors import EngineError, PlanError
from hotdata_retrieval.errors import HnswSettingsError as HnswSettingsError
from hotdata_retrieval.plan.search import DistanceMetric


class VectorIndexKind(str, enum.Enum):
    """The approximate vector indexes an engine may build for a table's vector columns
    (``vector_index=`` of a load or a document table): the one registry of their names.
    Without one, nearest-neighbour search is exact. Each engine says which it builds in its
    ``vector_indexes`` (none on SQLite, DuckDB, LanceDB and turbopuffer, which indexes its
    vectors itself)."""

    HNSW = "hnsw"
    """A hierarchical navigable small world graph (usearch on the local engine, pgvector on
    PostgreSQL, the Hotdata engine's own): :mod:`hotdata_retrieval.engines.hnsw`."""


def vector_index_kind(value: Any, *, label: str = "vector_index") -> str | None:
    """``value`` as the name of a :class:`VectorIndexKind`, or ``None`` (exact search).

    >>> vector_index_kind("hnsw")
    'hnsw'

    Raises:
        PlanError: ``value`` names no kind, naming it and listing the kinds; its ``field``
            is ``label``.
    """
    if value is None:
        return None
    known = [kind.value for kind in VectorIndexKind]
    if not isinstance(value, str) or value not in known:
        raise PlanError(
            f"{label} must be a vector index kind ({', '.join(map(repr, known))}) or None "
            f"for exact search, got {value!r}",
            field=label,
            value=value,
        )
    return value


def unbuilt_vector_index(kind: str, engine: str, builds: Sequence[str]) -> str:
    """The message refusing vector index ``kind`` on the engine named ``engine``, which
    builds ``builds`` (its ``vector_indexes``): said when a document table is built and
    again, by the engine, at a load.

    >>> unbuilt_vector_index("hnsw", "sqlite", ())[:57]
    "vector_index 'hnsw' is not one the sqlite engine builds ("
    """
    offered = ", ".join(repr(built) for built in builds) or "none"
    return (
        f"vector_index {kind!r} is not one the {engine} engine builds (it builds {offered}; "
        "without one, nearest-neighbour search is exact)"
    )


CONNECTIVITY_RANGE = (2, 100)
"""The fewest and most neighbours a node links to on the upper layers (twice as many on the
bottom layer). usearch refuses fewer than 2 (the graph degenerates into chains); 100 is
pgvector's largest ``m``, and memory per row grows linearly with it."""

EXPANSION_ADD_RANGE = (4, 1000)
"""The fewest and most candidates an insert considers when it links a new row: pgvector's
bounds for ``ef_construction``; build time grows about linearly with it, and past 128 the
measured recall no longer moved (0.991 at 128)."""

EXPANSION_SEARCH_RANGE = (1, 1000)
"""The fewest and most candidates a search gathers: pgvector's bounds for ``ef_search``. The
local engine re-scores every candidate in float64, so 1000 candidates already cost as much as
an exact scan of a small table."""

STORAGES = ("float32", "float16", "int8")
"""How an index may store each vector component: 4, 2 or 1 byte."""

FLOAT16_MAX = 65504.0
"""The largest finite float16 magnitude: a component beyond it is an infinity in a float16
index, whose distances are then NaN."""

DEFAULT_CONNECTIVITY = 16
"""usearch's default and the measured choice: 8 built in 0.39x the CPU of usearch's defaults
for recall@10 0.975, 16 in 0.54x for 0.988 (float32, build expansion 64)."""

DEFAULT_EXPANSION_ADD = 64
"""Half usearch's default of 128: about half the build CPU time, recall@10 0.988 against 0.991
after the float64 re-score of 64 candidates (32: 0.979)."""

DEFAULT_EXPANSION_SEARCH = 64
"""usearch's default search expansion: the local engine asks the index for at least this many
candidates and re-scores each in float64."""


def _whole_number_in(bounds: tuple[int, int]) -> Any:
    low, high = bounds

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise HnswSettingsError(
                f"{attribute.name} must be a whole number from {low} to {high}, got {value!r}",
                setting=attribute.name,
                value=value,
            )

    return check


def _storage(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and value not in STORAGES:
        raise HnswSettingsError(
            f"storage must be one of {', '.join(STORAGES)} or None (the default for the "
            f"metric), got {value!r}",
            setting="storage",
            value=value,
        )


@attrs.frozen(kw_only=True)
class HnswSettings:
    """How an HNSW index is built and searched (module docstring for the ranges).

    Attributes:
        connectivity: neighbours each row links to (usearch ``connectivity``, pgvector
            ``m``); 2 to 100, default 16. More: higher recall, more memory, slower build.
        expansion_add: candidates an insert considers (usearch ``expansion_add``, pgvector
            ``ef_construction``); 4 to 1000, default 64. More: a better graph, slower build.
        expansion_search: candidates a search gathers; 1 to 1000, default 64. The local engine
            asks the index for at least this many rows and re-scores each in float64, so pages
            of one search up to this depth cut one candidate list. More: higher recall, slower
            search.
        storage: how the index stores vectors: ``"float32"``, ``"float16"`` or ``"int8"``
            (4, 2 or 1 byte a component); default ``None``, the measured choice per metric:
            int8 for cosine, float32 for L2 and dot product (:meth:`storage_for`). Storage
            decides which rows are candidates, never their distances (the local engine
            re-scores candidates from the stored float32 vectors).

    Raises:
        HnswSettingsError: a value out of its range or of the wrong type, naming it.
    """

    connectivity: int = attrs.field(
        default=DEFAULT_CONNECTIVITY, validator=_whole_number_in(CONNECTIVITY_RANGE)
    )
    expansion_add: int = attrs.field(
        default=DEFAULT_EXPANSION_ADD, validator=_whole_number_in(EXPANSION_ADD_RANGE)
    )
    expansion_search: int = attrs.field(
        default=DEFAULT_EXPANSION_SEARCH, validator=_whole_number_in(EXPANSION_SEARCH_RANGE)
    )
    storage: str | None = attrs.field(default=None, validator=_storage)

    def storage_for(self, metric: DistanceMetric | str) -> str:
        """The storage of an index serving ``metric`` (``cosine``, ``l2`` or ``dot``):
        :attr:`storage`, or by default ``int8`` for cosine and ``float32`` otherwise.

        usearch quantizes a cosine index's vectors to int8 after normalising them, so every
        component lies in [-1, 1] and loses only rounding (measured: int8 builds in about a
        fifth of float32's CPU time, a quarter of its vector bytes, recall@10 0.990 after the
        float64 re-score of 64 candidates against float32's 0.988). An L2 or dot-product
        vector is quantized as it is, with no bound on its components: they clip, and the
        ranking is wrong, so int8 is refused for those metrics.

        Raises:
            HnswSettingsError: int8 storage for an L2 or dot-product index.
            PlanError: an unknown metric.
        """
        measure = DistanceMetric.parse(metric)
        if self.storage is None:
            return "int8" if measure is DistanceMetric.COSINE else "float32"
        if self.storage == "int8" and measure is not DistanceMetric.COSINE:
            raise HnswSettingsError(
                f"storage 'int8' is for cosine indexes only: an index of metric "
                f"'{measure.value}' would clip its vectors' components; use 'float32' or "
                "'float16'",
                setting="storage",
                value=self.storage,
            )
        return self.storage

    def to_document(self) -> dict[str, Any]:
        """The settings as a JSON object (how a catalog records them)."""
        return attrs.asdict(self)

    @classmethod
    def from_document(cls, document: Any) -> HnswSettings:
        """Settings read back from :meth:`to_document`'s object. A setting it lacks takes its
        default (a catalog written before the setting existed); one this version does not know
        is left out (a catalog written by a later version stays readable).

        Raises:
            HnswSettingsError: not an object, or a bad value (naming it).
        """
        if not isinstance(document, dict):
            raise HnswSettingsError(
                f"HNSW settings must be an object, got {document!r}",
                setting="hnsw_settings",
                value=document,
            )
        known = {field.name for field in attrs.fields(cls)}
        return cls(**{name: value for name, value in document.items() if name in known})


def require_vectors_to_index(table: str, vector_columns: Sequence[str]) -> None:
    """Refuse a load that asks for an HNSW index (``vector_index="hnsw"``) of a table that
    will hold no vector column to index: built silently, the table would be searched exactly
    (or not by vector at all) while the caller believes it approximate.

    Args:
        table: the table's name, for the message.
        vector_columns: the vector columns the loaded table will hold (embedded or given).

    Raises:
        EngineError: ``vector_columns`` is empty.
    """
    if not vector_columns:
        raise EngineError(
            f"vector_index='hnsw' indexes vector columns, and table {table!r} would hold "
            "none: embed a text column (embed_columns; hdq load without --no-embed) or load "
            "a column of vectors"
        )
