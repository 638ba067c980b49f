"""A table's search as a Hasura DDN command: an NDC function connector with one function,
``search_documents``. Needs the ``ddn`` extra (starlette, uvicorn, pydantic, PyYAML).

:func:`create_app` returns a starlette application that serves the Native Data Connector
(NDC) HTTP endpoints over one table of any engine of this library; ``hdq ddn serve`` runs it
with uvicorn and ``hdq ddn metadata`` prints the HML for the command (:func:`metadata`).

The endpoints follow the NDC specification, version 0.2.0: the shapes of
``ndc-models/src/schema.rs`` in ``hasura/ndc-spec``, the function calls of
https://hasura.github.io/ndc-spec/specification/queries/functions.html, and the version
``@hasura/ndc-sdk-typescript`` 8.2.0 reports (``VERSION = "0.2.0"``). Hasura's Python SDK,
``ndc-sdk-python``, needs Python 3.12, so the endpoints are served here directly:

- ``GET /capabilities``: ``{"version": "0.2.0", "capabilities": {"query": {"variables": {},
  "nested_fields": {}, "exists": {}}, "mutation": {}}}``.
- ``GET /schema``: ``scalar_types`` (each with a ``representation``; ``JSON`` is
  ``{"type": "json"}``), ``object_types``
  (``SearchHit``: flat scalar fields), no collections or procedures, and one entry of
  ``functions``: ``search_documents`` with its ``arguments`` and ``result_type`` an array of
  ``SearchHit``.
- ``POST /query``: a ``QueryRequest`` (``collection`` the function's name, ``arguments`` of
  ``{"type": "literal", "value": ...}`` or ``{"type": "variable", "name": ...}``,
  ``query.fields`` with the ``__value`` column and its nested array/object selection); the
  answer is a list of row sets, one per variable set (one without variables), each
  ``{"rows": [{"__value": [<SearchHit>, ...]}]}``: a function is a collection of one row and
  one column, ``__value``.
- ``GET /health``: 200 with an empty body.

The one function answers through the toolkit's search path
(:meth:`~hotdata_retrieval.adapters.toolkit.SearchToolkit.search`, set up by a
:class:`~hotdata_retrieval.adapters.settings.SearchSettings`): the call becomes a
:class:`~hotdata_retrieval.routing.SearchRequest` (mode ``auto``: fused when the table has
both rankings), the engine's ``plan_search`` routes it and ``engine.search`` runs it. Its
arguments are ``query`` (text), ``top_k`` (1 to ``max_rows``), every other option of
:data:`~hotdata_retrieval.adapters.settings.SEARCH_OPTIONS` the route offers — ``filter`` (a
filter object with every registered operator, or filter text) and, on a fused route,
``fusion`` (every registered method), both of the ``JSON`` scalar type — and one optional
argument per declared filter column, an equality filter typed from the column's type in the
table. Each ``SearchHit`` carries ``id`` (the table's key), ``text`` (the searched text
column), ``score`` (the fused score, or the one ranking's score), ``distance`` (only on a
route ranked by distance alone), ``<branch>_rank`` per branch (1-based, null where the branch
did not return the row) and the declared filter columns.

Bad input is an NDC error response, ``{"message": ..., "details": {...}}``: HTTP 400 with a
one-line message naming the bad value (an unknown function or argument, a wrong type, a
``top_k`` out of range, a query over the input limits, a body over ``max_body_bytes``, a
body that is not JSON), 501 for a query feature the function does not support (predicates,
ordering, aggregates, relationships), 500 with a fixed message when the engine fails
(logged, never sent as a traceback).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval._json import jsonable
from hotdata_retrieval.adapters.envelope import EXPLANATION_KEY, HIGHLIGHTS_KEY
from hotdata_retrieval.adapters.settings import (
    OptionKind,
    SearchOption,
    SearchSettings,
    described,
    door_message,
    option_sentences,
    whole_number,
)
from hotdata_retrieval.adapters.toolkit import STORED_DATA_NOTICE, SearchToolkit
from hotdata_retrieval.engines.checks import ValueKind, arrow_column_kinds
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.results import hits_after
from hotdata_retrieval.errors import ConnectorError, HotdataRetrievalError, PlanError, ToolError
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.names import TableName

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

logger = logging.getLogger(__name__)

NDC_VERSION = "0.2.0"
"""The NDC specification version the endpoints follow (``/capabilities`` reports it)."""

FUNCTION_NAME = "search_documents"
"""The connector's one function, and the DDN command's source."""

HIT_TYPE = "SearchHit"
"""The object type of each hit, in the connector's schema and in the HML."""

