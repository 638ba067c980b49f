"""The parity suite's fixture corpus: small, generated from a fixed seed, hostile on purpose.

``docs`` has 60 rows: a key, text from a small vocabulary (so text searches match many rows
and tie), 6-dimensional float32 vectors (rows 11, 12 and 13 repeat row 5's vector, so their
distances tie; rows 20 and 21 have none), and filter columns holding NULLs, a string with a
quote, booleans and two columns named by SQL keywords (``order``, ``group``). ``empty`` has
the same columns and no row.

The NumPy references here are independent of every engine: brute-force distances in float64
from the stored float32 vectors, and SQL's three-valued truth of a filter on a Python row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateVisitor,
)

ROWS = 60
DIMENSIONS = 6
TIED = (5, 11, 12, 13)
"""Rows with one vector between them."""
WITHOUT_VECTOR = (20, 21)
VOCABULARY = [
    "error", "upgrade", "login", "billing", "crash", "timeout", "disk", "memory", "network",
    "cache", "index", "query", "vector", "token", "release", "deploy",
]  # fmt: skip
LANGUAGES = ["en", "fr", "de", None, "it's"]


def _rows() -> dict[str, list[Any]]:
    generator = np.random.default_rng(20240614)
    keys = list(range(1, ROWS + 1))
    bodies = [
        " ".join(generator.choice(VOCABULARY, size=int(generator.integers(3, 9)))) for _ in keys
    ]
    matrix = generator.standard_normal((ROWS, DIMENSIONS)).astype(np.float32)
    vectors: list[list[float] | None] = [row.tolist() for row in matrix]
    for key in TIED[1:]:
        vectors[key - 1] = vectors[TIED[0] - 1]
    for key in WITHOUT_VECTOR:
        vectors[key - 1] = None
    years = [None if key % 9 == 0 else 2015 + int(generator.integers(0, 10)) for key in keys]
    return {
        "id": keys,
        "body": bodies,
        "lang": [LANGUAGES[key % len(LANGUAGES)] for key in keys],
        "year": years,
        "active": [None if key % 7 == 0 else bool(key % 2) for key in keys],
        "order": [key % 11 for key in keys],
        "group": [f"g{key % 4}" for key in keys],
        "embedding": vectors,
    }


COLUMNS = _rows()


def corpus_table() -> pa.Table:
    """``docs`` as an Arrow table (vectors as ``list<float32>``)."""
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("body", pa.string()),
            ("lang", pa.string()),
            ("year", pa.int64()),
            ("active", pa.bool_()),
            ("order", pa.int64()),
            ("group", pa.string()),
            ("embedding", pa.list_(pa.float32())),
        ]
    )
    return pa.table(COLUMNS, schema=schema)


def empty_table() -> pa.Table:
    """``empty``: the corpus's columns, no row; its ``embedding`` a fixed-size list of
    :data:`DIMENSIONS`, the length every engine declares a vector column with and no row
    gives (a variable list column of no vector is refused at load, on every engine)."""
    empty = corpus_table().slice(0, 0)
    fixed = pa.array([], pa.list_(pa.float32(), DIMENSIONS))
    return empty.set_column(empty.schema.get_field_index("embedding"), "embedding", fixed)


def row(key: int) -> dict[str, Any]:
    """The corpus row of ``key``."""
    return {name: values[key - 1] for name, values in COLUMNS.items()}


def vector(key: int) -> list[float] | None:
    """Row ``key``'s stored vector (float32 values as Python floats)."""
    value: list[float] | None = COLUMNS["embedding"][key - 1]
    return value


def reference_distances(query: Sequence[float], metric: str) -> dict[int, float]:
    """Brute force, float64 from the stored float32 vectors: key → distance (lower is
    nearer) for every row with a vector. ``cosine`` is ``1 - cos`` (1.0 against a zero
    vector), ``l2`` the squared Euclidean distance, ``dot`` the negative inner product."""
    q = np.asarray(query, dtype=np.float64)
    distances = {}
    for key in COLUMNS["id"]:
        stored = vector(key)
        if stored is None:
            continue
        v = np.asarray(stored, dtype=np.float64)
        if metric == "cosine":
            norms = float(np.linalg.norm(v) * np.linalg.norm(q))
            distances[key] = 1.0 if norms == 0 else float(1.0 - v @ q / norms)
        elif metric == "l2":
            distances[key] = float(np.sum((v - q) ** 2))
        else:
            distances[key] = float(-(v @ q))
    return distances


class _Truth(PredicateVisitor["bool | None"]):
    """SQL's three-valued truth of a predicate on one Python row (``None``: unknown)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def visit_comparison(self, node: Comparison) -> bool | None:
        value = self.values[node.column]
        if value is None:
            return None
        operator = node.operator.value
        other = node.value
        return {
            "=": value == other,
            "!=": value != other,
            "<>": value != other,
            "<": value < other,
            "<=": value <= other,
            ">": value > other,
            ">=": value >= other,
        }[operator]

    def visit_in_list(self, node: InList) -> bool | None:
        if not node.values:
            return node.negated
        value = self.values[node.column]
        if value is None:
            return None
        found = value in node.values
        return not found if node.negated else found

    def visit_is_null(self, node: IsNull) -> bool | None:
        missing = self.values[node.column] is None
        return not missing if node.negated else missing

    def visit_and(self, node: And) -> bool | None:
        results = [self.predicate(operand) for operand in node.operands]
        if any(result is False for result in results):
            return False
        return None if any(result is None for result in results) else True

    def visit_or(self, node: Or) -> bool | None:
        results = [self.predicate(operand) for operand in node.operands]
        if any(result is True for result in results):
            return True
        return None if any(result is None for result in results) else False

    def visit_not(self, node: Not) -> bool | None:
        result = self.predicate(node.operand)
        return None if result is None else not result


def passing(predicate: Predicate) -> set[int]:
    """The keys of the rows ``predicate`` is TRUE for (neither FALSE nor unknown)."""
    return {key for key in COLUMNS["id"] if _Truth(row(key)).predicate(predicate) is True}
