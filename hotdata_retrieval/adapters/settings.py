"""What every door of a table's search is set up with, and the options each search call takes.

:class:`SearchSettings` is built once and handed to every door: the toolkit
(:class:`~hotdata_retrieval.adapters.toolkit.SearchToolkit`), the LangChain tools and
retriever, the MCP server (``create_server``, ``hdq mcp``) and the DDN connector
(``SearchDocuments``, ``create_app``). Each door still takes the old keyword arguments and
builds the settings from them (:meth:`SearchSettings.of`).

:data:`SEARCH_OPTIONS` is the one table of what a search call may carry beside its query
(``k``, ``filter``, ``fusion``): each row names the argument, its kind, its JSON Schema and
description (generated from the registries: the fusion methods of
:func:`~hotdata_retrieval.plan.search.register_fusion`, the filter operators of
:func:`~hotdata_retrieval.plan.filters.register_predicate`), when it is offered and how its
value becomes a field of the :class:`~hotdata_retrieval.routing.SearchRequest`. The LangChain
and MCP argument models and the DDN function's arguments are derived from the rows, so a new
option is one row here (and, when a door should carry a default for it, one field of
:class:`SearchSettings`); ``docs/architecture.md``, "Where a change goes".
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Container, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.adapters.bounded import DEFAULT_MAX_BYTES
from hotdata_retrieval.adapters.envelope import ToolWarning
from hotdata_retrieval.engines.limits import InputLimitError, InputLimits, SqlLimits
from hotdata_retrieval.errors import PlanError, ToolError
from hotdata_retrieval.indexes import IndexCatalog
from hotdata_retrieval.plan._cursor import MAX_CURSOR_CHARACTERS, read_cursor
from hotdata_retrieval.plan.document import fusion_choice_json_schema
from hotdata_retrieval.plan.filter_objects import filter_from_object, filter_object_schema
from hotdata_retrieval.plan.filters import And, Predicate
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    CURSORLESS_ADVICE,
    DEFAULT_DEPTH,
    DEFAULT_FUSION_METHOD,
    FACET_VALUES,
    MAX_FACETS,
    MAX_GROUP_SIZE,
    fusion_class,
    fusion_methods,
    fusion_options,
    read_facets,
)
from hotdata_retrieval.plan.steps import MAX_STEP_CANDIDATES, steps_from_options
from hotdata_retrieval.plan.values import INT64_MAX, check_column_names, check_query_text
from hotdata_retrieval.routing import MAX_QUERIES, FusionChoice

if TYPE_CHECKING:
    from hotdata_retrieval.adapters.toolkit import SearchRoute

DEFAULT_K = 5
"""Rows a search tool returns when the model gives no ``k`` (unless the ceiling is lower)."""

DEFAULT_MAX_ROWS = 50
"""The ceiling on rows any tool returns: a larger ``k`` is clamped to it, longer SQL results
are cut to it. Model-chosen row counts make aggregate answers wrong and flood the context."""

DEFAULT_NAME_PREFIX = "hotdata_"
"""The prefix of the tool names: ``hotdata_search_text``, ..."""

TOOL_ROLES = ("search_text", "search_semantic", "execute_sql")
"""The tools a door offers, by the name they carry after the prefix; the keys of
:attr:`SearchSettings.descriptions`."""

MAX_DESCRIPTION_CHARACTERS = 2000
"""The longest description a caller may give a tool (:attr:`SearchSettings.descriptions`)."""

_NAME_PREFIX = re.compile(r"[A-Za-z0-9_.-]{0,64}")
"""A tool-name prefix: MCP tool names are 1-128 characters of letters, digits, ``_``, ``-``
and ``.`` (MCP specification 2025-11-25, "Tools", tool names)."""


def _count(label: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value is None and label == "k":
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ToolError(f"{label} must be a whole number of at least 1, got {value!r}")
        if value > INT64_MAX:  # a search's depth and limit are signed 64-bit integers
            raise ToolError(f"{label} must be at most {INT64_MAX:,}, got {value!r}")

    return check


def _names_of(label: str) -> Callable[[Any], tuple[str, ...] | None]:
    """A converter of ``label`` by the one rule for names of columns
    (:func:`~hotdata_retrieval.plan.values.check_column_names`), refusing with a
    :class:`ToolError` as every other setting does."""

    def convert(value: Any) -> tuple[str, ...] | None:
        try:
            return check_column_names(value, label=label)
        except PlanError as error:
            raise ToolError(str(error)) from None

    return convert


_column_names = _names_of("columns")
_filter_names = _names_of("filter_columns")


def _names(value: Any) -> tuple[str, ...] | None:
    return _column_names(value)


def _filter_columns(value: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_filter_names(value) or ()))


def _optional_text(label: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value is not None and not isinstance(value, str):
            raise ToolError(f"{label} must be a column name (text), got {value!r}")

    return check


def _optional_count(label: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ToolError(f"{label} must be a whole number, got {value!r}")

    return check


def _table(value: Any) -> TableName | str:
    if isinstance(value, TableName):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"table must be a table name (1-3 parts), got {value!r}")
    return value


def _fixed_filter(value: Any) -> Predicate | None:
    if value is None:
        return None
    from hotdata_retrieval.routing import read_filter

    try:
        return read_filter(value)
    except PlanError as error:
        raise ToolError(f"filter: {error}") from None


def _fusion(value: Any) -> FusionChoice | None:
    try:
        return FusionChoice.of(value)
    except PlanError as error:
        raise ToolError(f"fusion: {error}") from None


def _descriptions(value: Any) -> Mapping[str, str]:
    if value is not None and not isinstance(value, Mapping):
        raise ToolError(f"descriptions must map tool roles to text, got {value!r}")
    given = dict(value or {})
    for role, text in given.items():
        if role not in TOOL_ROLES:
            raise ToolError(
                f"descriptions has no tool {role!r}; its keys are {', '.join(TOOL_ROLES)}"
            )
        if not isinstance(text, str) or not text.strip():
            raise ToolError(f"descriptions[{role!r}] must be non-empty text, got {text!r}")
        if len(text) > MAX_DESCRIPTION_CHARACTERS:
            raise ToolError(
                f"descriptions[{role!r}] has {len(text):,} characters; at most "
                f"{MAX_DESCRIPTION_CHARACTERS:,}"
            )
    return given


def _group_column(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return normalize_identifier(value, label="group_by")
    except PlanError as error:
        raise ToolError(str(error)) from None


def _check_group_size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_GROUP_SIZE:
        raise ToolError(
            f"group_size must be a whole number from 1 to {MAX_GROUP_SIZE}, got {value!r}"
        )
    return value


def _instance_of(kind: type, label: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value is not None and not isinstance(value, kind):
            article = "an" if kind.__name__[0] in "AEIOU" else "a"
            raise ToolError(f"{label} must be {article} {kind.__name__}, got {value!r}")

    return check


def _sql_limits(value: Any) -> Any:
    return SqlLimits() if value is None else value


def _input_limits(value: Any) -> Any:
    return InputLimits() if value is None else value


def _name_prefix(_instance: Any, _attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or _NAME_PREFIX.fullmatch(value) is None:
        raise ToolError(
            f"name_prefix must be up to 64 letters, digits, '_', '-' or '.', got {value!r}"
        )


@attrs.frozen(kw_only=True)
class SearchSettings:
    """How one table's search is offered, at every door (frozen, checked when built).

    Attributes:
        table: the table searched (1-3 part name).
        k: rows a search returns when the call gives none (default :data:`DEFAULT_K`, or
            ``max_rows`` when smaller; :attr:`default_k`). DDN's ``top_k`` default.
        max_rows: the ceiling on rows any tool returns (default 50); an agent's larger ``k``
            is reduced to it (DDN refuses a larger ``top_k``), longer SQL results cut to it.
        columns: the columns a search row carries, a list of names (default: the key and
            the searched text); a single text is refused
            (:func:`~hotdata_retrieval.plan.values.check_column_names`).
        text_column: the text column searched (default: the first searchable one).
        vector_column: the vector column a search by meaning uses (default: the route's).
        key_column: the table's unique key (default: what the engine reports).
        filter_columns: DDN's typed equality arguments, one per column: a list of names,
            read as ``columns`` is.
        filter: applied to every search, with the call's own filter (both must hold): a
            predicate, a filter object or filter text (a tenant's rows, say).
        fusion: how a fused search combines its rankings when the call does not say: a
            method's name or ``{"method": ..., <option>: ...}`` (default: reciprocal rank
            fusion).
        embedder: embeds queries on this side (default: ``engine.embedder_for(table)``).
        name_prefix: prefix of the tool names (default ``hotdata_``).
        read_only: the SQL tool refuses anything but queries (default ``True``).
        semantic: offer the semantic search tool when it adds something (default ``True``).
        sql: offer the SQL tool (default ``True``; never on an engine that refuses agent SQL).
        sql_limits: the SQL tool's time and memory limits (default
            :class:`~hotdata_retrieval.engines.limits.SqlLimits`).
        input_limits: the longest query, filter and SQL a call may carry (default
            :class:`~hotdata_retrieval.engines.limits.InputLimits`).
        max_bytes: the ceiling on a SQL reply's rows, as JSON text (default 256 KiB).
        catalog: the index catalog the SQL tool's linter reads (default: the engine's).
        explain_scores: a fused search's rows also say what their score is made of (each
            branch's rank, raw score, normalized value and contribution: an
            ``explanation``), unless the call says otherwise (default ``False``).
        descriptions: tool descriptions to use instead of the generated ones, by tool
            (:data:`TOOL_ROLES`; DDN's function takes ``search_text``'s), each at most
            :data:`MAX_DESCRIPTION_CHARACTERS`; the stored-data notice is still appended.
        diversity: maximal marginal relevance's lambda (0 to 1) a search by meaning uses
            when the call gives none (the plan's
            :class:`~hotdata_retrieval.plan.steps.Diversity` step); ``None``: none.
        candidates: rows that diversity chooses among when the call gives no count
            (default: 4 times the rows asked for, at most 1,000).
        group_by: a column grouping the rows when the call names none (a chunk's parent
            document): each search returns ``k`` groups, each with its best ``group_size``
            rows (:class:`~hotdata_retrieval.plan.search.SearchPlan`'s ``group_by``).
        group_size: rows kept per group when the call gives none (default 1).
        highlight: each row also carries ``highlights``, the matched words' character
            offsets and snippets of its text columns, unless the call says otherwise
            (default ``False``; :class:`~hotdata_retrieval.plan.steps.Highlight`).
        fragment_size: characters per snippet when rows are highlighted (default 150, at
            most 2,000).
        fragments: snippets per row and column when rows are highlighted (default 1, at
            most 20).
        reranker: re-scores the first ``top_n`` rows of every search against its query
            (:class:`~hotdata_retrieval.embed.reranking.Reranker`, a registered reranker's
            name or an ONNX cross-encoder's directory); the application chooses it, never
            the call (default ``None``: no reranking).
        top_n: rows the reranker scores (default: 4 times the rows asked for, at most 1,000).

    Raises:
        ToolError: a bad ``k``, ``max_rows``, ``max_bytes``, limit, ``name_prefix``,
            ``columns``, ``filter_columns``, ``filter``, ``fusion`` or description, or
            ``k`` above ``max_rows``.
    """

    table: TableName | str = attrs.field(converter=_table)
    k: int | None = attrs.field(default=None, validator=_count("k"))
    max_rows: int = attrs.field(default=DEFAULT_MAX_ROWS, validator=_count("max_rows"))
    columns: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    text_column: str | None = attrs.field(default=None, validator=_optional_text("text_column"))
    vector_column: str | None = attrs.field(default=None, validator=_optional_text("vector_column"))
    key_column: str | None = attrs.field(default=None, validator=_optional_text("key_column"))
    filter_columns: tuple[str, ...] = attrs.field(default=(), converter=_filter_columns)
    filter: Predicate | None = attrs.field(default=None, converter=_fixed_filter)
    fusion: FusionChoice | None = attrs.field(default=None, converter=_fusion)
    embedder: Any = None
    name_prefix: str = attrs.field(default=DEFAULT_NAME_PREFIX, validator=_name_prefix)
    read_only: bool = attrs.field(default=True, validator=_instance_of(bool, "read_only"))
    semantic: bool = attrs.field(default=True, validator=_instance_of(bool, "semantic"))
    sql: bool = attrs.field(default=True, validator=_instance_of(bool, "sql"))
    sql_limits: SqlLimits = attrs.field(
        factory=SqlLimits,
        converter=_sql_limits,
        validator=_instance_of(SqlLimits, "sql_limits"),
    )
    input_limits: InputLimits = attrs.field(
        factory=InputLimits,
        converter=_input_limits,
        validator=_instance_of(InputLimits, "input_limits"),
    )
    max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=_count("max_bytes"))
    catalog: IndexCatalog | None = attrs.field(
        default=None, validator=_instance_of(IndexCatalog, "catalog")
    )
    descriptions: Mapping[str, str] = attrs.field(factory=dict, converter=_descriptions)
    diversity: float | None = None
    candidates: int | None = attrs.field(default=None, validator=_optional_count("candidates"))
    explain_scores: bool = attrs.field(
        default=False, validator=_instance_of(bool, "explain_scores")
    )
    group_by: str | None = attrs.field(default=None, converter=_group_column)
    group_size: int | None = attrs.field(default=None, validator=_optional_count("group_size"))
    highlight: bool = attrs.field(default=False, validator=_instance_of(bool, "highlight"))
    fragment_size: int | None = attrs.field(
        default=None, validator=_optional_count("fragment_size")
    )
    fragments: int | None = attrs.field(default=None, validator=_optional_count("fragments"))
    reranker: Any = None
    top_n: int | None = attrs.field(default=None, validator=_optional_count("top_n"))

    def __attrs_post_init__(self) -> None:
        if self.k is not None and self.k > self.max_rows:
            raise ToolError(f"k ({self.k}) must not exceed max_rows ({self.max_rows})")
        if self.group_size is not None:
            if self.group_by is None:
                raise ToolError("group_size is the rows kept per group; give group_by too")
            _check_group_size(self.group_size)
        try:
            steps = steps_from_options(
                diversity=self.diversity,
                candidates=self.candidates,
                rerank=self.reranker,
                top_n=self.top_n,
                query="query" if self.reranker is not None or self.highlight else None,
                highlight=self.highlight or None,
                fragment_size=self.fragment_size if self.highlight else None,
                fragments=self.fragments if self.highlight else None,
            )
        except PlanError as error:
            raise ToolError(str(error)) from None
        if self.group_by is not None and steps:
            chosen = [
                name
                for name, value in (
                    ("diversity", self.diversity),
                    ("reranker", self.reranker),
                    ("highlight", self.highlight or None),
                )
                if value is not None
            ]
            raise ToolError(
                f"group_by groups every search, and {' and '.join(chosen)} run(s) on every "
                "search's rows, but a grouped search's rows are groups: no search could be "
                "answered; set group_by or those, not both"
            )

    @classmethod
    def of(cls, settings: SearchSettings | None = None, /, **options: Any) -> SearchSettings:
        """``settings`` with ``options`` in place of its fields, or settings built from
        ``options`` alone: how every door reads its arguments.

        Raises:
            ToolError: a bad value (as the class says), or ``settings`` of another type.
            TypeError: an option that is no field of the settings.
        """
        if settings is None:
            return cls(**options)
        if not isinstance(settings, SearchSettings):
            raise ToolError(f"settings must be a SearchSettings, got {settings!r}")
        return attrs.evolve(settings, **options) if options else settings

    @property
    def default_k(self) -> int:
        """Rows a search returns when the call gives no ``k``."""
        return min(DEFAULT_K, self.max_rows) if self.k is None else self.k

    def tool_name(self, role: str) -> str:
        """The name of the tool ``role`` (:data:`TOOL_ROLES`): ``<prefix><role>``."""
        return f"{self.name_prefix}{role}"


# -- the options of a search call ------------------------------------------------------------


class OptionKind(enum.Enum):
    """What kind of value a search option takes: each door types its argument from it."""

    TEXT = "text"
    """Non-empty text."""
    COUNT = "count"
    """A whole number of at least 1."""
    FLAG = "flag"
    """``true`` or ``false``."""
    JSON = "json"
    """Any JSON value the option reads itself (an object, text, a list)."""


@attrs.define
class SearchCall:
    """One call's arguments as they are read: the request fields they give, and what the
    answer should say about them.

    Attributes:
        request: keyword arguments of :class:`~hotdata_retrieval.routing.SearchRequest`.
        warnings: warnings for the envelope (``k_clamped``, ...).
        metadata: more envelope metadata (``k_requested``).
        filters: predicates that must all hold (the settings' and the call's).
    """

    request: dict[str, Any] = attrs.Factory(dict)
    warnings: list[ToolWarning] = attrs.Factory(list)
    metadata: dict[str, Any] = attrs.Factory(dict)
    filters: list[Predicate] = attrs.Factory(list)

    def filter(self) -> Predicate | None:
        """Every filter of the call, as one predicate (``None``: no filter)."""
        if not self.filters:
            return None
        if len(self.filters) == 1:
            return self.filters[0]
        return And(operands=tuple(self.filters))


def _always(_settings: SearchSettings, _route: SearchRoute) -> bool:
    return True


@attrs.frozen(kw_only=True)
class SearchOption:
    """One argument of a search call: a row of :data:`SEARCH_OPTIONS`.

    Attributes:
        name: the argument's name at every door (DDN may rename it: ``k`` is ``top_k``).
        kind: the kind of value (:class:`OptionKind`): each door's type for it.
        schema: ``schema(settings)``: its JSON Schema, with a ``description`` for the model
            (generated from the registries where it lists choices).
        read: ``read(settings, route, value, call)``: checks a given value (never ``None``)
            and records what it asks for in ``call``; raises :class:`ToolError` naming the
            value and the shape to send.
        required: the call must give it (the query).
        offered: ``offered(settings, route)``: whether a tool on ``route`` takes it.
        sentence: ``sentence(settings, route)``: its sentence in the tool's description, or
            ``None``.
        default: ``default(settings, route, call)``: what an absent value asks for, or
            ``None``.
    """

    name: str
    kind: OptionKind
    schema: Callable[[SearchSettings], dict[str, Any]]
    read: Callable[[SearchSettings, SearchRoute, Any, SearchCall], None]
    required: bool = False
    offered: Callable[[SearchSettings, SearchRoute], bool] = _always
    sentence: Callable[[SearchSettings, SearchRoute], str] | None = None
    default: Callable[[SearchSettings, SearchRoute, SearchCall], None] | None = None


# query ---------------------------------------------------------------------------------------


def _query_schema(settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": settings.input_limits.max_query_characters,
        "description": "What to look for, in natural language or keywords.",
    }


def _read_query(
    settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ToolError("query must be non-empty text")
    try:
        settings.input_limits.check_query(value)
        check_query_text(value, label="query")
    except (InputLimitError, PlanError) as error:
        raise ToolError(str(error)) from None
    call.request["query"] = value


# k -------------------------------------------------------------------------------------------


def whole_number(value: Any) -> Any:
    """``value``, with a number without a fraction as an ``int``: JSON Schema's ``integer``
    is any such number, so ``5.0`` is ``5`` (JSON Schema Validation, "integer"). Anything
    else is returned as it is, for a strict integer field to refuse (``"5"``, ``True``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _k_schema(settings: SearchSettings) -> dict[str, Any]:
    most = settings.max_rows
    return {
        "type": "integer",
        "minimum": 1,
        "description": f"How many rows to return, 1 to {most} (default "
        f"{settings.default_k}); a larger value is reduced to {most}.",
    }


def _k_sentence(settings: SearchSettings, _route: SearchRoute) -> str:
    most = settings.max_rows
    return (
        f"`k` is how many rows to return: 1 to {most}, default {settings.default_k}. A larger "
        f"k is reduced to {most} before the search runs, and the result's metadata says so."
    )


def _read_k(settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall) -> None:
    requested = whole_number(value)
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        raise ToolError(f"k must be a whole number of at least 1, got {value!r}")
    most = settings.max_rows
    if requested <= most:
        call.request["limit"] = requested
        return
    shown = requested if requested < 10**18 else "a very large number"
    call.warnings.append(
        ToolWarning(
            code="k_clamped",
            message=(
                f"k={shown} is above this tool's ceiling of {most}, so the {most} best rows "
                "were searched for instead. For counts or totals over every matching row, use "
                f"{settings.tool_name('execute_sql')}."
            ),
        )
    )
    call.metadata["k_requested"] = min(requested, 2**63 - 1)
    call.request["limit"] = most


def _default_k(settings: SearchSettings, _route: SearchRoute, call: SearchCall) -> None:
    call.request["limit"] = settings.default_k


# filter --------------------------------------------------------------------------------------

FILTER_TEXT_EXAMPLE = "rating <= 2 AND lang = 'en'"
"""The filter text the filter argument's description and errors show."""

FILTER_OBJECT_EXAMPLE = '{"lang": "en", "rating": {"$gte": 4}}'
"""The filter object the filter argument's description and errors show."""


def _filter_schema(settings: SearchSettings) -> dict[str, Any]:
    objects = filter_object_schema()  # every operator registered now
    return {
        "anyOf": [
            objects,
            {"type": "string", "maxLength": settings.input_limits.max_filter_characters},
            {"type": "null"},
        ],
        "default": None,
        "description": objects["description"]
        + f' Or filter text, as SQL writes a condition: "{FILTER_TEXT_EXAMPLE}". Only '
        "matching rows are ranked; omit it to search every row.",
    }


def _filter_sentence(_settings: SearchSettings, _route: SearchRoute) -> str:
    return (
        "`filter` keeps only the rows whose columns match before ranking, as a JSON object "
        f'such as {FILTER_OBJECT_EXAMPLE} or as filter text such as "{FILTER_TEXT_EXAMPLE}".'
    )


def _filter_shape() -> str:
    return (
        f"send a JSON object such as {FILTER_OBJECT_EXAMPLE} or filter text such as "
        f'"{FILTER_TEXT_EXAMPLE}"'
    )


def read_agent_filter(value: Any, limits: InputLimits) -> Predicate:
    """A filter an agent sent, as a predicate: a filter object
    (:func:`~hotdata_retrieval.plan.filter_objects.filter_from_object`) or filter text
    (:func:`~hotdata_retrieval.compile.parse_filter`), each within ``limits``.

    Raises:
        ToolError: over the limit, or neither form reads; the message shows the form that
            failed, where, and the shapes to send.
    """
    try:
        limits.check_filter(value)
    except InputLimitError as error:
        raise ToolError(str(error)) from None
    try:
        if isinstance(value, Mapping):
            read = filter_from_object(value)
        elif isinstance(value, str):
            from hotdata_retrieval.compile.filter_text import parse_filter

            read = parse_filter(value)
        else:
            raise ToolError(f"filter must be an object or text, got {value!r}: {_filter_shape()}")
    except PlanError as error:
        form = "filter text" if isinstance(value, str) else "filter object"
        raise ToolError(f"the {form} does not read: {error}; {_filter_shape()}") from None
    if read is None:
        raise ToolError(f"filter {value!r} keeps no condition: {_filter_shape()}, or omit it")
    return read


def _read_filter(
    settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if isinstance(value, Mapping) and not value:
        return  # an empty object is no filter
    call.filters.append(read_agent_filter(value, settings.input_limits))


# fusion --------------------------------------------------------------------------------------

_OPTION_HELP = {
    "weights": "[words, meaning]",
    "alpha": "0 to 1, the weight of the ranking by meaning; words weigh 1 - alpha",
    "min_score": "drop rows whose combined score is lower",
}
"""What a fusion option means, put to a model, where its name alone says too little."""

_HIDDEN_OPTIONS = ("depth", "ranking")
"""Fusion options the description leaves out (the schema still lists them)."""

MAX_AGENT_DEPTH = MAX_STEP_CANDIDATES
"""The most candidates an agent's ``fusion`` may rank per branch (its ``depth``), unless the
settings' ``max_rows`` is more: each branch's statement reads that many rows, so an agent
bounds it as it bounds the rows its steps read (1,000)."""


def max_agent_depth(settings: SearchSettings) -> int:
    """The largest ``depth`` an agent's ``fusion`` may ask for under ``settings``:
    :data:`MAX_AGENT_DEPTH`, or ``max_rows`` when that is more."""
    return max(MAX_AGENT_DEPTH, settings.max_rows)


MAX_LISTED_FUSION_OPTIONS = 8
"""Fusion options the description names at most (the schema lists every one)."""


def _methods_phrase() -> str:
    methods = [
        f'"{method}"' + (" (the default)" if method == DEFAULT_FUSION_METHOD else "")
        for method in fusion_methods()
    ]
    return ", ".join(methods[:-1]) + f" or {methods[-1]}" if len(methods) > 1 else methods[0]


def _options_phrase() -> str:
    """The fusion options, each once, with the methods that take it and what it means."""
    methods = fusion_methods()
    takers: dict[str, list[str]] = {}
    for method in methods:
        for field in fusion_options(fusion_class(method)):
            if field.name not in _HIDDEN_OPTIONS:
                takers.setdefault(field.name, []).append(method)
    parts = []
    for name, taking in list(takers.items())[:MAX_LISTED_FUSION_OPTIONS]:
        which = "every method" if len(taking) == len(methods) else ", ".join(taking)
        meaning = _OPTION_HELP.get(name)
        parts.append(f"{name} ({which}{': ' + meaning if meaning else ''})")
    return ", ".join(parts)


def _undescribed(schema: Any) -> Any:
    """``schema`` without its ``description`` keywords: the plan's own, written for
    developers, in words an agent is not shown."""
    if isinstance(schema, dict):
        return {key: _undescribed(value) for key, value in schema.items() if key != "description"}
    if isinstance(schema, list):
        return [_undescribed(value) for value in schema]
    return schema


def _bounded_depth(schema: Any, most: int) -> Any:
    """``schema`` with each fusion object's ``depth`` integer bounded by ``most``."""
    if isinstance(schema, dict):
        bounded = {key: _bounded_depth(value, most) for key, value in schema.items()}
        if bounded.get("type") == "integer" and "maximum" in bounded:
            bounded["maximum"] = min(bounded["maximum"], most)
        return bounded
    if isinstance(schema, list):
        return [_bounded_depth(value, most) for value in schema]
    return schema


def _fusion_schema(settings: SearchSettings) -> dict[str, Any]:
    choice = _undescribed(fusion_choice_json_schema())  # every method registered now
    choice["anyOf"] = [
        {
            **branch,
            "properties": {
                name: _bounded_depth(value, max_agent_depth(settings)) if name == "depth" else value
                for name, value in branch["properties"].items()
            },
        }
        if isinstance(branch.get("properties"), dict)
        else branch
        for branch in choice["anyOf"]
    ]
    return {
        "anyOf": [*choice["anyOf"], {"type": "null"}],
        "default": None,
        "description": (
            f"How the rankings by words and by meaning are combined: {_methods_phrase()}, or "
            f"an object of the method and its options: {_options_phrase()}."
        ),
    }


def _fusion_sentence(settings: SearchSettings, _route: SearchRoute) -> str:
    default = settings.fusion.method if settings.fusion is not None else DEFAULT_FUSION_METHOD
    return (
        "`fusion` chooses how its two rankings, by words and by meaning, are combined: "
        f'{_methods_phrase().replace(" (the default)", "")} (default "{default}"), or '
        '{"method": ..., <option>: ...} such as {"method": "dbsf", "alpha": 0.7}, which '
        "favours meaning."
    )


def _fuses(_settings: SearchSettings, route: SearchRoute) -> bool:
    return route.fused


def _read_fusion(
    settings: SearchSettings, route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not route.fused:
        raise ToolError(
            "fusion applies only to a search that combines rankings by words and by meaning; "
            f"this search of table {settings.table} ranks one way"
        )
    try:
        choice = FusionChoice.of(value)
    except PlanError as error:
        raise ToolError(f"fusion: {error}") from None
    depth = None if choice is None else choice.options.get("depth")
    most = max_agent_depth(settings)
    if isinstance(depth, int) and not isinstance(depth, bool) and depth > most:
        raise ToolError(f"fusion: depth must be at most {most:,} here, got {depth!r:.40}")
    call.request["fusion"] = _deep_enough(settings, choice)


def _default_fusion(settings: SearchSettings, route: SearchRoute, call: SearchCall) -> None:
    if route.fused:
        choice = _deep_enough(settings, settings.fusion)
        if choice is not None:
            call.request["fusion"] = choice


def _deep_enough(settings: SearchSettings, choice: FusionChoice | None) -> FusionChoice | None:
    """``choice`` with the depth to serve any ``k`` up to ``max_rows``: when ``max_rows``
    is above :data:`~hotdata_retrieval.plan.search.DEFAULT_DEPTH` and the choice names no
    depth, the depth is ``max_rows``, the same for every call, so that pages of one search
    stay slices of one ranking whatever ``k`` each asks for."""
    if settings.max_rows <= DEFAULT_DEPTH:
        return choice
    return with_depth(choice, settings.max_rows)


def with_depth(choice: FusionChoice | None, depth: int) -> FusionChoice | None:
    """``choice`` (``None``: the default fusion) ranking ``depth`` candidates per branch when
    it names no depth and its method takes one; else ``choice`` itself (the same object)."""
    chosen = choice or FusionChoice()
    if chosen.options.get("depth") is not None:
        return choice
    if "depth" not in [field.name for field in fusion_options(fusion_class(chosen.method))]:
        return choice
    return FusionChoice(method=chosen.method, options={**chosen.options, "depth": depth})


# diversity -----------------------------------------------------------------------------------


def _diversity_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}],
        "default": None,
        "description": "Make the rows differ from each other: 0 to 1, where 1 ranks by "
        "relevance alone and lower values prefer rows unlike those already chosen (maximal "
        "marginal relevance; 0.5 balances both). Omit it for the plain ranking.",
    }


def _candidates_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_STEP_CANDIDATES,
        "description": "With diversity: how many of the best rows it chooses among, at least "
        f"k, at most {MAX_STEP_CANDIDATES} (default 4 times k).",
    }


def _diversity_sentence(_settings: SearchSettings, _route: SearchRoute) -> str:
    return (
        "`diversity` (0 to 1) makes the rows differ from each other, for a broader answer: 1 "
        "is the plain ranking, 0.5 balances relevance and difference; `candidates` is how "
        "many of the best rows it chooses among."
    )


def _compares_vectors(_settings: SearchSettings, route: SearchRoute) -> bool:
    return "nearest" in route.branches


def _read_step_option(name: str) -> Callable[[SearchSettings, SearchRoute, Any, SearchCall], None]:
    def read(settings: SearchSettings, route: SearchRoute, value: Any, call: SearchCall) -> None:
        if not _compares_vectors(settings, route):
            raise ToolError(
                f"{name} applies to a search by meaning; this search of table "
                f"{settings.table} ranks by words alone"
            )
        value = whole_number(value) if name == "candidates" else value
        if name == "candidates" and "diversity" not in call.request:
            raise ToolError(
                "candidates is how many of the best rows diversity chooses among; give "
                "diversity too"
            )
        options = {"diversity": call.request.get("diversity", 0.5), name: value}
        try:
            steps_from_options(**options)
        except PlanError as error:
            raise ToolError(str(error)) from None
        call.request[name] = value

    return read


def _default_step_option(
    name: str,
) -> Callable[[SearchSettings, SearchRoute, SearchCall], None]:
    def default(settings: SearchSettings, route: SearchRoute, call: SearchCall) -> None:
        value = getattr(settings, name)
        if value is not None and _compares_vectors(settings, route):
            call.request[name] = value

    return default


# queries ------------------------------------------------------------------------------------


def _queries_schema(settings: SearchSettings) -> dict[str, Any]:
    return {
        "anyOf": [
            {
                "type": "array",
                "maxItems": MAX_QUERIES - 1,
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": settings.input_limits.max_query_characters,
                },
            },
            {"type": "null"},
        ],
        "default": None,
        "description": "Other wordings of the same question, searched with the query and "
        "combined into one ranking.",
    }


