"""The JSON form of a :class:`~hotdata_retrieval.plan.search.SearchPlan`.

A *plan document* is plain JSON data (objects, arrays, strings, numbers, booleans, null) that
describes one search. It is what ``hdq explain --plan`` reads and ``--format json`` writes, and
what a service can accept over the wire. :data:`PLAN_JSON_SCHEMA` describes it as a JSON
Schema (draft 2020-12); ``docs/plans.md`` documents it.

>>> document = {
...     "table": "docs",
...     "branches": [
...         {"kind": "text", "column": "body", "query_text": "error E1234"},
...         {"kind": "nearest", "column": "embedding", "query_vector": [0.1, 0.2]},
...     ],
...     "filter": {"column": "lang", "op": "=", "value": "en"},
...     "limit": 5,
... }
>>> plan = plan_from_document(document)
>>> plan.fusion is not None, str(plan.table), plan.limit
(True, 'default.public.docs', 5)
>>> plan_from_document(plan_to_document(plan)) == plan
True

Decoding is strict: an unknown key, a missing key or a value of the wrong JSON type raises
:class:`~hotdata_retrieval.errors.PlanError` with a one-line message that names where in the
document the bad value is (``branches[1].query_vector``, ``filter.and[0]``, ...). So does a
document past the plan's limits: more than
:data:`~hotdata_retrieval.plan.search.MAX_FUSION_BRANCHES` branches, or a filter nested deeper
than :data:`~hotdata_retrieval.plan.filters.MAX_FILTER_DEPTH`, refused before the rest of it is
read.

A fusion's ``"method"`` names its class among the registered fusion methods
(:func:`~hotdata_retrieval.plan.search.register_fusion`); absent, it is ``"rrf"``, so documents
written before there were methods read as they always did, and a reciprocal rank fusion is
written without it. The other keys of ``"fusion"`` are the method's options, read and written
generically from the class's fields, so a new method needs no code here:
:func:`plan_json_schema` describes every registered method.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from hotdata_retrieval.errors import PlanError, position_name
from hotdata_retrieval.plan._cursor import MAX_CURSOR_CHARACTERS
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    document_alternatives,
    leaf_document,
    leaf_from_document,
    predicate_forms,
    too_deep_message,
)
from hotdata_retrieval.plan.formula import (
    FORMULA_JSON_SCHEMA,
    formula_from_document,
    formula_to_document,
)
from hotdata_retrieval.plan.names import (
    DEFAULT_CATALOG,
    DEFAULT_SCHEMA,
    MAX_UNION_TABLES,
    TableName,
    TableSource,
    TableUnion,
)
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    DEFAULT_FUSION_METHOD,
    FACET_VALUES,
    MAX_FACETS,
    MAX_FUSION_BRANCHES,
    MAX_GROUP_SIZE,
    MAX_TIE_BREAKERS,
    Bm25Search,
    Branch,
    DistanceMetric,
    Fusion,
    NearestNeighborSearch,
    QuerySyntax,
    SearchPlan,
    TieBreaker,
    VectorSearch,
    fusion_class,
    fusion_methods,
    fusion_options,
)
from hotdata_retrieval.plan.steps import PlanStep, step_class, step_kinds, step_options
from hotdata_retrieval.plan.values import (
    INT64_MAX,
    iso_text_problem,
    json_type,
    parse_iso_date,
    parse_iso_timestamp,
)

_PLAN_KEYS = (
    "table",
    "branches",
    "fusion",
    "columns",
    "limit",
    "offset",
    "filter",
    "key_column",
    "include_branch_scores",
    "tie_breakers",
    "score_name",
    "include_vectors",
    "rows_from",
    "page_scores",
    "explain_scores",
    "steps",
    "group_by",
    "group_size",
    "formula",
    "after",
    "facets",
)
_TEXT_BRANCH_KEYS = (
    "kind",
    "name",
    "table",
    "column",
    "query_text",
    "result_name",
    "filter_through_key",
)
_BM25_BRANCH_KEYS = (*_TEXT_BRANCH_KEYS, "query_syntax", "allow_empty")
_SEMANTIC_BRANCH_KEYS = (*_TEXT_BRANCH_KEYS, "scalar")
_NEAREST_BRANCH_KEYS = (
    "kind",
    "name",
    "table",
    "column",
    "query_vector",
    "metric",
    "exact",
    "result_name",
    "filter_through_key",
)
_BRANCH_KEYS: dict[str, tuple[str, ...]] = {
    Bm25Search.kind: _BM25_BRANCH_KEYS,
    VectorSearch.kind: _SEMANTIC_BRANCH_KEYS,
    NearestNeighborSearch.kind: _NEAREST_BRANCH_KEYS,
}
_METHOD_KEY = "method"
_KIND_KEY = "kind"
_CONNECTIVES = ("and", "or", "not")


def _predicate_shapes() -> str:
    """The shapes a filter object may take, for messages: one per registered marker."""
    shapes = []
    for form in predicate_forms().values():
        for marker in form.markers:
            if marker in _CONNECTIVES:
                shapes.append(f'{{"{marker}"}}')
            else:
                keys = ", ".join(f'"{key}"' for key in ("column", marker, *form.extra_keys))
                shapes.append(f"{{{keys}}}")
    return ", ".join(shapes[:-1]) + f" or {shapes[-1]}"


_METRIC_NAMES = ("cosine", "l2", "dot", "euclidean", "ip", "inner_product")
"""Metric names a document may use (exactly, in lower case); the aliases map as in
:meth:`DistanceMetric.parse`."""


# -- JSON Schema --------------------------------------------------------------------------

_IDENTIFIER: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "pattern": r'^[^"\u0000-\u001F\u007F]+$',
    "description": "An identifier; stored lower-cased. No double quote, NUL or control character.",
}

_LITERAL: dict[str, Any] = {
    "anyOf": [
        {"type": ["string", "number", "boolean"]},
        {
            "type": "object",
            "properties": {"date": {"type": "string", "format": "date"}},
            "required": ["date"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"timestamp": {"type": "string"}},
            "required": ["timestamp"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"decimal": {"type": "string"}},
            "required": ["decimal"],
            "additionalProperties": False,
        },
    ],
    "description": 'A filter literal: text, a number, a boolean, {"date": "YYYY-MM-DD"}, '
    '{"timestamp": "YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]"} (one with an offset is read '
    'in UTC) or {"decimal": "1.59"} (an exact decimal, at most 38 digits). NULL is tested '
    "with is_null, never compared.",
}

_QUERY_TEXT: dict[str, Any] = {
    "type": "string",
    "pattern": r"\S",
    "description": "The query, passed to the engine verbatim; not only white space, no NUL.",
}

_BRANCH_COMMON: dict[str, Any] = {
    "name": {
        "description": "The branch's name in fused SQL and debug columns; default: its kind, "
        "numbered when a kind repeats.",
        "anyOf": [
            {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_]*$",
                "not": {"enum": ["fused", "base"]},
            },
            {"type": "null"},
        ],
    },
    "table": {
        "anyOf": [{"$ref": "#/$defs/table_source"}, {"type": "null"}],
        "description": "Overrides the plan's table for this branch: fused branches may search "
        "different tables and unions, joined on the plan's key.",
    },
    "filter_through_key": {
        "type": ["boolean", "null"],
        "default": False,
        "description": "In a fusion, apply the plan's filter to the rows this branch's keys "
        "name in rows_from (key IN (SELECT key FROM rows_from WHERE filter)), for a side "
        "table that lacks the filter's columns.",
    },
    "column": {"$ref": "#/$defs/identifier"},
    "result_name": {
        "anyOf": [{"$ref": "#/$defs/identifier"}, {"type": "null"}],
        "description": "The result column holding this branch's raw score or distance "
        "(a single branch's default: score or _distance; a fusion returns it only when "
        "named).",
    },
}


_BM25_OPTIONS: dict[str, Any] = {
    "query_text": {
        "type": "string",
        "description": "The query; it must hold a word unless allow_empty or verbatim; no NUL.",
    },
    "query_syntax": {
        "enum": [*(member.value for member in QuerySyntax), None],
        "default": QuerySyntax.TEXT.value,
        "description": "'text': the query as written (the engine's query syntax applies); "
        "'terms': each word quoted, so no character is query syntax; 'verbatim': as 'text', "
        "but sent as written even without a word, never analysed.",
    },
    "allow_empty": {
        "type": ["boolean", "null"],
        "default": False,
        "description": "A query with no word gives no rows instead of an error.",
    },
}


_SEMANTIC_OPTIONS: dict[str, Any] = {
    "scalar": {
        "type": ["boolean", "null"],
        "default": False,
        "description": "Rank by the engine's scalar vector_distance(column, query) in a "
        "plain SELECT instead of the vector_search table function.",
    },
}


def _text_branch(
    kind: str, description: str, column: str, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {
            "kind": {"const": kind},
            **_BRANCH_COMMON,
            "column": {"$ref": "#/$defs/identifier", "description": column},
            "query_text": {"$ref": "#/$defs/query_text"},
            **(options or {}),
        },
        "required": ["kind", "column", "query_text"],
        "additionalProperties": False,
    }


def _fusion_schema(cls: type[Fusion]) -> dict[str, Any]:
    """The JSON Schema of one fusion method's ``"fusion"`` object, from its fields."""
    default = cls.method == DEFAULT_FUSION_METHOD
    method: dict[str, Any] = (
        {"enum": [cls.method, None], "description": "The fusion method; may be omitted."}
        if default
        else {"const": cls.method, "description": f"The fusion method ({cls.__name__})."}
    )
    schema: dict[str, Any] = {
        "type": "object",
        "description": " ".join((cls.__doc__ or cls.__name__).strip().split("\n\n")[0].split()),
        "properties": {
            _METHOD_KEY: method,
            **{field.name: field.metadata["schema"] for field in fusion_options(cls)},
        },
        "additionalProperties": False,
    }
    if not default:
        schema["required"] = [_METHOD_KEY]
    return schema


