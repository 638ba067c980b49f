"""Which rows of a vector column a cosine search cannot rank, recorded with each table version.

SQLite (sqlite-vec), PostgreSQL (pgvector) and LanceDB compute a cosine distance from Float32
squared norms, so a non-zero row whose squared norm is no normal Float32 number
(:data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`) gets each store's own wrong
distance: ``[1e-30, 1e-30]``, loaded for ``l2``, was at -inf from ``[1, 0]`` on SQLite and
LanceDB and at 0.0 on PostgreSQL, where NumPy's float64 gives 0.29. A table loaded for cosine
refuses such rows (:func:`~hotdata_retrieval.engines.checks.check_cosine_norms`); a table
loaded for ``l2`` or ``dot`` takes them, as those metrics rank them right, and records them
here (:class:`OutsideNorms`), per vector column, with every version it writes: a cosine
search of a column that holds one is refused on every engine (:func:`check_cosine_search`),
naming the table, the column and the row's key.

Where each engine keeps the record: the local engine and LanceDB write every row of a table
version, so they compute it from all of them (the local engine's catalog entry, LanceDB's
schema metadata); SQLite, DuckDB and PostgreSQL change rows in place, so their catalog row is
changed with the rows, in the same transaction, from the rows written and the keys removed
(:meth:`OutsideNorms.after_change`).

Beside it each version records every vector column's largest norm (:func:`largest_norm`;
SQLite, DuckDB and PostgreSQL raise it with each upsert and leave it on a delete, an upper
bound): a store summing a dot product in Float32 (pgvector's ``<#>``, LanceDB's ``dot``)
overflows past :data:`DOT_PRODUCTS_BOUND` (:func:`dot_products_fit`), where LanceDB ranks on
the client and PostgreSQL refuses the query (:func:`check_dot_search`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.errors import row_name
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import DistanceMetric, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.plan.values import (
    COSINE_SQUARED_NORMS,
    FLOAT32_MAX,
    float32_squared_norms,
)

KEPT_ROWS = 16
"""The most rows of one column :class:`OutsideNorms` names: a message needs one, and a record
naming a few keeps the table's refusal known when some of them are changed (past these, the
record says only that more may exist, and a cosine search reads the column once more)."""

CHECKED_ROWS = 2_000
"""Rows of a vector column :func:`outside_positions` converts at once: its temporaries stay
bounded whatever the column's size."""


def _json_key(value: Any) -> Any:
    """A key as the record keeps it: the value the table holds, as every engine finds a row
    by key, as a JSON value (a key JSON cannot hold, as its text), so keys compare alike
    once written and read back, however a change spells them.

    Every engine compares keys by value, not by their text: a timestamp is its instant (a
    zoned one in UTC, and a naive one taken as UTC: SQLite's ISO text, DuckDB's, PostgreSQL's
    and the local engine's comparisons all find ``2020-01-02 02:00+02:00`` and ``2020-01-02
    00:00`` as the row keyed ``2020-01-02 00:00 UTC``), so it is kept as its naive UTC ISO
    text; a NumPy scalar (a float16 key) is its Python value; -0.0 is the key 0.0; a
    ``Decimal`` is its number (an integral one its integer, one a float holds exactly that
    float), so ``2``, ``2.0`` and ``Decimal('2.00')`` are one key."""
    import datetime
    import decimal

    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            try:
                value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            except OverflowError:  # an instant before year 1 or past 9999 in UTC: as given
                return value.isoformat(sep=" ")
        return value.isoformat(sep=" ")
    if isinstance(value, decimal.Decimal) and value.is_finite():
        if value == value.to_integral_value():
            value = int(value)
        elif decimal.Decimal(float(value)) == value:
            value = float(value)
        else:
            value = str(value.normalize())
    if isinstance(value, float):
        value += 0.0  # -0.0 is the key 0.0
    return json.loads(json.dumps(value, default=str))