def _queries_sentence(_settings: SearchSettings, _route: SearchRoute) -> str:
    return (
        f"`queries` adds up to {MAX_QUERIES - 1} other wordings of the question, searched "
        "with `query` and combined into one ranking in one search."
    )


def _read_queries(
    settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, (list, tuple)) or len(value) > MAX_QUERIES - 1:
        raise ToolError(
            f"queries must be a list of at most {MAX_QUERIES - 1} query texts, got {value!r}"
        )
    for text in value:
        if not isinstance(text, str) or not text.strip():
            raise ToolError(f"queries must hold non-empty texts, got {text!r}")
        try:
            settings.input_limits.check_query(text)
        except InputLimitError as error:
            raise ToolError(f"queries: {error}") from None
    if value:
        call.request["queries"] = list(value)


# explain_scores ------------------------------------------------------------------------------


def _explain_schema(settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": ["boolean", "null"],
        "default": None,
        "description": "Also return what each row's score is made of: each ranking's rank, "
        "score, normalized value and contribution "
        f"(default {str(settings.explain_scores).lower()}).",
    }


def _read_explain(
    _settings: SearchSettings, route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, bool):
        raise ToolError(f"explain_scores must be true or false, got {value!r}")
    if not route.fused:
        raise ToolError(
            "explain_scores applies only to a search that combines rankings by words and by "
            "meaning; this search ranks one way"
        )
    call.request["explain_scores"] = value