def _step_schema(cls: type[PlanStep]) -> dict[str, Any]:
    """The JSON Schema of one step kind's object, from its fields."""
    return {
        "type": "object",
        "description": " ".join((cls.__doc__ or cls.__name__).strip().split("\n\n")[0].split()),
        "properties": {
            _KIND_KEY: {"const": cls.kind},
            **{field.name: field.metadata["schema"] for field in step_options(cls)},
        },
        "required": [_KIND_KEY],
        "additionalProperties": False,
    }


def fusion_choice_json_schema() -> dict[str, Any]:
    """JSON Schema of a fusion choice as a request or an agent gives it
    (:class:`~hotdata_retrieval.routing.FusionChoice`): a registered method's name, or its
    ``"fusion"`` object (method and options), for every method registered now.

    >>> fusion_choice_json_schema()["anyOf"][0]["enum"][:3]  # the built-in methods first
    ['rrf', 'min_max', 'dbsf']
    """
    methods = fusion_methods()
    return {
        "anyOf": [
            {"type": "string", "enum": list(methods)},
            *(_fusion_schema(fusion_class(method)) for method in methods),
        ]
    }


_CONNECTIVE_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "description": "Every operand holds.",
        "properties": {
            "and": {
                "type": "array",
                "minItems": 2,
                "items": {"$ref": "#/$defs/predicate"},
            }
        },
        "required": ["and"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "description": "At least one operand holds.",
        "properties": {
            "or": {
                "type": "array",
                "minItems": 2,
                "items": {"$ref": "#/$defs/predicate"},
            }
        },
        "required": ["or"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "description": "The operand does not hold.",
        "properties": {"not": {"$ref": "#/$defs/predicate"}},
        "required": ["not"],
        "additionalProperties": False,
    },
]
"""The connectives' schemas; the leaves' come from the operator table."""


