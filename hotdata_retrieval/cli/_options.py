"""Options that several ``hdq`` commands share: one definition, one parser, one help text.

``hdq explain`` and ``hdq search`` take the same fusion options (:func:`fusion_options`:
``--weights``, ``--rank-constant``, ``--depth``), parsed here and validated by the plan
itself (:class:`~hotdata_retrieval.plan.search.ReciprocalRankFusion`), so the two commands
accept and refuse exactly the same values. They also share :func:`full_vectors_option`, which
says how the SQL they show writes query vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from hotdata_retrieval.plan.search import DEFAULT_RANK_CONSTANT

__all__ = [
    "FUSION_OPTION_NAMES",
    "VECTORS_ABBREVIATED_NOTE",
    "full_vectors_option",
    "fusion_options",
    "parse_number",
    "parse_numbers",
]

F = TypeVar("F", bound=Callable[..., Any])

FUSION_OPTION_NAMES = ("weights", "rank_constant", "depth")
"""The parameter names :func:`fusion_options` adds, in order."""

_INTEGER = re.compile(r"[+-]?[0-9]+")


def _number(text: str) -> int | float:
    """``"2"`` → 2, ``"0.5"`` → 0.5 (so integers render as written). Raises ValueError."""
    text = text.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    return float(text)


def parse_number(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """Click callback: one number (an int when written as one), or ``None`` when not given.

    Raises:
        click.BadParameter: ``value`` is not a number (exit 2, naming the option).
    """
    if value is None:
        return None
    try:
        return _number(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number", ctx=ctx, param=param) from None


def parse_numbers(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """Click callback: a comma-separated list of numbers as a tuple, or ``None``.

    Raises:
        click.BadParameter: an item is not a number (exit 2, naming the option).
    """
    if value is None:
        return None
    try:
        return tuple(_number(item) for item in value.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a comma-separated list of numbers", ctx=ctx, param=param
        ) from None


_FUSION_OPTIONS = (
    click.option(
        "--weights",
        metavar="W,W,...",
        callback=parse_numbers,
        help="Hybrid: one fusion weight per branch, text first, e.g. 1,0.5.  [default: 1,1]",
    ),
    click.option(
        "--rank-constant",
        metavar="NUMBER",
        callback=parse_number,
        help=f"Hybrid: RRF's rank constant k.  [default: {DEFAULT_RANK_CONSTANT}]",
    ),
    click.option(
        "--depth",
        type=int,
        help="Hybrid: candidates per branch, at least limit + offset.  "
        "[default: 100, the same for every page]",
    ),
)


def fusion_options(command: F) -> F:
    """Add ``--weights``, ``--rank-constant`` and ``--depth`` to a click command.

    The values reach the command as ``weights`` (a tuple of numbers), ``rank_constant`` (a
    number) and ``depth`` (an int), each ``None`` when not given; the plan's
    :class:`~hotdata_retrieval.plan.search.ReciprocalRankFusion` validates them (a
    :class:`~hotdata_retrieval.errors.PlanError` naming the bad value).
    """
    for option in reversed(_FUSION_OPTIONS):
        command = option(command)
    return command


full_vectors_option = click.option(
    "--full-vectors/--short-vectors",
    "full_vectors",
    default=None,
    help="How the SQL shown writes each query vector: whole, or its first components, its "
    "dimension and a hash (not runnable).  [default: short on a terminal; whole into a file, "
    "a pipe or JSON]",
)
"""``--full-vectors/--short-vectors``: the command receives ``full_vectors`` (``None`` when
neither is given: whole unless the SQL goes to a terminal)."""

VECTORS_ABBREVIATED_NOTE = (
    "-- query vectors shortened (first components, dimension, sha256 of the exact literal): "
    "not runnable SQL; --full-vectors prints the exact statement"
)
"""The line printed above SQL whose query vectors :func:`~hotdata_retrieval.compile.render.
to_display_sql` shortened."""