def _default_explain(settings: SearchSettings, route: SearchRoute, call: SearchCall) -> None:
    if settings.explain_scores and route.fused:
        call.request["explain_scores"] = True


# highlight -----------------------------------------------------------------------------------


def _highlight_schema(settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": ["boolean", "null"],
        "default": None,
        "description": "Also return, for each row, where the query's words occur in its text "
        "(character offsets) and short snippets around them "
        f"(default {str(settings.highlight).lower()}).",
    }


def _highlighted(settings: SearchSettings, call: SearchCall) -> None:
    call.request["highlight"] = True
    if settings.fragment_size is not None:
        call.request["fragment_size"] = settings.fragment_size
    if settings.fragments is not None:
        call.request["fragments"] = settings.fragments


def _read_highlight(
    settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, bool):
        raise ToolError(f"highlight must be true or false, got {value!r}")
    if value:
        _highlighted(settings, call)


def _default_highlight(settings: SearchSettings, _route: SearchRoute, call: SearchCall) -> None:
    if settings.highlight:
        _highlighted(settings, call)


# group_by, group_size ------------------------------------------------------------------------


def _group_by_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "description": "A column grouping the rows, such as the document a chunk belongs to: "
        "one group comes back per row asked for, each with its best group_size rows.",
    }


