"""sqlglot nodes the compiler adds: an opaque query-vector literal and a value slot.

A 384-value ``ARRAY[...]`` held as 384 sqlglot literal nodes costs 10-15 ms to parse and
3-5 ms to render with sqlglot 30.30 (``docs/benchmarks.md``), so the query vector is ONE node
whose text is produced once. A :class:`ValueSlot` stands for a value in a cached
statement template; the renderer fills it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp

__all__ = ["VectorLiteral", "ValueSlot", "SLOT_DELIMITER"]

SLOT_DELIMITER = "\x00"
"""Brackets a slot's number in a rendered template. Plans reject NUL in every text value and
identifier, so the delimiter can never come from the caller."""


class VectorLiteral(exp.Expression):
    """A query vector whose SQL text was rendered once, e.g. ``ARRAY[0.25, -1.5]``.

    ``this`` holds the finished text; generators emit it verbatim.
    """

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class ValueSlot(exp.Expression):
    """Stands for bound value number ``this`` in a statement template."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


def vector_literal_sql(generator: Any, expression: VectorLiteral) -> str:
    """Generator transform: emit the vector's finished text."""
    return str(expression.this)


def value_slot_sql(generator: Any, expression: ValueSlot) -> str:
    """Generator transform: emit ``NUL <number> NUL`` for the renderer to split on."""
    return f"{SLOT_DELIMITER}{expression.this}{SLOT_DELIMITER}"