def plan_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a plan document, with every fusion method registered
    now (:data:`PLAN_JSON_SCHEMA` is the schema of the built-in methods)."""
    schema = copy.deepcopy(_BASE_SCHEMA)
    methods = [fusion_class(method) for method in fusion_methods()]
    schema["$defs"]["fusion"] = {
        "description": "How two or more branches are fused: one of the fusion methods, "
        f"chosen by 'method' (default '{DEFAULT_FUSION_METHOD}').",
        "oneOf": [{"$ref": f"#/$defs/fusion_{cls.method}"} for cls in methods],
    }
    for cls in methods:
        schema["$defs"][f"fusion_{cls.method}"] = _fusion_schema(cls)
    kinds = [step_class(kind) for kind in step_kinds()]
    schema["$defs"]["step"] = {
        "description": "A step run on the statement's rows, after it; 'kind' names it.",
        "oneOf": [{"$ref": f"#/$defs/step_{cls.kind}"} for cls in kinds],
    }
    for step in kinds:
        schema["$defs"][f"step_{step.kind}"] = _step_schema(step)
    leaves = [
        copy.deepcopy(dict(alternative))
        for form in predicate_forms().values()
        for alternative in document_alternatives(form)
    ]
    schema["$defs"]["predicate"]["oneOf"] = [*leaves, *_CONNECTIVE_SCHEMAS]
    return schema


_BASE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hotdata-retrieval search plan",
    "description": "One search: a single branch, or the fusion of several (reciprocal rank "
    "fusion unless 'fusion' names another method), with its filter, projection and page. "
    "Every branch needs a table: the plan's 'table', or its own. An optional key whose value "
    "is null takes its default.",
    "type": "object",
    "properties": {
        "table": {
            "anyOf": [{"$ref": "#/$defs/table_source"}, {"type": "null"}],
            "description": "The table (or union of tables) every branch searches, unless a "
            "branch names its own.",
        },
        "rows_from": {
            "anyOf": [{"$ref": "#/$defs/table_source"}, {"type": "null"}],
            "description": "For a fusion, the table or union the hits' columns are read "
            "from. Null: every table the branches search.",
        },
        "branches": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_FUSION_BRANCHES,
            "items": {"$ref": "#/$defs/branch"},
            "description": "One branch: a single-branch search. Two or more: their fusion "
            f"(at most {MAX_FUSION_BRANCHES}).",
        },
        "fusion": {
            "description": "How two or more branches are fused; only with two or more "
            "branches. Omitted or null: the defaults.",
            "anyOf": [{"$ref": "#/$defs/fusion"}, {"type": "null"}],
        },
        "columns": {
            "description": "Table columns to return, in order. Null: the key column, then the "
            "first text or semantic branch's column.",
            "anyOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"$ref": "#/$defs/identifier"},
                },
                {"type": "null"},
            ],
        },
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": INT64_MAX,
            "default": 10,
            "description": "Rows returned (top-k), written without a fraction.",
        },
        "offset": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": INT64_MAX,
            "default": 0,
            "description": "Rows skipped before them.",
        },
        "filter": {
            "description": "Applied inside every branch, before ranking. Null: no filter. "
            f"'and', 'or' and 'not' nest at most {MAX_FILTER_DEPTH} levels deep.",
            "anyOf": [{"$ref": "#/$defs/predicate"}, {"type": "null"}],
        },
        "key_column": {
            "anyOf": [{"$ref": "#/$defs/identifier"}, {"const": False}, {"type": "null"}],
            "default": "id",
            "description": "The table's unique key: fused branches are joined and tie-broken "
            "on it. false: the table has no key (a single branch then has no key tie-break; "
            "a fusion needs a key).",
        },
        "score_name": {
            "anyOf": [{"$ref": "#/$defs/identifier"}, {"const": False}, {"type": "null"}],
            "default": "score",
            "description": "A fusion's score column. false: not returned (rows are still "
            "ordered by it).",
        },
        "include_vectors": {
            "type": ["boolean", "null"],
            "default": False,
            "description": "Also return each nearest branch's vector column (a single "
            "nearest branch then loses the vector-index fast path).",
        },
        "tie_breakers": {
            "anyOf": [
                {
                    "type": "array",
                    "maxItems": MAX_TIE_BREAKERS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "column": {"$ref": "#/$defs/identifier"},
                            "descending": {"type": ["boolean", "null"], "default": False},
                        },
                        "required": ["column"],
                        "additionalProperties": False,
                    },
                },
                {"type": "null"},
            ],
            "description": "Columns ordering rows tied on the ranking, before the key: table "
            "columns or result columns, each ascending unless 'descending'.",
        },
        "include_branch_scores": {
            "type": ["boolean", "null"],
            "default": False,
            "description": "For a fusion, also return each branch's rank and raw score.",
        },
        "explain_scores": {
            "type": ["boolean", "null"],
            "default": False,
            "description": "For a fusion, also return what each hit's fused score is made of: "
            "each branch's rank, raw score and (score-normalized fusions) normalization bounds, "
            "from which each branch's normalized value and weighted contribution follow. Needs "
            "include_branch_scores (its default when this is true).",
        },
        "formula": {"anyOf": [FORMULA_JSON_SCHEMA, {"type": "null"}], "default": None},
        "page_scores": {
            "anyOf": [
                {
                    "type": "array",
                    "maxItems": MAX_FUSION_BRANCHES,
                    "uniqueItems": True,
                    "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                },
                {"type": "null"},
            ],
            "default": [],
            "description": "For a fusion, the names of nearest-neighbour branches whose "
            "distance every hit carries: computed from the hit's vector where the branch did "
            "not return it (its rank stays null). The branch must search rows_from's tables, "
            "and its distance must be returned (a result_name, or include_branch_scores).",
        },
        "steps": {
            "anyOf": [
                {"type": "array", "items": {"$ref": "#/$defs/step"}},
                {"type": "null"},
            ],
            "default": [],
            "description": "Steps run on the statement's rows after it, each kind at most "
            "once, in their stated order whatever the array's; limit and offset then cut "
            "the page from their rows, and the statement fetches the candidates they need.",
        },
        "group_by": {
            "anyOf": [{"$ref": "#/$defs/identifier"}, {"type": "null"}],
            "default": None,
            "description": "A column grouping the rows (a chunk's parent document): the page "
            "holds limit groups, each with its best group_size rows, groups ranked by their "
            "best row; rows whose value is null are left out; offset counts groups.",
        },
        "group_size": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_GROUP_SIZE,
            "default": 1,
            "description": "Rows kept per group (only with group_by).",
        },
        "after": {
            "type": ["string", "null"],
            "maxLength": MAX_CURSOR_CHARACTERS,
            "default": None,
            "description": "A cursor token a result returned as next_after: the page holds "
            "the rows ranked after that result's last row (no offset, no tie-breakers, no "
            "groups); refused when the search's ranking changed.",
        },
        "facets": {
            "anyOf": [
                {
                    "type": "array",
                    "items": {"$ref": "#/$defs/identifier"},
                    "maxItems": MAX_FACETS,
                },
                {"type": "null"},
            ],
            "default": [],
            "description": "Table columns whose values are counted over the rows the ranking "
            "considered (a fusion's first depth fused rows, a single branch's first "
            f"max({DEFAULT_DEPTH}, limit + offset) rows), returned with the page: the "
            f"{FACET_VALUES} most frequent values each, NULL not counted.",
        },
    },
    "required": ["branches"],
    "additionalProperties": False,
    "$defs": {
        "identifier": _IDENTIFIER,
        "table": {
            "type": "string",
            "minLength": 1,
            "description": "'table', 'schema.table' or 'catalog.schema.table'; completed from "
            "the default catalog ('default') and schema ('public'). Parts may be "
            "double-quoted.",
        },
        "table_source": {
            "anyOf": [
                {"$ref": "#/$defs/table"},
                {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": MAX_UNION_TABLES,
                    "uniqueItems": True,
                    "items": {"$ref": "#/$defs/table"},
                    "description": "A UNION ALL of tables sharing the searched, key and "
                    "projected columns; each member is searched under its own name.",
                },
            ]
        },
        "query_text": _QUERY_TEXT,
        "literal": _LITERAL,
        "branch": {
            "oneOf": [
                {"$ref": "#/$defs/text_branch"},
                {"$ref": "#/$defs/semantic_branch"},
                {"$ref": "#/$defs/nearest_branch"},
            ]
        },
        "text_branch": _text_branch(
            "text",
            "BM25 full-text search (the engine's bm25_search).",
            "The BM25-indexed text column.",
            _BM25_OPTIONS,
        ),
        "semantic_branch": _text_branch(
            "semantic",
            "Semantic search embedded by the engine (vector_search).",
            "The text column the provider-backed vector index was built over.",
            _SEMANTIC_OPTIONS,
        ),
        "nearest_branch": {
            "type": "object",
            "description": "Nearest-neighbour search with a caller-supplied query vector.",
            "properties": {
                "kind": {"const": "nearest"},
                **_BRANCH_COMMON,
                "column": {
                    "$ref": "#/$defs/identifier",
                    "description": "The vector column; never projected.",
                },
                "query_vector": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "number"},
                    "description": "The query embedding: finite numbers, from the same model "
                    "as the column.",
                },
                "metric": {
                    "enum": [*_METRIC_NAMES, None],
                    "default": "cosine",
                    "description": "Must match the vector index's metric; 'euclidean' means "
                    "l2, 'ip' and 'inner_product' mean dot.",
                },
                "exact": {
                    "type": ["boolean", "null"],
                    "default": False,
                    "description": "Scan every row instead of asking a vector index: exact "
                    "rows, at the cost of a scan.",
                },
            },
            "required": ["kind", "column", "query_vector"],
            "additionalProperties": False,
        },
        "predicate": {"oneOf": []},
    },
}
"""The parts of the schema that do not depend on the registered fusion methods."""

PLAN_JSON_SCHEMA: dict[str, Any] = plan_json_schema()
"""JSON Schema (draft 2020-12) of a plan document, with the built-in fusion methods
(:func:`plan_json_schema` includes methods registered later).