def _group_size_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_GROUP_SIZE,
        "description": f"With group_by: rows kept per group, 1 to {MAX_GROUP_SIZE} (default 1).",
    }


def _group_sentence(settings: SearchSettings, _route: SearchRoute) -> str:
    default = f' (default "{settings.group_by}")' if settings.group_by is not None else ""
    return (
        f"`group_by` names a column{default} whose value groups the rows, such as a chunk's "
        "document: one group comes back per row asked for, each with its best "
        "`group_size` rows."
    )


def _read_group_by(
    _settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, str):
        raise ToolError(f"group_by must be a column name, got {value!r}")
    call.request["group_by"] = _group_column(value)


def _read_group_size(
    settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if "group_by" not in call.request and settings.group_by is None:
        raise ToolError("group_size is the rows kept per group; give group_by too")
    call.request["group_size"] = _check_group_size(whole_number(value))


def _default_group_by(settings: SearchSettings, _route: SearchRoute, call: SearchCall) -> None:
    if settings.group_by is not None:
        call.request["group_by"] = settings.group_by


def _default_group_size(settings: SearchSettings, _route: SearchRoute, call: SearchCall) -> None:
    if settings.group_size is not None and "group_by" in call.request:
        call.request["group_size"] = settings.group_size


# after ---------------------------------------------------------------------------------------


def _after_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_CURSOR_CHARACTERS,
        "description": "The next_after value of an earlier answer of the same search: the "
        "rows ranked after that answer's last row.",
    }