@attrs.frozen(kw_only=True)
class OutsideNorms:
    """The rows of one vector column whose Float32 squared norm is non-zero and no normal
    Float32 number (module docstring).

    Attributes:
        keys: such rows' keys (JSON values: the key column's values, a key JSON cannot hold
            as its text), or, for a table loaded without a key (``by_row``), their row
            numbers counted from 1; at most :data:`KEPT_ROWS`.
        complete: whether ``keys`` are every such row. An incomplete record with keys names
            rows that are such; one without keys knows nothing (more rows were such than it
            kept, and those it kept were changed; or an earlier release wrote the table), so
            the column is read again when a cosine search needs to know.
        by_row: ``keys`` are row numbers (the table has no key column).
    """

    keys: tuple[Any, ...] = ()
    complete: bool = True
    by_row: bool = False

    @property
    def known(self) -> bool:
        """Whether the record tells, without reading the column, if a cosine search of it is
        refused."""
        return bool(self.keys) or self.complete

    def to_text(self) -> str:
        """The record as JSON text (what a catalog keeps)."""
        return json.dumps(
            {"keys": list(self.keys), "complete": self.complete, "by_row": self.by_row},
            separators=(",", ":"),
        )

    @classmethod
    def from_text(cls, text: str | bytes | None) -> OutsideNorms:
        """The record :meth:`to_text` wrote as ``text``; an unknown record
        (``complete=False``, no keys) for ``None`` or text it did not write."""
        try:
            document = json.loads(text or "null")
            return cls(
                keys=tuple(document["keys"]),
                complete=document["complete"] is True,
                by_row=document["by_row"] is True,
            )
        except (TypeError, ValueError, KeyError):
            return cls(complete=False)

    def after_change(
        self, written: Iterable[Any], outside: Iterable[Any], removed: Iterable[Any] = ()
    ) -> OutsideNorms:
        """The record once rows keyed ``written`` are replaced or added (of which those keyed
        ``outside`` are such rows) and rows keyed ``removed`` are deleted: the keys it kept
        less the rows changed, then the new such rows (at most :data:`KEPT_ROWS`; past them,
        incomplete)."""
        changed = {_json_key(key) for key in (*written, *removed)}
        kept = [key for key in self.keys if key not in changed]
        added = [_json_key(key) for key in outside]
        keys = [*kept, *added]
        return OutsideNorms(
            keys=tuple(keys[:KEPT_ROWS]),
            complete=self.complete and len(keys) <= KEPT_ROWS,
        )

    def first(self) -> str:
        """How a message names the first row the record keeps: ``key 7``, ``row 3``."""
        if self.by_row:
            return row_name(int(self.keys[0]) - 1)
        return f"key {self.keys[0]!r}"


def outside_positions(values: Any) -> Any:
    """The 0-based positions of the rows of ``values`` (a vector column: a ``pyarrow``
    array or chunked array of lists of numbers within Float32's range) whose Float32
    squared norm (:func:`~hotdata_retrieval.plan.values.float32_squared_norms`) is non-zero
    and outside :data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`, ascending, as a
    NumPy int64 array; a NULL row, and a norm that is NaN or infinite (the vector checks name
    those), are none of them. Read :data:`CHECKED_ROWS` rows at a time."""
    import numpy as np
    import pyarrow.compute as pc

    low, high = COSINE_SQUARED_NORMS
    found = []
    for start in range(0, len(values), CHECKED_ROWS):
        chunk = values.slice(start, CHECKED_ROWS)
        if hasattr(chunk, "combine_chunks"):
            chunk = chunk.combine_chunks()
        rows = np.flatnonzero(np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False)))
        if not rows.size:
            continue
        components = pc.list_flatten(chunk.take(rows)).to_numpy(zero_copy_only=False)
        squared = float32_squared_norms(components.reshape(rows.size, -1))
        finite = np.isfinite(squared) & (squared != 0)
        outside = np.flatnonzero(finite & ((squared < low) | (squared > high)))
        found.append(start + rows[outside])
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def outside_norms(data: Any, column: str, key_column: str | None) -> OutsideNorms:
    """The record of vector column ``column`` of ``data`` (a ``pyarrow.Table``: every row of
    a table version), its rows named by ``key_column`` (``None``: by row number)."""
    positions = outside_positions(data.column(column))
    named = positions[:KEPT_ROWS]
    if key_column is None:
        keys = tuple(int(position) + 1 for position in named)
    else:
        keys = tuple(_json_key(key) for key in data.column(key_column).take(named).to_pylist())
    return OutsideNorms(keys=keys, complete=len(positions) <= KEPT_ROWS, by_row=key_column is None)


def recorded_norms(data: Any, column: str, key_column: str | None, metric: Any) -> OutsideNorms:
    """The record a table version written with ``data`` (every row) keeps for vector column
    ``column``, loaded for ``metric`` (a :class:`~hotdata_retrieval.plan.search.
    DistanceMetric` or its name; ``None``: cosine): :func:`outside_norms`, but for cosine an
    empty one, read from no row: a table loaded for cosine refuses such rows
    (:func:`~hotdata_retrieval.engines.checks.check_cosine_norms`), which its load or change
    has checked."""
    if metric is None or DistanceMetric.parse(metric) is DistanceMetric.COSINE:
        return OutsideNorms(by_row=key_column is None)
    return outside_norms(data, column, key_column)


def outside_keys(rows: Any, column: str, key_column: str) -> list[Any]:
    """The keys (``key_column``'s values) of the rows of ``rows`` (a ``pyarrow.Table``
    written into a table) whose vector in ``column`` is such a row; none when ``rows`` has
    no such column."""
    if column not in rows.column_names:
        return []
    positions = outside_positions(rows.column(column))
    return list(rows.column(key_column).take(positions).to_pylist()) if len(positions) else []