DEFAULT_MAX_BODY_BYTES = 64 * 1024
"""Bytes of one request body the connector reads before refusing it: 64 KiB."""

_SCALARS: Mapping[ValueKind, tuple[str, str]] = {
    ValueKind.TEXT: ("String", "string"),
    ValueKind.TEMPORAL: ("String", "string"),  # ISO 8601 text, read as the column's type
    ValueKind.INTEGER: ("Int64", "int64"),
    ValueKind.NUMBER: ("Float64", "float64"),
    ValueKind.BOOLEAN: ("Boolean", "boolean"),
}
"""The NDC scalar type (name, ``representation``) of each kind of column a filter takes."""

_OPEN_SCALARS = ("String", "Int32", "Int64", "Float64", "Boolean", "JSON")

_KIND_SCALARS: Mapping[OptionKind, str] = {
    OptionKind.TEXT: "String",
    OptionKind.COUNT: "Int32",
    OptionKind.FLAG: "Boolean",
    OptionKind.JSON: "JSON",
}
"""The NDC scalar type of each kind of search option (``JSON``: any JSON value, NDC's
``json`` type representation)."""

_DOOR_NAMES = {"k": "top_k"}
"""The search options this function names its own way (``top_k``, refused above the
ceiling rather than reduced to it, and worded in the description here)."""


def _sdk() -> Any:
    try:
        import pydantic  # noqa: F401
        import starlette  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "the DDN connector needs starlette and pydantic: pip install 'hotdata-retrieval[ddn]'"
        ) from error


@attrs.frozen(kw_only=True)
class FilterArgument:
    """One optional equality argument of ``search_documents``.

    Attributes:
        column: the table column it filters on (also the argument's name).
        kind: the column's kind of value.
    """

    column: str
    kind: ValueKind

    @property
    def scalar(self) -> str:
        """The NDC scalar type name of the argument (``String``, ``Int64``, ...)."""
        return _SCALARS[self.kind][0]

    def check(self, value: Any) -> Any:
        """``value`` if it fits the column's kind (for an integer column, a number without a
        fraction as an ``int``: JSON's ``1.0`` is ``1``, as the ``top_k`` argument and every
        tool's ``k`` read it).

        Raises:
            ConnectorError: a value of another type, naming the argument and the value.
        """
        if self.kind is ValueKind.INTEGER:
            value = whole_number(value)  # 1.0 is the integer 1, as top_k's 5.0 is 5
        fits = {
            ValueKind.TEXT: isinstance(value, str),
            ValueKind.TEMPORAL: isinstance(value, str),
            ValueKind.BOOLEAN: isinstance(value, bool),
            ValueKind.INTEGER: isinstance(value, int) and not isinstance(value, bool),
            ValueKind.NUMBER: isinstance(value, (int, float)) and not isinstance(value, bool),
        }[self.kind]
        if not fits:
            raise ConnectorError(
                f"argument {self.column!r} takes {_article(self.scalar)}, got {_shown(value)}"
            )
        return value


def _article(scalar: str) -> str:
    return f"an {scalar}" if scalar[:1] in "AEIOU" else f"a {scalar}"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else f"{text[:57]}..."


def column_kinds(engine: Any, table: TableName, columns: Sequence[str]) -> dict[str, ValueKind]:
    """The kind of value of each of ``columns``, read from the engine's table: its declared
    types on a SQL store (``describe``), its Arrow types on the local engine
    (``read_table``).

    Raises:
        ToolError: the engine reports no column types, or a column is not in the table.
    """
    kinds: dict[str, ValueKind] = {}
    describe = getattr(engine, "describe", None)
    read_table = getattr(engine, "read_table", None)
    if callable(describe):
        from hotdata_retrieval.engines.store import value_kinds

        kinds = value_kinds(describe(table))
    elif callable(read_table) and columns:
        try:
            schema = read_table(table, columns=list(columns)).schema
        except EngineError as error:  # the engine's message names the column and the columns
            raise ToolError(f"filter column: {error}") from None
        kinds = arrow_column_kinds(schema)
    elif columns:
        raise ToolError(
            f"the {type(engine).__name__} engine reports no column types, so filter columns "
            f"{', '.join(columns)} cannot be typed"
        )
    missing = [column for column in columns if column not in kinds]
    if missing:
        raise ToolError(
            f"filter column {missing[0]!r} is not a column of table {table}; columns: "
            f"{', '.join(kinds)}"
        )
    return {column: kinds[column] for column in columns}