def _after_sentence(_settings: SearchSettings, _route: SearchRoute) -> str:
    return (
        "An answer's `metadata.next_after`, passed back as `after` with the same query, "
        "gives the rows ranked after it (a grouped, diversified, highlighted or reranked "
        "answer has none)."
    )


def _uncontinued(settings: SearchSettings, route: SearchRoute) -> str | None:
    """What the settings do to every search of ``route`` that no cursor continues (the
    plan's cursor check, ``_check_cursor``), ``None`` when they leave it continuable: a
    call cannot turn off the settings' reranker, grouping or diversity."""
    if settings.reranker is not None:
        return "reranked"
    if settings.group_by is not None:
        return "grouped"
    if settings.diversity is not None and _compares_vectors(settings, route):
        return "reordered by diversity"
    return None


def _continues(settings: SearchSettings, route: SearchRoute) -> bool:
    return _uncontinued(settings, route) is None


def _read_after(settings: SearchSettings, route: SearchRoute, value: Any, call: SearchCall) -> None:
    done = _uncontinued(settings, route)
    if done is not None:
        raise PlanError(  # each door words the advice with its own row count argument
            f"a cursor cannot continue a {done} ranking, and every search here is {done}",
            field="after",
            value=value,
            mentions=("offset",),
            advice=CURSORLESS_ADVICE,
        )
    try:
        read_cursor(value)
    except PlanError as error:
        raise ToolError(str(error)) from None
    call.request["after"] = value


