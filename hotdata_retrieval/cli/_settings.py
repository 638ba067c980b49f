"""The options of :class:`~hotdata_retrieval.adapters.settings.SearchSettings` that the
serving commands share: ``hdq mcp`` and ``hdq ddn`` take ``--filter`` (a condition every
search applies, repeatable, joined with AND) and the fusion options of ``hdq search``
(:func:`~hotdata_retrieval.cli._options.fusion_options`: a fused search's default method and
options), read into settings fields by :func:`settings_fields`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from hotdata_retrieval.cli._options import FUSION_OPTION_NAMES, fusion_options, fusion_settings

F = TypeVar("F", bound=Callable[..., Any])

SETTINGS_OPTION_NAMES = ("filters", *FUSION_OPTION_NAMES)
"""The parameter names :func:`settings_options` adds."""

_FILTER_OPTION = click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="SQL",
    help="A condition every search applies, such as \"lang = 'en'\" (repeatable; joined with "
    "AND), beside the filter a call sends.",
)


def settings_options(command: F) -> F:
    """Add ``--filter`` and the fusion options to a click command."""
    return _FILTER_OPTION(fusion_options(command))


def settings_fields(params: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`~hotdata_retrieval.adapters.settings.SearchSettings` fields the options
    give: ``filter`` (the conditions joined with AND, or ``None``) and ``fusion`` (``None``
    when no fusion option is given: reciprocal rank fusion).

    Raises:
        PlanError: a condition or a fusion file that does not read.
        click.UsageError: ``--fusion-file`` with another fusion flag.
    """
    from hotdata_retrieval.compile.filter_text import parse_filter
    from hotdata_retrieval.plan.filters import And
    from hotdata_retrieval.routing import FusionChoice

    predicates = [parse_filter(text) for text in params.get("filters") or ()]
    fields: dict[str, Any] = {
        "filter": None
        if not predicates
        else predicates[0]
        if len(predicates) == 1
        else And(operands=predicates),
        "fusion": None,
    }
    if any(params.get(name) is not None for name in FUSION_OPTION_NAMES):
        method, options = fusion_settings(params)
        fields["fusion"] = FusionChoice(method=method, options=options)
    return fields