class SearchDocuments:
    """The ``search_documents`` function over one table of one engine: its NDC schema and
    its calls, answered by the toolkit's search path
    (:meth:`~hotdata_retrieval.adapters.toolkit.SearchToolkit.search`).

    Args:
        engine: an engine of this library (the contract: ``indexes``, ``plan_search``,
            ``search``).
        settings: the :class:`~hotdata_retrieval.adapters.settings.SearchSettings` (``table``;
            ``k`` and ``max_rows``: ``top_k``'s default and largest value; ``filter_columns``:
            typed equality arguments, text, integer, number, boolean, date or timestamp
            columns; ``text_column``, the column returned as ``text``; ``filter``,
            ``fusion``, ``embedder``, ``input_limits``...). ``columns`` is not read: a hit's
            fields are fixed.
        default_top_k, max_top_k: the names this class took for ``k`` and ``max_rows``.
        options: settings fields, in place of ``settings`` or over it.

    The function's arguments are ``query``, ``top_k``, then every other option of
    :data:`~hotdata_retrieval.adapters.settings.SEARCH_OPTIONS` the route offers (``filter``:
    a filter object or filter text; ``fusion`` on a fused route), typed by their kind (an
    option of JSON values is the ``JSON`` scalar), then the equality arguments; not
    ``facets``, whose counts a list of hits cannot carry.

    Raises:
        ToolError: a bad setting, a filter column of a kind no equality argument takes, or
            one whose name is an argument or a field of ``SearchHit``.
        HotdataRetrievalError: the engine does not know the table, or it cannot be searched.
    """

    def __init__(
        self,
        engine: Any,
        settings: SearchSettings | None = None,
        /,
        *,
        default_top_k: int | None = None,
        max_top_k: int | None = None,
        **options: Any,
    ) -> None:
        if default_top_k is not None:
            options["k"] = default_top_k
        if max_top_k is not None:
            options["max_rows"] = max_top_k
        settings = SearchSettings.of(settings, **options)
        self.engine = engine
        routed = SearchToolkit(engine, attrs.evolve(settings, columns=None, sql=False))
        route = routed.text_route
        if route is None:
            raise ToolError(f"table {routed.table} has nothing to search by")
        self.indexes = routed.indexes
        self.table = routed.table
        self.key_column = self.indexes.key_column
        self.text_column = settings.text_column or route.searched_column
        self.branches = route.branch_names
        self.default_top_k = settings.default_k
        self.max_top_k = settings.max_rows
        self.input_limits = settings.input_limits
        self.embedder = settings.embedder
        self._lock = threading.Lock()  # one search at a time on the engine
        self.options = {
            _DOOR_NAMES.get(o.name, o.name): o
            for o in routed.search_options(route)
            if o.name not in _ANSWERED_IN_METADATA
        }
        fixed = {
            "id",
            "text",
            "score",
            "distance",
            *(f"{b}_rank" for b in self.branches),
            EXPLANATION_FIELD,
            HIGHLIGHTS_FIELD,
            AFTER_FIELD,
        }
        kinds = column_kinds(engine, self.table, list(settings.filter_columns))
        self.filters: dict[str, FilterArgument] = {}
        for column, kind in kinds.items():
            if kind not in _SCALARS:
                raise ToolError(
                    f"filter column {column!r} holds {kind.value} values; an equality argument "
                    "takes text, integer, number, boolean, date or timestamp columns"
                )
            if column in fixed or column in self.options:
                raise ToolError(
                    f"filter column {column!r} has the name of a {FUNCTION_NAME} argument or "
                    f"a {HIT_TYPE} field"
                )
            self.filters[column] = FilterArgument(column=column, kind=kind)
        columns = [self.key_column, self.text_column, *self.filters]
        self.toolkit = SearchToolkit(
            engine,
            attrs.evolve(
                settings,
                columns=tuple(dict.fromkeys(c for c in columns if c)),
                text_column=self.text_column,
                sql=False,
            ),
        )
        self.route = self.toolkit.text_route or route
        self.settings = self.toolkit.settings
        self.key_kind = (
            column_kinds(engine, self.table, [self.key_column])[self.key_column]
            if self.key_column
            else ValueKind.TEXT
        )

    # -- schema ------------------------------------------------------------------------------

    def description(self) -> str:
        """What the function does, for the planner that picks it: the capability, never the
        mechanism underneath; the settings' ``descriptions["search_text"]`` when given."""
        return described(self.settings, "search_text", self._description)

    def _description(self) -> str:
        route = self.route
        if route.matches_words and route.matches_meaning:
            matching = (
                "Search documents by text and meaning: finds documents that say what the query "
                "means in other words as well as documents holding its rare exact terms "
                "(names, ids, error codes)."
            )
        elif route.matches_words:
            matching = (
                "Search documents by text: finds documents holding the words of the query; "
                "documents that say the same thing in other words are not found."
            )
        else:
            matching = (
                "Search documents by meaning: finds documents that say what the query means, "
                "even in other words; rare exact terms such as ids may rank low."
            )
        filters = (
            f" Optional arguments {', '.join(f'`{c}`' for c in self.filters)} keep only the "
            "documents whose column equals the value given, before ranking."
            if self.filters
            else ""
        )
        options = option_sentences(
            self.settings, route, leave_out=(*_DOOR_NAMES, "after", *_ANSWERED_IN_METADATA)
        )
        if "after" in self.options:  # a hit's own field, not an answer's metadata
            options.append(
                f"A hit's `{AFTER_FIELD}`, passed back as the `after` argument with the same "
                "other arguments, gives the hits ranked after it; a grouped, diversified or "
                "highlighted answer has none: ask for more hits at once with `top_k` (up to "
                f"{self.max_top_k})."
            )
        return " ".join(
            [
                f"{matching} Returns at most `top_k` hits (1 to {self.max_top_k}, default "
                f"{self.default_top_k}) from {self.table}, best first: each has the document's "
                "`id`, its `text`, a relevance `score` (higher is better; scores compare hits "
                f"of one call only) and its rank in each ranking.{filters}",
                *options,
                "It returns the best matches only, never every match, so it does not answer "
                "counting questions.",
                STORED_DATA_NOTICE,
            ]
        )

    def hit_fields(self) -> dict[str, tuple[str, bool, str]]:
        """Each ``SearchHit`` field: (NDC scalar type, nullable, description)."""
        fields: dict[str, tuple[str, bool, str]] = {
            "id": (_SCALARS.get(self.key_kind, ("String", ""))[0], False, "The document's key."),
            "text": ("String", True, "The document's text."),
            "score": ("Float64", True, "Relevance: higher is better, within one call."),
        }
        if not self.route.descending:
            fields["distance"] = ("Float64", True, "Closeness in meaning: smaller is closer.")
        for branch in self.branches:
            fields[f"{branch}_rank"] = (
                "Int32",
                True,
                f"The hit's 1-based rank in the {branch} ranking; null when it did not rank.",
            )
        if self.route.fused:
            fields[EXPLANATION_FIELD] = (
                "JSON",
                True,
                "With explain_scores, what the score is made of: each ranking's rank, raw "
                "score, normalized value and contribution; null otherwise.",
            )
        fields[HIGHLIGHTS_FIELD] = (
            "JSON",
            True,
            "With highlight, where the query's words occur in each text column (character "
            "offsets) and snippets around them; null otherwise.",
        )
        if "after" in self.options:
            fields[AFTER_FIELD] = (
                "String",
                True,
                "Passed back as the `after` argument with the same query, the hits ranked "
                "after this one; null on the last hit of an answer shorter than top_k (the "
                "ranking has ended) and where the search cannot be continued.",
            )
        for column, argument in self.filters.items():
            fields[column] = (argument.scalar, True, f"The document's {column}.")
        return fields

    def arguments(self) -> dict[str, tuple[str, bool, str]]:
        """Each argument: (NDC scalar type, nullable, description): the search options, by
        their kind (:data:`_KIND_SCALARS`), then the equality arguments."""
        arguments: dict[str, tuple[str, bool, str]] = {}
        for name, option in self.options.items():
            schema = option.schema(self.settings)
            description = str(schema.get("description", ""))
            if option.name == "query":
                most = self.input_limits.max_query_characters
                description = f"{description[:-1]} (at most {most:,} characters)."
            elif option.name == "after":
                description = (
                    f"The `{AFTER_FIELD}` field of a hit of an earlier answer of the same "
                    "search: the hits ranked after that hit."
                )
            elif option.name == "k":
                description = (
                    f"How many hits to return, 1 to {self.max_top_k} (default "
                    f"{self.default_top_k})."
                )
            arguments[name] = (_KIND_SCALARS[option.kind], not option.required, description)
        for column, argument in self.filters.items():
            arguments[column] = (
                argument.scalar,
                True,
                f"Keep only the documents whose {column} equals this value.",
            )
        return arguments

    def schema(self) -> dict[str, Any]:
        """The NDC ``SchemaResponse``."""

        def typed(scalar: str, nullable: bool) -> dict[str, Any]:
            named = {"type": "named", "name": scalar}
            return {"type": "nullable", "underlying_type": named} if nullable else named

        used = {
            scalar for scalar, _, _ in (*self.hit_fields().values(), *self.arguments().values())
        }
        representation = {name: rep for name, rep in _SCALARS.values()} | {
            "Int32": "int32",
            "JSON": "json",
        }
        return {
            "scalar_types": {
                name: {
                    "representation": {"type": representation[name]},
                    "aggregate_functions": {},
                    "comparison_operators": {},
                }
                for name in _OPEN_SCALARS
                if name in used
            },
            "object_types": {
                HIT_TYPE: {
                    "description": f"One document found by {FUNCTION_NAME}.",
                    "fields": {
                        name: {"description": text, "type": typed(scalar, nullable)}
                        for name, (scalar, nullable, text) in self.hit_fields().items()
                    },
                    "foreign_keys": {},
                }
            },
            "collections": [],
            "functions": [
                {
                    "name": FUNCTION_NAME,
                    "description": self.description(),
                    "arguments": {
                        name: {"description": text, "type": typed(scalar, nullable)}
                        for name, (scalar, nullable, text) in self.arguments().items()
                    },
                    "result_type": {
                        "type": "array",
                        "element_type": {"type": "named", "name": HIT_TYPE},
                    },
                }
            ],
            "procedures": [],
        }

    @staticmethod
    def capabilities() -> dict[str, Any]:
        """The NDC ``CapabilitiesResponse``: queries with variables and nested fields."""
        return {
            "version": NDC_VERSION,
            "capabilities": {
                "query": {"variables": {}, "nested_fields": {}, "exists": {}},
                "mutation": {},
            },
        }

    # -- calls -------------------------------------------------------------------------------

    def search(self, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The hits for one call's argument values, best first, as ``SearchHit`` objects.

        Raises:
            ConnectorError: a missing, unknown or ill-typed argument, a ``top_k`` out of
                range, a query over the input limits, a filter or fusion that does not read,
                or a plan the engine refuses.
        """
        known = self.arguments()
        unknown = [name for name in arguments if name not in known]
        if unknown:
            raise ConnectorError(
                f"{FUNCTION_NAME} has no argument {unknown[0]!r}; it takes {', '.join(known)}"
            )
        values = {
            option.name: self._checked(name, option, arguments.get(name))
            for name, option in self.options.items()
        }
        filters = [
            Comparison(column=column, operator="=", value=argument.check(arguments[column]))
            for column, argument in self.filters.items()
            if arguments.get(column) is not None
        ]
        try:
            with self._lock:
                found = self.toolkit.search(
                    self.route, values, include_branch_scores=True, filters=filters
                )
        except (ToolError, PlanError) as error:
            message = door_message(error, count="top_k", most=self.max_top_k, parameters=known)
            raise ConnectorError(message) from None
        hits = found.result.hits
        if "after" not in self.options:
            return [self._hit(hit) for hit in hits]
        tokens = hits_after(found.plan, hits)
        return [{**self._hit(hit), AFTER_FIELD: token} for hit, token in zip(hits, tokens)]

    def _checked(self, name: str, option: SearchOption, value: Any) -> Any:
        """``value`` if it has the NDC type of its option's kind (the option's row reads it
        further).

        Raises:
            ConnectorError: a value of another type, naming the argument.
        """
        if option.kind is OptionKind.TEXT and (not isinstance(value, str) or not value.strip()):
            if value is None and not option.required:
                return None
            raise ConnectorError(f"argument {name!r} must be non-empty text, got {_shown(value)}")
        if value is None:
            return None
        if option.kind is OptionKind.COUNT:
            value = whole_number(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConnectorError(f"argument {name!r} takes an Int32, got {_shown(value)}")
            if not 1 <= value <= self.max_top_k:
                raise ConnectorError(
                    f"argument {name!r} must be 1 to {self.max_top_k}, got {_shown(value)}"
                )
        if option.kind is OptionKind.FLAG and not isinstance(value, bool):
            raise ConnectorError(f"argument {name!r} takes a Boolean, got {_shown(value)}")
        return value

    def _hit(self, hit: Any) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": hit.key,
            "text": hit.columns.get(self.text_column) if self.text_column else None,
            "score": hit.score,
        }
        if not self.route.descending:
            row["distance"] = hit.distance
        for branch in self.branches:
            scored = hit.branches.get(branch)
            row[f"{branch}_rank"] = None if scored is None else scored.rank
        for column in self.filters:
            row[column] = hit.columns.get(column)
        if hit.explained:  # the field is null (absent) unless the call explains scores
            row[EXPLANATION_FIELD] = hit.explanation()
        if hit.highlights:  # likewise unless the call highlights
            row[HIGHLIGHTS_FIELD] = dict(hit.highlights)
        return jsonable(row)  # type: ignore[no-any-return]  # NaN as null, as every door

    def query(self, request: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The NDC ``QueryResponse`` for a ``QueryRequest`` (already parsed from JSON).

        Raises:
            ConnectorError: a request the function cannot answer (400 or 501).
        """
        parsed = _parse_query_request(request)
        if parsed.collection != FUNCTION_NAME:
            raise ConnectorError(
                f"no function {parsed.collection!r}: this connector has {FUNCTION_NAME!r}"
            )
        query = parsed.query
        for feature in ("aggregates", "predicate", "order_by", "groups"):
            if getattr(query, feature) is not None:
                raise ConnectorError(f"{feature} is not supported on {FUNCTION_NAME}", status=501)
        for bound in ("limit", "offset"):
            value = getattr(query, bound)
            if value is not None and value < 0:
                raise ConnectorError(f"query.{bound} must be >= 0, got {value}")
        # A function is a collection of one row: its limit and offset apply to that row.
        kept = 1 if query.limit is None else query.limit
        if query.offset:
            kept = 0
        selection = None
        if query.fields is not None:
            selection = {alias: _selected(alias, field) for alias, field in query.fields.items()}
        variable_sets = parsed.variables if parsed.variables is not None else [{}]
        if len(variable_sets) > self.max_top_k:
            raise ConnectorError(
                f"{len(variable_sets)} variable sets; one request takes at most {self.max_top_k}"
            )
        answer: list[dict[str, Any]] = []
        for variables in variable_sets:
            values = {
                name: _argument_value(name, argument, variables)
                for name, argument in parsed.arguments.items()
            }
            hits = self.search(values)
            if selection is None:
                answer.append({"rows": None})
                continue
            row = {alias: _project(hits, nested) for alias, nested in selection.items()}
            answer.append({"rows": [row][:kept]})
        return answer