# facets --------------------------------------------------------------------------------------


def _facets_schema(_settings: SearchSettings) -> dict[str, Any]:
    return {
        "anyOf": [
            {
                "type": "array",
                "maxItems": MAX_FACETS,
                "items": {"type": "string", "minLength": 1, "maxLength": 128},
            },
            {"type": "null"},
        ],
        "default": None,
        "description": "Columns whose values are counted among the rows the search matched "
        f"(the {FACET_VALUES} most frequent each), returned in metadata.facets.",
    }


def _facets_sentence(_settings: SearchSettings, _route: SearchRoute) -> str:
    return (
        f"`facets` names up to {MAX_FACETS} columns whose values are counted among the rows "
        "the search matched (`metadata.facets`: value and count, most frequent first)."
    )


def _read_facets(
    _settings: SearchSettings, _route: SearchRoute, value: Any, call: SearchCall
) -> None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(name, str) for name in value):
        raise ToolError(f"facets must be a list of column names, got {value!r}")
    try:
        columns = read_facets(value)
    except PlanError as error:
        raise ToolError(str(error)) from None
    if columns:
        call.request["facets"] = list(columns)


SEARCH_OPTIONS: tuple[SearchOption, ...] = (
    SearchOption(
        name="query", kind=OptionKind.TEXT, schema=_query_schema, read=_read_query, required=True
    ),
    SearchOption(
        name="k",
        kind=OptionKind.COUNT,
        schema=_k_schema,
        read=_read_k,
        sentence=_k_sentence,
        default=_default_k,
    ),
    SearchOption(
        name="filter",
        kind=OptionKind.JSON,
        schema=_filter_schema,
        read=_read_filter,
        sentence=_filter_sentence,
    ),
    SearchOption(
        name="fusion",
        kind=OptionKind.JSON,
        schema=_fusion_schema,
        read=_read_fusion,
        offered=_fuses,
        sentence=_fusion_sentence,
        default=_default_fusion,
    ),
    SearchOption(
        name="diversity",
        kind=OptionKind.JSON,
        schema=_diversity_schema,
        read=_read_step_option("diversity"),
        offered=_compares_vectors,
        sentence=_diversity_sentence,
        default=_default_step_option("diversity"),
    ),
    SearchOption(
        name="candidates",
        kind=OptionKind.COUNT,
        schema=_candidates_schema,
        read=_read_step_option("candidates"),
        offered=_compares_vectors,
        default=_default_step_option("candidates"),
    ),
    SearchOption(
        name="queries",
        kind=OptionKind.JSON,
        schema=_queries_schema,
        read=_read_queries,
        sentence=_queries_sentence,
    ),
    SearchOption(
        name="explain_scores",
        kind=OptionKind.FLAG,
        schema=_explain_schema,
        read=_read_explain,
        offered=_fuses,
        default=_default_explain,
    ),
    SearchOption(
        name="group_by",
        kind=OptionKind.TEXT,
        schema=_group_by_schema,
        read=_read_group_by,
        sentence=_group_sentence,
        default=_default_group_by,
    ),
    SearchOption(
        name="group_size",
        kind=OptionKind.COUNT,
        schema=_group_size_schema,
        read=_read_group_size,
        default=_default_group_size,
    ),
    SearchOption(
        name="after",
        kind=OptionKind.TEXT,
        schema=_after_schema,
        read=_read_after,
        sentence=_after_sentence,
        offered=_continues,
    ),
    SearchOption(
        name="highlight",
        kind=OptionKind.FLAG,
        schema=_highlight_schema,
        read=_read_highlight,
        default=_default_highlight,
    ),
    SearchOption(
        name="facets",
        kind=OptionKind.JSON,
        schema=_facets_schema,
        read=_read_facets,
        sentence=_facets_sentence,
    ),
)
"""The arguments of a search call, in the order the doors list them: one row each."""


