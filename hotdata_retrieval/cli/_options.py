"""Options that several ``hdq`` commands share: one definition, one parser, one help text.

``hdq explain`` and ``hdq search`` take the same fusion options (:func:`fusion_options`:
``--fusion``, ``--weights``, ``--rank-constant``, ``--alpha``, ``--depth``, ``--min-score``,
``--fusion-file``), parsed here (:func:`fusion_settings`) and validated by the plan itself
(the fusion method's class, :func:`~hotdata_retrieval.plan.search.make_fusion`), so the two
commands accept and refuse exactly the same values. They also share
:func:`full_vectors_option`, which says how the SQL they show writes query vectors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from hotdata_retrieval.cli._input import describe, read_input
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    DEFAULT_FUSION_METHOD,
    DEFAULT_RANK_CONSTANT,
    fusion_methods,
)

F = TypeVar("F", bound=Callable[..., Any])

FUSION_OPTION_NAMES = (
    "fusion",
    "weights",
    "rank_constant",
    "alpha",
    "depth",
    "min_score",
    "fusion_file",
)
"""The parameter names :func:`fusion_options` adds, in order."""

FUSION_FLAGS = {
    "fusion": "--fusion",
    "method": "--fusion",
    "weights": "--weights",
    "weight": "--weights",
    "rank_constant": "--rank-constant",
    "alpha": "--alpha",
    "depth": "--depth",
    "min_score": "--min-score",
    "fusion_file": "--fusion-file",
}
"""A fusion option's parameter (or plan field) name → its flag."""

_FRAGMENT_KEYS = ("fusion", "tuning")

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


def parse_names(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """Click callback: a comma-separated list of column names (``--columns id,title``) as a
    tuple, each stripped of blanks, or ``None``.

    Raises:
        click.BadParameter: a name is empty (``id,,title``, a trailing comma): exit 2,
            naming the option and the value.
    """
    if value is None:
        return None
    names = tuple(item.strip() for item in value.split(","))
    if not all(names):
        raise click.BadParameter(
            f"{value!r} holds an empty column name; give names separated by commas, such as "
            "id,title",
            ctx=ctx,
            param=param,
        )
    return names


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


def _parse_method(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    method = value.strip().lower().replace("-", "_")
    if method not in fusion_methods():
        known = ", ".join(name.replace("_", "-") for name in fusion_methods())
        raise click.BadParameter(
            f"{value!r} is not a fusion method; one of {known}", ctx=ctx, param=param
        )
    return method


_FUSION_OPTIONS = (
    click.option(
        "--fusion",
        metavar="METHOD",
        callback=_parse_method,
        help="Hybrid: how the branches are fused: rrf (reciprocal rank fusion), min-max "
        "(min-max normalized convex combination) or dbsf (distribution-based score fusion); "
        "docs/fusion.md.  [default: rrf]",
    ),
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
        "--alpha",
        metavar="NUMBER",
        callback=parse_number,
        help="Hybrid, min-max and dbsf: the vector branch's weight in [0, 1]; the text branch "
        "weighs 1 - alpha. Instead of --weights.",
    ),
    click.option(
        "--depth",
        type=int,
        help="Hybrid: candidates per branch, at least limit + offset.  "
        f"[default: {DEFAULT_DEPTH}, the same for every page]",
    ),
    click.option(
        "--min-score",
        metavar="NUMBER",
        callback=parse_number,
        help="Hybrid: drop fused rows scoring below it, before the page.  [default: none]",
    ),
    click.option(
        "--fusion-file",
        metavar="FILE",
        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
        help='Hybrid: read the fusion from a plan fragment, {"fusion": {"method": ..., ...}} '
        "(what hdq tune writes; '-' for stdin), instead of the options above.",
    ),
)


def fusion_options(command: F) -> F:
    """Add the fusion options to a click command.

    The values reach the command as ``fusion`` (a registered method name, ``-`` read as
    ``_``), ``weights`` (a tuple of numbers), ``rank_constant``, ``alpha`` and ``min_score``
    (numbers), ``depth`` (an int) and ``fusion_file`` (a path), each ``None`` when not given;
    :func:`fusion_settings` turns them into a method and its options, which the method's class
    validates (a :class:`~hotdata_retrieval.errors.PlanError` naming the bad value).
    """
    for option in reversed(_FUSION_OPTIONS):
        command = option(command)
    return command


def read_fusion_file(path: Path) -> dict[str, Any]:
    """The fusion object of a plan fragment file: ``{"fusion": {"method": ..., <option>:
    <value>, ...}}``, optionally with a ``"tuning"`` object (how ``hdq tune`` chose it, not
    read). A missing ``"method"`` means ``rrf``, as in plan documents.

    ``path`` ``-`` reads standard input.

    Raises:
        click.BadParameter: the file cannot be read.
        CommandError: it is not UTF-8 text.
        PlanError: it is not JSON, or not such an object (naming the file and what is wrong).
    """
    name = describe("--fusion-file", path)
    text = read_input(path, "--fusion-file")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanError(f"{name} is not valid JSON: {error}", field="fusion_file") from None
    except RecursionError:
        raise PlanError(f"{name} is nested too deeply to read", field="fusion_file") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("fusion"), Mapping):
        raise PlanError(
            f'{name} must hold a JSON object with a "fusion" object, '
            'such as {"fusion": {"method": "min_max", "alpha": 0.6}}',
            field="fusion_file",
        )
    unknown = sorted(set(document) - set(_FRAGMENT_KEYS))
    if unknown:
        raise PlanError(
            f"{name}: unknown key {unknown[0]!r}; expected {', '.join(_FRAGMENT_KEYS)}",
            field="fusion_file",
            value=unknown[0],
        )
    return dict(document["fusion"])


def fusion_settings(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The fusion method and its options from a command's :func:`fusion_options` values:
    from ``--fusion-file``, or from the flags (``--fusion`` default ``rrf``).

    Raises:
        click.UsageError: ``--fusion-file`` with another fusion flag.
        PlanError: as :func:`read_fusion_file`; an unknown method in the file.
    """
    path = params.get("fusion_file")
    if path is None:
        options = {
            name: params.get(name)
            for name in ("weights", "rank_constant", "alpha", "depth", "min_score")
        }
        method = params.get("fusion") or DEFAULT_FUSION_METHOD
        return method, {name: value for name, value in options.items() if value is not None}
    given = [
        FUSION_FLAGS[name]
        for name in FUSION_OPTION_NAMES
        if name != "fusion_file" and params.get(name) is not None
    ]
    if given:
        raise click.UsageError(
            f"--fusion-file cannot be combined with {', '.join(given)}: the file holds the "
            "whole fusion"
        )
    fusion = read_fusion_file(path)
    method = fusion.pop("method", None) or DEFAULT_FUSION_METHOD
    if not isinstance(method, str) or method not in fusion_methods():
        known = ", ".join(repr(name) for name in fusion_methods())
        raise PlanError(
            f"{describe('--fusion-file', path)}: the fusion's method must be one of {known}, got "
            f"{method!r}",
            field="fusion_file",
            value=method,
        )
    if isinstance(fusion.get("weights"), list):
        fusion["weights"] = tuple(fusion["weights"])
    return method, fusion


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