def check_cosine_search(
    plan: SearchPlan,
    table: TableName,
    record: Callable[[str], OutsideNorms | None],
    metric: str,
) -> None:
    """Refuse ``plan`` when one of its cosine nearest-neighbour branches searches a vector
    column of ``table`` that holds a row whose Float32 squared norm is non-zero and no
    normal Float32 number.

    Args:
        plan: the plan, checked against ``table`` (one of its tables).
        table: the table.
        record: the record of a column of ``table``, one that knows
            (:attr:`OutsideNorms.known`: the engine reads the column for one that does
            not); ``None`` for a column a cosine search may rank (a column the engine
            embedded, one loaded for cosine by an earlier release, whose rows were
            refused at load) or no vector column (other checks name it).
        metric: the metric ``table``'s vector columns were loaded with, for the message.

    Raises:
        EngineError: naming the table, the column, the row (its key, or its number in a
            table without a key) and the column's metric.
    """
    for branch in plan.branches:
        if not (
            isinstance(branch, NearestNeighborSearch)
            and branch.metric is DistanceMetric.COSINE
            and table in branch.table.members
        ):
            continue
        found = record(branch.column)
        if found is not None and found.keys:
            low, high = COSINE_SQUARED_NORMS
            raise EngineError(
                f"vector column '{branch.column}' of table '{table}' holds a vector whose "
                f"Float32 squared norm is non-zero and outside {low:.6g} to {high:.6g} (no "
                f"normal Float32 number), at {found.first()}: SQLite, PostgreSQL and LanceDB "
                "compute cosine distance from Float32 squared norms and rank such a row "
                "wrong, so no engine searches the column by cosine; search it by "
                f"{metric}, the metric it was loaded with, or divide that vector by its norm "
                "and write it again"
            )


def largest_norm(values: Any) -> float:
    """The largest norm of the vectors of ``values`` (a vector column: a ``pyarrow`` array
    or chunked array of lists of numbers within Float32's range), in float64 of their
    Float32 components (:func:`~hotdata_retrieval.plan.values.float32_squared_norms`); 0.0
    with no vector. Read :data:`CHECKED_ROWS` rows at a time."""
    import math

    import numpy as np
    import pyarrow.compute as pc

    largest = 0.0
    for start in range(0, len(values), CHECKED_ROWS):
        chunk = values.slice(start, CHECKED_ROWS)
        if hasattr(chunk, "combine_chunks"):
            chunk = chunk.combine_chunks()
        rows = np.flatnonzero(np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False)))
        if rows.size:
            components = pc.list_flatten(chunk.take(rows)).to_numpy(zero_copy_only=False)
            squared = float32_squared_norms(components.reshape(rows.size, -1))
            largest = max(largest, float(squared.max()))
    return math.sqrt(largest)


DOT_PRODUCTS_BOUND = FLOAT32_MAX / 2
"""The most a column's largest norm times a query's norm may be for a store that sums a dot
product in Float32 (pgvector's ``<#>``, LanceDB's ``dot``) to sum it without overflow: each
partial sum of ``a·q`` is at most ``|a| |q|`` (Cauchy-Schwarz), and half of Float32's
largest number leaves room for the rounding of the sum."""


def dot_products_fit(largest: float | None, query_vector: Any) -> bool:
    """Whether every Float32 partial sum of the dot product of ``query_vector`` (numbers)
    with the vectors of a column whose largest norm is ``largest`` (:func:`largest_norm`;
    ``None``: not known) stays within Float32: ``largest`` times the query's norm at most
    :data:`DOT_PRODUCTS_BOUND`. ``False`` for a ``largest`` not known.

    >>> dot_products_fit(1.0, [1e38, 0.0]), dot_products_fit(3.0, [1e38, 0.0])
    (True, False)
    """
    import math

    if largest is None:
        return False
    query = math.sqrt(float(float32_squared_norms([list(query_vector)])[0]))
    return largest * query <= DOT_PRODUCTS_BOUND


def check_dot_search(
    plan: SearchPlan, table: TableName, largest: Callable[[str], float | None], store: str
) -> None:
    """Refuse ``plan`` when one of its dot nearest-neighbour branches searches a vector
    column of ``table`` whose products with its query vector a store summing them in Float32
    can overflow (:func:`dot_products_fit`).

    Args:
        plan: the plan, checked against ``table`` (one of its tables).
        table: the table.
        largest: the largest norm of a column of ``table`` (:func:`largest_norm`), as its
            record keeps it or its rows read now give it; ``None`` for no vector column
            (other checks name it).
        store: the store and why it overflows, for the message.

    Raises:
        PlanError: naming the query vector, the column, the bound and the store.
    """
    from hotdata_retrieval.errors import PlanError

    for branch in plan.branches:
        if not (
            isinstance(branch, NearestNeighborSearch)
            and branch.metric is DistanceMetric.DOT
            and table in branch.table.members
        ):
            continue
        norm = largest(branch.column)
        if norm is None or dot_products_fit(norm, branch.query_vector):
            continue
        query = float(float32_squared_norms([list(branch.query_vector)])[0]) ** 0.5
        raise PlanError(
            f"query_vector (norm {query:.6g}) times the largest norm of vector column "
            f"'{branch.column}' of table '{table}' ({norm:.6g}) is past {DOT_PRODUCTS_BOUND:.6g} "
            f"(half of Float32's largest number): {store}, so a dot product of it can overflow "
            "(inf - inf is NaN, a partial sum past Float32 is infinite) and rank a row wrong; "
            "scale the query vector down",
            field="query_vector",
            value=branch.query_vector,
        )