def offered_options(settings: SearchSettings, route: SearchRoute) -> tuple[SearchOption, ...]:
    """The rows of :data:`SEARCH_OPTIONS` a tool on ``route`` takes."""
    return tuple(option for option in SEARCH_OPTIONS if option.offered(settings, route))


def read_call(
    settings: SearchSettings, route: SearchRoute, arguments: Mapping[str, Any]
) -> SearchCall:
    """A call's ``arguments`` read by the rows a tool on ``route`` takes: each given value
    by its row, each absent one by its default, then the settings' own filter.

    Raises:
        ToolError: an argument no row takes, a missing required one, or a bad value (the
            row's message).
    """
    options = offered_options(settings, route)
    known = [option.name for option in options]
    unknown = [name for name in arguments if name not in known]
    for option in SEARCH_OPTIONS:
        if option.name in unknown and arguments[option.name] is not None:
            # a row this tool does not offer: its own reading says why
            option.read(settings, route, arguments[option.name], SearchCall())
            raise ToolError(f"{option.name} does not apply to this search")
    unknown = [name for name in unknown if name not in {o.name for o in SEARCH_OPTIONS}]
    if unknown:
        raise ToolError(f"unknown argument {unknown[0]!r}; this tool takes {', '.join(known)}")
    call = SearchCall()
    if settings.filter is not None:
        call.filters.append(settings.filter)
    for option in options:
        value = arguments.get(option.name)
        if value is not None:
            option.read(settings, route, value, call)
        elif option.required:
            raise ToolError(f"missing argument {option.name!r}")
        elif option.default is not None:
            option.default(settings, route, call)
    if settings.reranker is not None:  # the application's choice, never the call's
        call.request["rerank"] = settings.reranker
        if settings.top_n is not None:
            call.request["top_n"] = settings.top_n
    return call