It states the document's shape; a few rules it cannot state are checked when decoding: a
fusion's weights count, ``depth >= limit + offset``, unique branch names, where
``filter_through_key`` and ``rows_from`` may be used, and the columns a plan may project.
"""


# -- decoding -----------------------------------------------------------------------------


def _fail(message: str, *, field: str, value: Any) -> NoReturn:
    raise PlanError(message, field=field, value=value)


@contextmanager
def _at(where: str) -> Iterator[None]:
    """Prefix the message of a :class:`PlanError` raised inside with ``where``."""
    try:
        yield
    except PlanError as error:
        raise type(error)(f"{where}: {error}", field=error.field, value=error.value) from None


def _object(
    value: Any, where: str, allowed: Sequence[str], *, also: Sequence[str] = ()
) -> Mapping[str, Any]:
    """``value`` if it is an object whose keys are all in ``allowed`` (or ``also``, keys the
    message does not list)."""
    if not isinstance(value, Mapping):
        _fail(f"{where} must be an object, got {json_type(value)}", field=where, value=value)
    for key in value:
        if not isinstance(key, str):
            _fail(f"{where} has a non-string key {key!r}", field=where, value=key)
        if key not in allowed and key not in also:
            _fail(
                f"unknown key {key!r} in {where}; expected one of {', '.join(allowed)}",
                field=key,
                value=value[key],
            )
    return value


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        _fail(f"{where} is missing the required key {key!r}", field=key, value=None)
    return obj[key]


def _array(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, (list, tuple)):
        _fail(f"{where} must be an array, got {json_type(value)}", field=where, value=value)
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(f"{where} must be a string, got {json_type(value)}", field=where, value=value)
    return value


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        _fail(f"{where} must be true or false, got {value!r}", field=where, value=value)
    return value


def _optional_boolean(obj: Mapping[str, Any], key: str) -> bool:
    """``obj[key]`` as a boolean; absent or null: ``False``."""
    value = obj.get(key)
    return False if value is None else _boolean(value, key)


def _number(value: Any, where: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(f"{where} must be a number, got {json_type(value)}", field=where, value=value)
    return value


def _literal(value: Any, where: str) -> Any:
    if value is None:
        _fail(
            f'{where} must not be null; test for NULL with {{"column": ..., "is_null": true}}',
            field=where,
            value=value,
        )
    if isinstance(value, Mapping) and len(value) == 1 and ("date" in value or "timestamp" in value):
        return _temporal(value, where)
    if isinstance(value, Mapping) and len(value) == 1 and "decimal" in value:
        return _decimal(value["decimal"], f"{where}.decimal")
    if not isinstance(value, (str, int, float)):
        _fail(
            f'{where} must be a string, number, boolean, {{"date": ...}}, '
            f'{{"timestamp": ...}} or {{"decimal": ...}}, got {json_type(value)}',
            field=where,
            value=value,
        )
    return value


_DECIMAL_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)
"""A decimal as a plan document writes it: digits, a point and digits, no exponent."""


def _decimal(value: Any, where: str) -> decimal.Decimal:
    """``{"decimal": "1.59"}``'s text as the exact ``decimal.Decimal`` (JSON's numbers are
    floats to most readers)."""
    text = _string(value, where)
    if not _DECIMAL_TEXT.fullmatch(text):
        _fail(
            f"{where}: {text!r} is not a decimal (digits, optionally a point and digits)",
            field=where,
            value=text,
        )
    return decimal.Decimal(text)


def _temporal(value: Mapping[str, Any], where: str) -> datetime.date | datetime.datetime:
    """``{"date": "YYYY-MM-DD"}`` or ``{"timestamp": "<ISO 8601>"}`` as the Python value."""
    kind = "date" if "date" in value else "timestamp"
    text = _string(value[kind], f"{where}.{kind}")
    parsed = parse_iso_date(text) if kind == "date" else parse_iso_timestamp(text)
    if parsed is None:
        _fail(
            f"{where}.{kind}: {text!r} is {iso_text_problem(text, kind)}",
            field=where,
            value=text,
        )
    return parsed


def literal_document(value: Any) -> Any:
    """A filter literal as a plan document writes it: a date as ``{"date": ...}``, a
    timestamp as ``{"timestamp": ...}``, a decimal as ``{"decimal": ...}`` (its digits,
    without an exponent), anything else as itself.

    >>> literal_document(datetime.date(2024, 3, 1))
    {'date': '2024-03-01'}
    >>> literal_document(decimal.Decimal("1.50"))
    {'decimal': '1.50'}
    """
    if isinstance(value, decimal.Decimal):
        return {"decimal": format(value, "f")}
    if isinstance(value, datetime.datetime):
        return {"timestamp": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"date": value.isoformat()}
    return value


def _table(value: Any, where: str, *, default_catalog: str, default_schema: str) -> TableSource:
    """A table name, or an array of them (a :class:`TableUnion`)."""
    if isinstance(value, (list, tuple)):
        members = [
            _table_name(item, f"{where}[{index}]", default_catalog, default_schema)
            for index, item in enumerate(value)
        ]
        if where == "table":
            return TableUnion(members)
        with _at(where):
            return TableUnion(members)
    return _table_name(value, where, default_catalog, default_schema)


def _table_name(value: Any, where: str, default_catalog: str, default_schema: str) -> TableName:
    if not isinstance(value, str):
        _fail(
            f"{where} must be a table name or an array of table names, got {json_type(value)}",
            field=where,
            value=value,
        )
    defaults = {"default_catalog": default_catalog, "default_schema": default_schema}
    if where == "table":
        return TableName.parse(value, **defaults)
    with _at(where):
        return TableName.parse(value, **defaults)


def _branch(
    value: Any,
    where: str,
    *,
    table: TableSource | None,
    default_catalog: str,
    default_schema: str,
) -> Branch:
    if not isinstance(value, Mapping):
        _fail(f"{where} must be an object, got {json_type(value)}", field=where, value=value)
    kind = _required(value, "kind", where)
    if not isinstance(kind, str) or kind not in _BRANCH_KEYS:
        known = ", ".join(repr(name) for name in _BRANCH_KEYS)
        _fail(f"{where}.kind must be one of {known}, got {kind!r}", field="kind", value=kind)
    branch = _object(value, f"{where} (kind {kind!r})", _BRANCH_KEYS[kind])
    if branch.get("table") is not None:
        table = _table(
            branch["table"],
            f"{where}.table",
            default_catalog=default_catalog,
            default_schema=default_schema,
        )
    if table is None:
        _fail(
            f"{where} has no table; give 'table' at the top level of the document or in the branch",
            field="table",
            value=None,
        )
    column = _required(branch, "column", where)
    name = branch.get("name")
    if kind == NearestNeighborSearch.kind:
        raw_vector = _required(branch, "query_vector", where)
        with _at(where):
            vector = _array(raw_vector, "query_vector")
            for position, item in enumerate(vector):
                if isinstance(item, bool) or not isinstance(item, (int, float)):
                    _fail(
                        f"query_vector must hold numbers; {position_name(position, len(vector))}"
                        f" is {json_type(item)} {item!r}",
                        field="query_vector",
                        value=item,
                    )
            metric = branch.get("metric")
            if metric is not None and metric not in _METRIC_NAMES:
                _fail(
                    f"metric must be one of {', '.join(_METRIC_NAMES)}, got {metric!r}",
                    field="metric",
                    value=metric,
                )
            return NearestNeighborSearch(
                table=table,
                column=column,
                query_vector=vector,
                metric=DistanceMetric.COSINE if metric is None else metric,
                name=name,
                exact=_optional_boolean(branch, "exact"),
                result_name=branch.get("result_name"),
                filter_through_key=_optional_boolean(branch, "filter_through_key"),
            )
    query_text = _required(branch, "query_text", where)
    with _at(where):
        if kind == Bm25Search.kind:
            return Bm25Search(
                table=table,
                column=column,
                query_text=query_text,
                name=name,
                result_name=branch.get("result_name"),
                query_syntax="text"
                if branch.get("query_syntax") is None
                else branch["query_syntax"],
                allow_empty=_optional_boolean(branch, "allow_empty"),
                filter_through_key=_optional_boolean(branch, "filter_through_key"),
            )
        return VectorSearch(
            table=table,
            column=column,
            query_text=query_text,
            name=name,
            result_name=branch.get("result_name"),
            scalar=_optional_boolean(branch, "scalar"),
            filter_through_key=_optional_boolean(branch, "filter_through_key"),
        )


def _predicate(value: Any, where: str, depth: int = 0) -> Predicate:
    """Decode the predicate at ``where``, under ``depth`` AND/OR/NOT objects.

    A connective one level past :data:`MAX_FILTER_DEPTH` is refused before its operands are
    read, so a document nested thousands deep costs no more than one at the limit.
    """
    if not isinstance(value, Mapping):
        _fail(f"{where} must be an object, got {json_type(value)}", field=where, value=value)
    connectives = [key for key in _CONNECTIVES if key in value]
    if connectives:
        depth += 1
        if depth > MAX_FILTER_DEPTH:
            _fail(f"{where}: {too_deep_message(depth)}", field="filter", value=depth)
        if len(value) != 1:
            others = ", ".join(repr(key) for key in value if key != connectives[0])
            _fail(
                f"{where}: {connectives[0]!r} must be the only key of its object, "
                f"found {others} beside it",
                field=connectives[0],
                value=value,
            )
        connective = connectives[0]
        if connective == "not":
            return Not(operand=_predicate(value["not"], f"{where}.not", depth))
        operands = _array(value[connective], f"{where}.{connective}")
        if len(operands) < 2:
            _fail(
                f"{where}.{connective} needs at least two operands, got {len(operands)}",
                field=connective,
                value=operands,
            )
        parsed = [
            _predicate(operand, f"{where}.{connective}[{index}]", depth)
            for index, operand in enumerate(operands)
        ]
        return And(operands=parsed) if connective == "and" else Or(operands=parsed)
    forms = [
        (form, marker)
        for form in predicate_forms().values()
        if form.leaf
        for marker in form.markers
        if marker in value
    ]
    if "column" not in value or len(forms) != 1:
        found = ", ".join(repr(key) for key in value) or "no keys"
        _fail(
            f"{where} must be one of {_predicate_shapes()}; found {found}",
            field=where,
            value=value,
        )
    form, marker = forms[0]
    predicate = _object(value, where, ("column", marker, *form.extra_keys))
    for key in form.extra_keys:
        _required(predicate, key, where)
    fields = _Fields(predicate, where)
    with _at(where):
        node: Predicate = leaf_from_document(form, fields, marker)
        return node


class _Fields:
    """A predicate object's fields, read with errors naming where they are
    (:class:`~hotdata_retrieval.plan.filters.DocumentFields`)."""

    def __init__(self, fields: Mapping[str, Any], where: str) -> None:
        self._fields = fields
        self._where = where
        self.column = fields["column"]

    def _get(self, key: str) -> Any:
        return _required(self._fields, key, self._where)

    def string(self, key: str) -> str:
        return _string(self._get(key), key)

    def boolean(self, key: str) -> bool:
        return _boolean(self._get(key), key)

    def literal(self, key: str) -> Any:
        return _literal(self._get(key), key)

    def literals(self, key: str) -> list[Any]:
        values = _array(self._get(key), key)
        return [_literal(item, f"{key}[{index}]") for index, item in enumerate(values)]


def _array_items(schema: Mapping[str, Any]) -> str | bool | None:
    """What a fusion option's schema says of arrays: ``False`` if the value need not be an
    array, else the JSON type of its items (``None``: any)."""
    alternatives = [
        alternative
        for alternative in schema.get("anyOf", [schema])
        if alternative.get("type") != "null"
    ]
    if not alternatives or any(alternative.get("type") != "array" for alternative in alternatives):
        return False
    items = alternatives[0].get("items", {})
    kind = items.get("type") if isinstance(items, Mapping) else None
    return kind if isinstance(kind, str) else None


def _tie_breaker(value: Any, where: str) -> TieBreaker:
    item = _object(value, where, ("column", "descending"))
    column = _required(item, "column", where)
    descending = item.get("descending")
    with _at(where):
        return TieBreaker(
            column=column,
            descending=False if descending is None else _boolean(descending, "descending"),
        )


def _fusion(value: Any, branches: list[Branch]) -> Fusion:
    """Decode ``"fusion"``: its ``"method"`` picks the registered class, whose options are the
    other keys (an option that is null or absent takes its default)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        _fail(f"fusion must be an object, got {json_type(value)}", field="fusion", value=value)
    method = value.get(_METHOD_KEY)
    if method is None:
        method = DEFAULT_FUSION_METHOD
    if not isinstance(method, str) or method not in fusion_methods():
        known = ", ".join(repr(name) for name in fusion_methods())
        hint = ""
        if isinstance(method, str) and method.replace("-", "_") in fusion_methods():
            hint = f" (a document spells it {method.replace('-', '_')!r})"
        _fail(
            f"fusion.method must be one of {known}, got {method!r}{hint}",
            field="method",
            value=method,
        )
    cls = fusion_class(method)
    options = fusion_options(cls)
    fusion = _object(value, "fusion", [field.name for field in options], also=[_METHOD_KEY])
    arguments: dict[str, Any] = {}
    for field in options:
        option = fusion.get(field.name)
        if option is None:
            continue
        items = _array_items(field.metadata["schema"])
        if items is not False:
            where = f"fusion.{field.name}"
            for index, item in enumerate(_array(option, where)):
                if items == "number":
                    _number(item, f"{where}[{index}]")
        arguments[field.name] = option
    with _at("fusion"):
        return cls(branches=branches, **arguments)