# -- request models ----------------------------------------------------------------------------


def _models() -> Any:
    """The pydantic models of a ``QueryRequest`` (built on first use: pydantic is in the
    ``ddn`` extra)."""
    global _MODELS
    if _MODELS is not None:
        return _MODELS
    from typing import Literal, Union

    from pydantic import BaseModel, ConfigDict, Field

    class _Model(BaseModel):
        model_config = ConfigDict(extra="allow")

    class LiteralArgument(_Model):
        type: Literal["literal"]
        value: Any = None

    class VariableArgument(_Model):
        type: Literal["variable"]
        name: str

    class NestedObject(_Model):
        type: Literal["object"]
        fields: dict[str, FieldModel]

    class NestedArray(_Model):
        type: Literal["array"]
        fields: Union[NestedObject, NestedArray] = Field(discriminator="type")  # noqa: UP007

    class FieldModel(_Model):
        type: str
        column: str | None = None
        fields: Union[NestedObject, NestedArray, None] = Field(  # noqa: UP007
            default=None, discriminator="type"
        )

    class QueryModel(_Model):
        fields: dict[str, FieldModel] | None = None
        aggregates: Any = None
        limit: int | None = None
        offset: int | None = None
        order_by: Any = None
        predicate: Any = None
        groups: Any = None

    class QueryRequestModel(_Model):
        collection: str
        query: QueryModel
        arguments: dict[
            str, Union[LiteralArgument, VariableArgument]  # noqa: UP007
        ] = Field(default_factory=dict)
        collection_relationships: dict[str, Any] = Field(default_factory=dict)
        variables: list[dict[str, Any]] | None = None

    for model in (NestedObject, NestedArray, FieldModel, QueryModel, QueryRequestModel):
        model.model_rebuild(_types_namespace=locals())
    _MODELS = QueryRequestModel
    return _MODELS


