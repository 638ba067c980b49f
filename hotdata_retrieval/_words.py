"""How messages count things: one place for the plural of a counted noun."""

from __future__ import annotations


def counted(count: int, one: str, many: str | None = None) -> str:
    """``count`` and its noun, singular for exactly one: ``1 NULL value``, ``2 NULL values``,
    ``0 rows`` (``many``: the plural when it is not ``one`` + ``s``).

    >>> [counted(1, "NULL value"), counted(2, "NULL value"), counted(0, "branch", "branches")]
    ['1 NULL value', '2 NULL values', '0 branches']
    """
    return f"{count} {one if count == 1 else (many or one + 's')}"