def _step(value: Any, where: str) -> PlanStep:
    """Decode one step: its ``"kind"`` picks the registered class, whose options are the
    other keys (an option that is null or absent takes its default)."""
    if not isinstance(value, Mapping):
        _fail(f"{where} must be an object, got {json_type(value)}", field="steps", value=value)
    kind = value.get(_KIND_KEY)
    if kind not in step_kinds():
        known = ", ".join(repr(name) for name in step_kinds())
        _fail(f"{where}.kind must be one of {known}, got {kind!r}", field="kind", value=kind)
    cls = step_class(kind)
    options = step_options(cls)
    step = _object(value, where, [field.name for field in options], also=[_KIND_KEY])
    arguments = {
        field.name: step[field.name] for field in options if step.get(field.name) is not None
    }
    with _at(where):
        return cls(**arguments)


def plan_from_document(
    data: Mapping[str, Any],
    *,
    default_catalog: str = DEFAULT_CATALOG,
    default_schema: str = DEFAULT_SCHEMA,
) -> SearchPlan:
    """Build a :class:`SearchPlan` from a plan document (parsed JSON).

    The document's shape is :data:`PLAN_JSON_SCHEMA`: ``{"table": ..., "branches": [...],
    "fusion": {...}, "columns": [...], "limit": ..., "offset": ..., "filter": {...},
    "key_column": ..., "include_branch_scores": ..., "tie_breakers": [...]}``; only
    ``branches`` is required (``"key_column": false`` says the table has no key). One
    branch gives a single-branch plan, two or more a fusion: the registered method that
    ``fusion.method`` names, :class:`~hotdata_retrieval.plan.search.ReciprocalRankFusion`
    (``"rrf"``) when it names none. A key whose value is ``null`` takes its default.

    Args:
        data: the document, e.g. from :func:`json.loads`; arrays may be lists or tuples.
        default_catalog: catalog that completes 1- and 2-part table names.
        default_schema: schema that completes 1-part table names.

    Returns:
        The plan; ``plan_from_document(plan_to_document(plan)) == plan`` for every plan.

    Raises:
        PlanError: an unknown key, a missing required key, a value of the wrong JSON type, or
            any value the plan itself rejects; the one-line message names where the bad value
            is, e.g. ``branches[1]: query_vector must not be empty``.
            :class:`~hotdata_retrieval.errors.TableNameError` (a ``PlanError``) for a bad
            table name.
    """
    document = _object(data, "the plan document", _PLAN_KEYS)
    table = None
    if document.get("table") is not None:
        table = _table(
            document["table"],
            "table",
            default_catalog=default_catalog,
            default_schema=default_schema,
        )
    raw_branches = _array(_required(document, "branches", "the plan document"), "branches")
    if not raw_branches:
        _fail("branches must hold at least one branch, got 0", field="branches", value=[])
    if len(raw_branches) > MAX_FUSION_BRANCHES:
        _fail(
            f"branches holds {len(raw_branches)} branches; at most {MAX_FUSION_BRANCHES} "
            "(MAX_FUSION_BRANCHES)",
            field="branches",
            value=len(raw_branches),
        )
    branches = [
        _branch(
            value,
            f"branches[{index}]",
            table=table,
            default_catalog=default_catalog,
            default_schema=default_schema,
        )
        for index, value in enumerate(raw_branches)
    ]
    source: Branch | Fusion
    if len(branches) == 1:
        if document.get("fusion") is not None:
            _fail(
                "'fusion' needs at least two branches; this document has one",
                field="fusion",
                value=document["fusion"],
            )
        source = branches[0]
    else:
        source = _fusion(document.get("fusion"), branches)

    options: dict[str, Any] = {}
    columns = document.get("columns")
    if columns is not None:
        options["columns"] = _array(columns, "columns")
    for key in ("limit", "offset", "key_column"):
        if document.get(key) is not None:
            options[key] = document[key]
    if document.get("key_column") is False:
        options["key_column"] = None
    elif document.get("key_column") is True:
        _fail("key_column must be a column name or false, got true", field="key_column", value=True)
    if document.get("tie_breakers") is not None:
        options["tie_breakers"] = [
            _tie_breaker(item, f"tie_breakers[{index}]")
            for index, item in enumerate(_array(document["tie_breakers"], "tie_breakers"))
        ]
    if document.get("score_name") is False:
        options["score_name"] = None
    elif document.get("score_name") is not None:
        options["score_name"] = document["score_name"]
    if document.get("include_vectors") is not None:
        options["include_vectors"] = _boolean(document["include_vectors"], "include_vectors")
    if document.get("formula") is not None:
        options["formula"] = formula_from_document(document["formula"])
    if document.get("explain_scores") is not None:
        options["explain_scores"] = _boolean(document["explain_scores"], "explain_scores")
        options.setdefault("include_branch_scores", options["explain_scores"])
    if document.get("include_branch_scores") is not None:
        options["include_branch_scores"] = _boolean(
            document["include_branch_scores"], "include_branch_scores"
        )
    if document.get("filter") is not None:
        options["filter"] = _predicate(document["filter"], "filter")
    if document.get("page_scores") is not None:
        options["page_scores"] = [
            _string(name, f"page_scores[{index}]")
            for index, name in enumerate(_array(document["page_scores"], "page_scores"))
        ]
    if document.get("steps") is not None:
        options["steps"] = [
            _step(item, f"steps[{index}]")
            for index, item in enumerate(_array(document["steps"], "steps"))
        ]
    if document.get("group_by") is not None:
        options["group_by"] = _string(document["group_by"], "group_by")
    if document.get("group_size") is not None:
        options["group_size"] = document["group_size"]
    if document.get("after") is not None:
        options["after"] = _string(document["after"], "after")
    if document.get("facets") is not None:
        options["facets"] = [
            _string(name, f"facets[{index}]")
            for index, name in enumerate(_array(document["facets"], "facets"))
        ]
    if document.get("rows_from") is not None:
        options["rows_from"] = _table(
            document["rows_from"],
            "rows_from",
            default_catalog=default_catalog,
            default_schema=default_schema,
        )
    return SearchPlan(source=source, **options)