_MODELS: Any = None


def _parse_query_request(request: Mapping[str, Any]) -> Any:
    from pydantic import ValidationError

    try:
        return _models().model_validate(request)
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(str(part) for part in detail["loc"]) or "the request"
        raise ConnectorError(f"bad QueryRequest at {where}: {detail['msg']}") from None


def _argument_value(name: str, argument: Any, variables: Mapping[str, Any]) -> Any:
    if argument.type == "literal":
        return argument.value
    if argument.name not in variables:
        raise ConnectorError(f"argument {name!r} names variable {argument.name!r}, not given")
    return variables[argument.name]


def _selected(alias: str, field: Any) -> Any:
    """The nested selection of ``__value`` (``None``: the whole hits)."""
    if field.type != "column":
        raise ConnectorError(f"field {alias!r}: {field.type} fields are not supported", status=501)
    if field.column != "__value":
        raise ConnectorError(
            f"field {alias!r} selects column {field.column!r}; a function has only '__value'"
        )
    return field.fields


_ANSWERED_IN_METADATA = frozenset({"facets"})
"""Options whose answer is the envelope's metadata (facet counts), which the function's answer
— a list of hits — has no place for: not offered, rather than taken and dropped."""

HIGHLIGHTS_FIELD = HIGHLIGHTS_KEY
"""A hit's field holding its highlights (``SearchHit.highlights``), present when the call
sets ``highlight``, null otherwise."""