def pydantic_fields(settings: SearchSettings, route: SearchRoute) -> dict[str, Any]:
    """The fields of a pydantic argument model for a tool on ``route``, for ``create_model``
    (the LangChain and MCP adapters'): each offered row typed by its kind, its JSON Schema
    listed as the row gives it. Values are read again by the row when the tool runs.

    Needs pydantic (both frameworks install it).
    """
    from typing import Annotated

    from pydantic import BeforeValidator, Field, WithJsonSchema

    fields: dict[str, Any] = {}
    for option in offered_options(settings, route):
        schema = option.schema(settings)
        description = schema.get("description")
        annotation: Any
        if option.kind is OptionKind.TEXT:
            text = Annotated[
                str,
                Field(min_length=schema.get("minLength", 1), max_length=schema.get("maxLength")),
            ]
            # an optional one takes null as "not given", as every other optional argument does
            # (an agent passes back an answer's null next_after as after)
            annotation = Annotated[
                text if option.required else text | None, Field(description=description)
            ]
        elif option.kind is OptionKind.COUNT:
            annotation = Annotated[
                Annotated[int, Field(ge=schema.get("minimum", 1))] | None,
                BeforeValidator(whole_number),
                Field(description=description),
            ]
        elif option.kind is OptionKind.FLAG:
            annotation = Annotated[bool | None, Field(description=description)]
        else:
            annotation = Annotated[Any, WithJsonSchema(schema)]
        fields[option.name] = (annotation, ... if option.required else None)
    return fields


def described(settings: SearchSettings, role: str, generated: Callable[[], str]) -> str:
    """The description of the tool ``role``: the settings' own, if they give one, with the
    stored-data notice, else ``generated()``."""
    from hotdata_retrieval.adapters.toolkit import STORED_DATA_NOTICE

    own = settings.descriptions.get(role)
    if own is None:
        return generated()
    return own if STORED_DATA_NOTICE in own else f"{own.rstrip()} {STORED_DATA_NOTICE}"


def option_sentences(
    settings: SearchSettings, route: SearchRoute, *, leave_out: tuple[str, ...] = ()
) -> list[str]:
    """The sentences the offered options add to a search tool's description (but those of
    ``leave_out``, which a door words itself)."""
    return [
        option.sentence(settings, route)
        for option in offered_options(settings, route)
        if option.sentence is not None and option.name not in leave_out
    ]


def door_message(error: BaseException, *, count: str, most: int, parameters: Container[str]) -> str:
    """``error``'s message as a search door gives it: a
    :class:`~hotdata_retrieval.errors.PlanError` whose advice names a parameter of the
    library the door does not take (``parameters``: the door's own argument names) says what
    the door's caller can do instead
    (:meth:`~hotdata_retrieval.errors.PlanError.worded_for`): a ranking no cursor continues
    (paged with ``offset`` in the library) is asked for at once, up to ``most`` rows through
    the door's row count argument ``count``.

    >>> from hotdata_retrieval.plan.search import CURSORLESS_ADVICE
    >>> refused = PlanError("a cursor cannot continue a grouped ranking",
    ...     mentions=("offset",), advice=CURSORLESS_ADVICE)
    >>> door_message(refused, count="top_k", most=50, parameters=("query", "top_k"))
    'a cursor cannot continue a grouped ranking; ask for more rows at once with top_k (up to 50)'
    """
    if not isinstance(error, PlanError):
        return str(error)
    return error.worded_for(
        parameters, {"offset": f"ask for more rows at once with {count} (up to {most})"}
    )


def setting_error(error: Any, given: Mapping[str, Any], *, door: str) -> Exception:
    """A door's pydantic ``ValidationError`` from its constructor as the library's typed
    error: the error a validator of the door raised on purpose (a
    :class:`~hotdata_retrieval.errors.HotdataRetrievalError`), else a
    :class:`~hotdata_retrieval.errors.PlanError` naming the first bad setting and its value
    as given (``given``: the constructor's keyword arguments).

    >>> from pydantic import BaseModel, ValidationError
    >>> class Door(BaseModel):
    ...     columns: list[str] | None = None
    >>> try:
    ...     Door(columns="x")
    ... except ValidationError as error:
    ...     print(setting_error(error, {"columns": "x"}, door="Door"))
    Door: columns must be a valid list, got 'x'
    """
    from hotdata_retrieval.errors import HotdataRetrievalError

    problem = error.errors()[0]
    raised = (problem.get("ctx") or {}).get("error")
    if isinstance(raised, HotdataRetrievalError):
        return raised
    location = problem.get("loc") or ()
    name = str(location[0]) if location else "arguments"
    value = given.get(name, problem.get("input"))
    wanted = re.sub(r"^(Input|Value) should be ", "", problem.get("msg", "invalid"))
    if isinstance(raised, Exception):
        wanted = str(raised)
        return PlanError(f"{door}: {wanted}", field=name, value=value)
    return PlanError(f"{door}: {name} must be {wanted}, got {value!r}", field=name, value=value)