# -- encoding -----------------------------------------------------------------------------


def _table_document(table: TableSource) -> str | list[str]:
    """A table as a document writes it: its fully qualified name, or a union's list."""
    if isinstance(table, TableUnion):
        return [str(member) for member in table.members]
    return str(table)


def _branch_document(branch: Branch, *, with_table: bool) -> dict[str, Any]:
    document: dict[str, Any] = {"kind": branch.kind, "name": branch.name}
    if with_table:
        document["table"] = _table_document(branch.table)
    document["column"] = branch.column
    if isinstance(branch, NearestNeighborSearch):
        document["query_vector"] = list(branch.query_vector)
        document["metric"] = branch.metric.value
        document["exact"] = branch.exact
    else:
        document["query_text"] = branch.query_text
    if isinstance(branch, Bm25Search):
        document["query_syntax"] = branch.query_syntax.value
        document["allow_empty"] = branch.allow_empty
    if isinstance(branch, VectorSearch):
        document["scalar"] = branch.scalar
    document["result_name"] = branch.result_name
    document["filter_through_key"] = branch.filter_through_key
    return document


class _PredicateDocument(PredicateVisitor[dict[str, Any]]):
    """The document form of a predicate (the inverse of :func:`_predicate`): a leaf's keys
    from its row (:func:`~hotdata_retrieval.plan.filters.leaf_document`)."""

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> dict[str, Any]:
        keys = leaf_document(form, node)
        return {"column": node.column, **{key: _literal_json(v) for key, v in keys.items()}}

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

    def visit_and(self, node: And) -> dict[str, Any]:
        return {"and": [self.predicate(operand) for operand in node.operands]}

    def visit_or(self, node: Or) -> dict[str, Any]:
        return {"or": [self.predicate(operand) for operand in node.operands]}

    def visit_not(self, node: Not) -> dict[str, Any]:
        return {"not": self.predicate(node.operand)}