AFTER_FIELD = "after"
"""A hit's field holding the cursor token for the hits ranked after it, which the ``after``
argument takes (:func:`~hotdata_retrieval.engines.results.hits_after`): a list of hits has no
place for the page's own ``next_after``."""

EXPLANATION_FIELD = EXPLANATION_KEY
"""A fused search hit's field saying what its score is made of (``SearchHit.explanation``),
present when the call sets ``explain_scores``, null otherwise."""


def _project(hits: list[dict[str, Any]], nested: Any) -> Any:
    if nested is None:
        return hits
    if nested.type != "array":
        raise ConnectorError("__value is an array of SearchHit; select it as an array")
    inner = nested.fields
    if inner.type != "object":
        raise ConnectorError("each SearchHit is an object; select its fields as an object")
    projected = []
    for hit in hits:
        row: dict[str, Any] = {}
        for alias, field in inner.fields.items():
            if field.type == "column" and field.column in (EXPLANATION_FIELD, HIGHLIGHTS_FIELD):
                row[alias] = hit.get(field.column)  # null unless the call asks for it
                continue
            if field.type != "column" or field.column not in hit:
                raise ConnectorError(f"field {alias!r}: {HIT_TYPE} has no column {field.column!r}")
            row[alias] = hit[field.column]
        projected.append(row)
    return projected


# -- the application ---------------------------------------------------------------------------


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ConnectorError(f"request body of {int(declared):,} bytes; at most {limit:,}")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise ConnectorError(f"request body over {limit:,} bytes")
    return bytes(body)


def create_app(
    engine: Any,
    settings: SearchSettings | None = None,
    /,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    **options: Any,
) -> Starlette:
    """A starlette application serving the NDC endpoints of ``search_documents`` over a
    table of ``engine`` (module docstring). ``settings`` and ``options`` as
    :class:`SearchDocuments` takes them (``table``, ``filter_columns``, ``k`` or
    ``default_top_k``, ``max_rows`` or ``max_top_k``...), and ``max_body_bytes``: the largest
    request body read (default 64 KiB).

    The application holds the :class:`SearchDocuments` as ``app.state.function``.

    Raises:
        ImportError: the ``ddn`` extra is not installed.
        ToolError, HotdataRetrievalError: as :class:`SearchDocuments` raises them.
    """
    _sdk()
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse
    from starlette.responses import Response as PlainResponse
    from starlette.routing import Route

    function = SearchDocuments(engine, settings, **options)
    schema = function.schema()

    def error(message: str, status: int) -> Response:
        return JSONResponse({"message": message, "details": {}}, status_code=status)

    async def capabilities(_request: Request) -> Response:
        return JSONResponse(function.capabilities())

    async def get_schema(_request: Request) -> Response:
        return JSONResponse(schema)

    async def health(_request: Request) -> Response:
        return PlainResponse(status_code=200)

    async def query(request: Request) -> Response:
        try:
            body = await _read_body(request, max_body_bytes)
            try:
                document = json.loads(body)
            except (ValueError, UnicodeDecodeError) as problem:
                raise ConnectorError(f"the request body is not JSON: {problem}") from None
            except RecursionError:
                raise ConnectorError("the request body nests JSON too deeply to read") from None
            if not isinstance(document, dict):
                raise ConnectorError(f"a QueryRequest is a JSON object, got {_shown(document)}")
            answer = await run_in_threadpool(function.query, document)
        except ConnectorError as refused:
            return error(str(refused), refused.status)
        except HotdataRetrievalError as failed:
            return error(str(failed), 400)
        except Exception:
            logger.exception("search_documents failed")
            return error("the search failed inside the connector; see its log", 500)
        return JSONResponse(answer)

    app = Starlette(
        routes=[
            Route("/capabilities", capabilities, methods=["GET"]),
            Route("/schema", get_schema, methods=["GET"]),
            Route("/query", query, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )
    app.state.function = function
    return app


# -- HML -----------------------------------------------------------------------------------------

_OPEN_DD_SCALARS = {
    "String": "String",
    "Int32": "Int",
    "Int64": "Int",
    "Float64": "Float",
    "Boolean": "Boolean",
    "JSON": "Json",
}
"""The OpenDD type each NDC scalar of the schema is represented as: a built-in one, or
``Json``, a scalar type the HML declares (:data:`_DECLARED_SCALARS`)."""

_DECLARED_SCALARS = ("Json",)
"""OpenDD scalar types that are no built-in type, declared by a ``ScalarType`` document."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def metadata(
    function: SearchDocuments,
    *,
    connector_name: str = "search",
    model: str = "Documents",
    model_field: str = "id",
    relationship: str = "document",
) -> list[dict[str, Any]]:
    """The HML documents for the command, its return type and an example relationship:
    ``ScalarType`` ``Json`` when an argument takes any JSON value (``filter``, ``fusion``), a
    ``DataConnectorScalarRepresentation`` per scalar, the ``ObjectType`` ``SearchHit`` (mapped
    to the connector's object type), the ``Command`` ``SearchDocuments`` (source: the
    connector's function), and a ``Relationship`` from ``SearchHit.id`` to ``model``'s
    ``model_field``. The relationship is hand-authored: ``sourceType`` is the command's return
    type, not the command (DDN's ``ddn relationship add`` derives relationships between
    models only). The ``DataConnectorLink`` of ``connector_name`` is the one ``ddn connector
    introspect`` writes; it is not repeated here.

    Shapes follow the OpenDD metadata reference
    (https://hasura.io/docs/3.0/reference/metadata-reference/commands/, ``.../types/``,
    ``.../relationships/``).
    """
    schema = function.schema()
    hit = schema["object_types"][HIT_TYPE]["fields"]
    info = schema["functions"][0]

    def opendd(ndc_type: Mapping[str, Any]) -> str:
        if ndc_type["type"] == "nullable":
            return opendd(ndc_type["underlying_type"]).rstrip("!")
        return f"{_OPEN_DD_SCALARS[ndc_type['name']]}!"

    declared = [
        _OPEN_DD_SCALARS[scalar]
        for scalar in schema["scalar_types"]
        if _OPEN_DD_SCALARS[scalar] in _DECLARED_SCALARS
    ]
    documents: list[dict[str, Any]] = [
        {
            "kind": "ScalarType",
            "version": "v1",
            "definition": {"name": name, "graphql": {"typeName": name}},
        }
        for name in declared
    ]
    documents += [
        {
            "kind": "DataConnectorScalarRepresentation",
            "version": "v1",
            "definition": {
                "dataConnectorName": connector_name,
                "dataConnectorScalarType": scalar,
                "representation": _OPEN_DD_SCALARS[scalar],
            },
        }
        for scalar in schema["scalar_types"]
    ]
    documents.append(
        {
            "kind": "ObjectType",
            "version": "v1",
            "definition": {
                "name": HIT_TYPE,
                "description": schema["object_types"][HIT_TYPE]["description"],
                "fields": [
                    {
                        "name": _camel(name),
                        "type": opendd(field["type"]),
                        "description": field["description"],
                    }
                    for name, field in hit.items()
                ],
                "graphql": {"typeName": HIT_TYPE, "inputTypeName": f"{HIT_TYPE}Input"},
                "dataConnectorTypeMapping": [
                    {
                        "dataConnectorName": connector_name,
                        "dataConnectorObjectType": HIT_TYPE,
                        "fieldMapping": {_camel(name): {"column": {"name": name}} for name in hit},
                    }
                ],
            },
        }
    )
    documents.append(
        {
            "kind": "Command",
            "version": "v1",
            "definition": {
                "name": "SearchDocuments",
                "description": info["description"],
                "outputType": f"[{HIT_TYPE}!]!",
                "arguments": [
                    {
                        "name": _camel(name),
                        "type": opendd(argument["type"]),
                        "description": argument["description"],
                    }
                    for name, argument in info["arguments"].items()
                ],
                "source": {
                    "dataConnectorName": connector_name,
                    "dataConnectorCommand": {"function": FUNCTION_NAME},
                    "argumentMapping": {_camel(name): name for name in info["arguments"]},
                },
                "graphql": {"rootFieldName": _camel(FUNCTION_NAME), "rootFieldKind": "Query"},
            },
        }
    )
    documents.append(
        {
            "kind": "Relationship",
            "version": "v1",
            "definition": {
                "name": relationship,
                "sourceType": HIT_TYPE,
                "target": {"model": {"name": model, "relationshipType": "Object"}},
                "mapping": [
                    {
                        "source": {"fieldPath": [{"fieldName": "id"}]},
                        "target": {"modelField": [{"fieldName": model_field}]},
                    }
                ],
                "description": f"The {model} row of each hit, joined on its id.",
            },
        }
    )
    return documents


def metadata_yaml(documents: Sequence[Mapping[str, Any]]) -> str:
    """``documents`` as one HML file: YAML documents separated by ``---``."""
    import yaml  # type: ignore[import-untyped]

    return str(
        yaml.safe_dump_all(
            [dict(document) for document in documents], sort_keys=False, allow_unicode=True
        )
    )