def _literal_json(value: Any) -> Any:
    """A leaf's document value: a literal (:func:`literal_document`), a list of them, or
    any other JSON value as itself."""
    if isinstance(value, (list, tuple)):
        return [literal_document(item) for item in value]
    return literal_document(value)


def _json_value(value: Any) -> Any:
    """A fusion option as JSON data (tuples become lists)."""
    if isinstance(value, tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _fusion_document(fusion: Fusion) -> dict[str, Any]:
    """``{["method",] <option>: <value>, ...}``: the method unless it is the default."""
    cls = type(fusion)
    document: dict[str, Any] = {}
    if cls.method != DEFAULT_FUSION_METHOD:
        document[_METHOD_KEY] = cls.method
    for field in fusion_options(cls):
        document[field.name] = _json_value(getattr(fusion, field.name))
    return document


def plan_to_document(plan: SearchPlan) -> dict[str, Any]:
    """The plan document of ``plan``: a dict ready for :func:`json.dumps`.

    Every key is written, defaults included (``"fusion"`` only for a fusion, and its
    ``"method"`` only when it is not ``"rrf"``); the table is written once, at the top level,
    fully qualified (a union as the list of its members) when every branch searches it, else
    in each branch, the top level's ``null``. Query vectors keep full precision
    (``json.dumps`` writes each float with the shortest text that round-trips).

    Returns:
        ``{"table", "branches", ["fusion",] "columns", "limit", "offset", "filter",
        "key_column", "include_branch_scores", "tie_breakers", "score_name",
        "include_vectors", "rows_from", "page_scores", "explain_scores",
        "steps", "group_by", "group_size",
        "formula", "after", "facets"}``; see
        :data:`PLAN_JSON_SCHEMA`.

    >>> from hotdata_retrieval.plan.search import Bm25Search, SearchPlan
    >>> document = plan_to_document(SearchPlan(source=Bm25Search(table="docs", column="body",
    ...                                                          query_text="q")))
    >>> document["branches"][0]["query_text"], document["key_column"]
    ('q', 'id')
    """
    sources = {branch.table for branch in plan.branches}
    shared = next(iter(sources)) if len(sources) == 1 else None
    document: dict[str, Any] = {
        "table": None if shared is None else _table_document(shared),
        "branches": [
            _branch_document(branch, with_table=shared is None) for branch in plan.branches
        ],
    }
    fusion = plan.fusion
    if fusion is not None:
        document["fusion"] = _fusion_document(fusion)
    document["columns"] = None if plan.columns is None else list(plan.columns)
    document["limit"] = plan.limit
    document["offset"] = plan.offset
    document["filter"] = (
        None if plan.filter is None else _PredicateDocument().predicate(plan.filter)
    )
    document["key_column"] = False if plan.key_column is None else plan.key_column
    document["include_branch_scores"] = plan.include_branch_scores
    document["score_name"] = False if plan.score_name is None else plan.score_name
    document["include_vectors"] = plan.include_vectors
    document["tie_breakers"] = [
        {"column": breaker.column, "descending": breaker.descending}
        for breaker in plan.tie_breakers
    ]
    document["rows_from"] = None if plan.rows_from is None else _table_document(plan.rows_from)
    document["page_scores"] = list(plan.page_scores)
    document["explain_scores"] = plan.explain_scores
    document["steps"] = [
        {
            _KIND_KEY: step.kind,
            **{
                field.name: _json_value(getattr(step, field.name))
                for field in step_options(type(step))
            },
        }
        for step in plan.steps
    ]
    document["group_by"] = plan.group_by
    document["group_size"] = plan.group_size
    document["formula"] = None if plan.formula is None else formula_to_document(plan.formula)
    document["after"] = plan.after
    document["facets"] = list(plan.facets)
    return document
