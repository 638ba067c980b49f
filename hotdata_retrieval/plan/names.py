"""Identifiers and fully qualified table names.

The Hotdata engine stores every identifier in lower case (a source column ``driverId`` is
exposed as ``driverid``, and quoting the mixed-case form fails: engine contract §4, from
hotdata-langchain ``docs/engine-contract.md``). Its vector-index rewrite builds its lookup key
from the table reference *as written*, so a 2-part or bare reference silently misses an index
registered under ``catalog::schema::table`` (engine contract §2.4, datafusion-vector-search-ext
``src/rule.rs`` ``table_ref_to_str``; ext issue #32). Hence every identifier here is
lower-cased, and every table name is completed to three parts before any SQL is produced.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from hotdata_retrieval.errors import PlanError, TableNameError
from hotdata_retrieval.plan.values import check_encodable

DEFAULT_CATALOG = "default"
"""Catalog a managed Hotdata database's tables answer to (engine contract §4)."""

DEFAULT_SCHEMA = "public"
"""Default schema of managed tables in hotdata-framework (``databases.DEFAULT_SCHEMA``)."""

_BARE_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_FORBIDDEN_IN_IDENTIFIER = re.compile(r'[\x00-\x1f\x7f"]')


def is_bare_identifier(text: str) -> bool:
    """Return whether ``text`` (already lower-cased) can be written without quotes.

    Reserved words are a dialect matter: the compiler quotes them even when this is true.
    """
    return _BARE_IDENTIFIER.fullmatch(text) is not None


def fold_identifier(text: str) -> str:
    """``text`` as every engine stores a name: lower-cased, in Unicode's composed form (NFC),
    so a name typed with a decomposed accent (``"cafe\u0301"``, as macOS file names and some
    keyboards give it) is the name typed with the composed one (``"caf\u00e9"``): they look
    alike, and without it a filter or a column list naming one missed the other.

    >>> fold_identifier("Cafe\u0301") == fold_identifier("CAF\u00c9") == "caf\u00e9"
    True
    """
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).lower())


def normalize_identifier(value: Any, *, label: str = "identifier") -> str:
    """Validate one identifier and return it lower-cased and composed (NFC), as the engine
    stores it (:func:`fold_identifier`).

    Args:
        value: the identifier as given (a column name, one part of a table name, ...).
        label: how to name the value in an error message, e.g. ``"column"``.

    Returns:
        The lower-cased, composed identifier. Whether it needs quoting is decided when
        rendering.

    Raises:
        PlanError: ``value`` is not a string, is empty, or holds a double quote, a NUL byte or
            another control character (none can appear inside a quoted identifier).
    """
    if type(value) is str:
        known = _NORMALIZED.get(value)
        if known is not None:
            return known
    if not isinstance(value, str):
        raise PlanError(f"{label} must be a string, got {value!r}", field=label, value=value)
    if value == "":
        raise PlanError(f"{label} must not be empty", field=label, value=value)
    if _FORBIDDEN_IN_IDENTIFIER.search(value) is not None:
        if "\x00" in value:
            problem = "a NUL byte"
        elif '"' in value:
            problem = "a double quote"
        else:
            problem = "control characters"
        raise PlanError(
            f"{label} must not contain {problem}, got {value!r}", field=label, value=value
        )
    check_encodable(value, label=label)
    normalized = fold_identifier(value)
    if type(value) is str:
        if len(_NORMALIZED) >= _NORMALIZED_MOST:
            _NORMALIZED.clear()
        _NORMALIZED[value] = normalized
    return normalized


_NORMALIZED: dict[str, str] = {}
"""Identifiers :func:`normalize_identifier` accepted, to their normalized form: a plan names
the same few tables and columns again and again."""

_NORMALIZED_MOST = 4096
"""The most identifiers :data:`_NORMALIZED` holds (it starts over when full)."""


def _normalize_table_part(value: Any, label: str) -> str:
    try:
        return normalize_identifier(value, label=label)
    except PlanError as error:
        raise TableNameError(str(error), field=label, value=value) from None


def _split_reference(text: str) -> list[str]:
    """Split ``a.b."c.d"`` into its parts, honouring double-quoted parts."""
    parts: list[str] = []
    current: list[str] = []
    position = 0
    quoted_part = False
    while position < len(text):
        character = text[position]
        if character == '"':
            if current or quoted_part:
                raise TableNameError(
                    f"table name {text!r}: a double quote may only open a part",
                    field="table",
                    value=text,
                )
            closing = text.find('"', position + 1)
            if closing == -1:
                raise TableNameError(
                    f"table name {text!r} has an unterminated quoted part",
                    field="table",
                    value=text,
                )
            inner = text[position + 1 : closing]
            if closing + 1 < len(text) and text[closing + 1] == '"':
                raise TableNameError(
                    f"table name {text!r}: a part may not contain a double quote",
                    field="table",
                    value=text,
                )
            if inner == "":
                raise TableNameError(
                    f"table name {text!r} has an empty part", field="table", value=text
                )
            current.append(inner)
            quoted_part = True
            position = closing + 1
            if position < len(text) and text[position] != ".":
                raise TableNameError(
                    f"table name {text!r}: expected '.' after a quoted part",
                    field="table",
                    value=text,
                )
            continue
        if character == ".":
            parts.append("".join(current))
            current = []
            quoted_part = False
        else:
            current.append(character)
        position += 1
    parts.append("".join(current))
    return parts


def _catalog_part(value: str) -> str:
    return _normalize_table_part(value, "catalog")


def _schema_part(value: str) -> str:
    return _normalize_table_part(value, "schema")


def _name_part(value: str) -> str:
    return _normalize_table_part(value, "table")


@attrs.frozen(kw_only=True, cache_hash=True)  # hashed many times a search, by every layer
class TableName:
    """A fully qualified table reference: ``catalog.schema.name``.

    Every part is lower-cased, as the engine stores identifiers. A part that is not a bare
    identifier (``[a-z_][a-z0-9_]*``) is quoted when rendered; a part holding a double quote
    or a NUL byte, or an empty part, is rejected.

    Build one from text with :meth:`parse`; construct it directly when the three parts are
    already known.

    Raises:
        TableNameError: a part is empty, not a string, or holds ``"`` or NUL.

    >>> TableName.parse("Docs")
    TableName(catalog='default', schema='public', name='docs')
    >>> str(TableName.parse('analytics."Support Tickets"'))
    'default.analytics."support tickets"'
    """

    catalog: str = attrs.field(converter=_catalog_part)
    schema: str = attrs.field(converter=_schema_part)
    name: str = attrs.field(converter=_name_part)

    @classmethod
    def parse(
        cls,
        text: str | TableName,
        *,
        default_catalog: str = DEFAULT_CATALOG,
        default_schema: str = DEFAULT_SCHEMA,
    ) -> TableName:
        """Parse a 1-, 2- or 3-part reference and complete it from the defaults.

        ``docs`` becomes ``default.public.docs``; ``sales.docs`` becomes
        ``default.sales.docs``. Parts may be double-quoted (``"my table"``); quoting does not
        preserve case, since the engine stores lower case.

        Args:
            text: the reference; a :class:`TableName` is returned unchanged.
            default_catalog: catalog for 1- and 2-part references (the engine's ``default``).
            default_schema: schema for 1-part references (``public``).

        Raises:
            TableNameError: empty text, an empty part, more than three parts, a part holding a
                double quote or NUL byte, or an unterminated quote.
        """
        if isinstance(text, TableName):
            return text
        if not isinstance(text, str):
            raise TableNameError(
                f"table name must be a string, got {text!r}", field="table", value=text
            )
        if "\x00" in text:
            raise TableNameError(
                f"table name must not contain a NUL byte, got {text!r}", field="table", value=text
            )
        parts = _split_reference(text)
        if any(part == "" for part in parts):
            raise TableNameError(
                f"table name {text!r} has an empty part; expected 'catalog.schema.table', "
                "'schema.table' or 'table'",
                field="table",
                value=text,
            )
        if len(parts) > 3:
            raise TableNameError(
                f"table name {text!r} has {len(parts)} parts; at most three "
                "('catalog.schema.table') are allowed",
                field="table",
                value=text,
            )
        if len(parts) == 1:
            return cls(catalog=default_catalog, schema=default_schema, name=parts[0])
        if len(parts) == 2:
            return cls(catalog=default_catalog, schema=parts[0], name=parts[1])
        return cls(catalog=parts[0], schema=parts[1], name=parts[2])

    @property
    def parts(self) -> tuple[str, str, str]:
        """The three parts, ``(catalog, schema, name)``."""
        return (self.catalog, self.schema, self.name)

    @property
    def members(self) -> tuple[TableName]:
        """The tables this source reads: itself (as :attr:`TableUnion.members`)."""
        return (self,)

    def __str__(self) -> str:
        """The dotted form, quoting each part that is not a bare identifier.

        ``TableName.parse(str(name)) == name`` for every valid name.
        """
        return ".".join(part if is_bare_identifier(part) else f'"{part}"' for part in self.parts)


@functools.lru_cache(maxsize=1024)
def _parse_default(text: str) -> TableName:
    return TableName.parse(text)


def coerce_table_name(value: Any) -> TableName:
    """Accept a :class:`TableName` or a 1-3 part string (completed from the defaults).

    Parsed strings are cached (table names are immutable, and every branch of every plan
    names its table): a repeated name costs a dictionary lookup instead of a parse.

    Raises:
        TableNameError: as :meth:`TableName.parse`.
    """
    if type(value) is str:
        return _parse_default(value)
    return TableName.parse(value)


MAX_UNION_TABLES = 16
"""The most tables one :class:`TableUnion` may combine. Each member is one more search (one
``bm25_search`` or nearest-neighbour scan per member) in the same statement; hotmemory, the
widest user, unions two."""


def _union_members(values: Iterable[str | TableName]) -> tuple[TableName, ...]:
    if isinstance(values, (str, bytes, TableName)) or not hasattr(values, "__iter__"):
        raise TableNameError(
            f"a table union takes a sequence of table names, got {values!r}",
            field="table",
            value=values,
        )
    given = tuple(values)
    if len(given) > MAX_UNION_TABLES:
        raise TableNameError(
            f"a union of {len(given)} tables; at most {MAX_UNION_TABLES} are allowed "
            "(MAX_UNION_TABLES)",
            field="table",
            value=len(given),
        )
    members = tuple(coerce_table_name(value) for value in given)
    if len(members) < 2:
        raise TableNameError(
            f"a table union needs at least two tables, got {len(members)}; name one table "
            "as a string",
            field="table",
            value=list(values),
        )
    seen: set[TableName] = set()
    for member in members:
        if member in seen:
            raise TableNameError(
                f"table '{member}' appears twice in a union: its rows would be returned twice",
                field="table",
                value=str(member),
            )
        seen.add(member)
    return members


@attrs.frozen
class TableUnion:
    """``UNION ALL`` of tables that share the searched columns, the key and the projected
    columns: a branch over it searches each member with its own fully qualified name (so
    each keeps its index fast path) and ranks the members' rows together.

    hotmemory keeps its records in two tables (``memory_v1``, ``episode_v1``) and searches
    both at once; that is a union. The key must be unique across the members, not only in
    each: a key in two members is two rows, which a search refuses when both come back
    (``EngineError``: the key came back twice).

    Attributes:
        tables: two to :data:`MAX_UNION_TABLES` distinct tables, in order (strings are parsed
            and completed to three parts).

    Raises:
        TableNameError: fewer than two tables, more than :data:`MAX_UNION_TABLES`, a table
            named twice, or a bad name.

    >>> str(TableUnion(["memory_v1", "episode_v1"]))
    'default.public.memory_v1 UNION ALL default.public.episode_v1'
    """

    tables: tuple[TableName, ...] = attrs.field(converter=_union_members)

    @property
    def members(self) -> tuple[TableName, ...]:
        """The member tables, in order."""
        return self.tables

    def __str__(self) -> str:
        return " UNION ALL ".join(str(table) for table in self.tables)


TableSource = TableName | TableUnion
"""What a branch searches: one table, or a :class:`TableUnion` of tables."""

TableSourceInput = str | TableName | TableUnion | Sequence[str | TableName]
"""What a branch's ``table`` takes: a name (completed to three parts), a :class:`TableName`,
a :class:`TableUnion`, or a list or tuple of names (a union of them)."""


def coerce_table_source(value: TableSourceInput) -> TableSource:
    """Accept a table (as :func:`coerce_table_name`), a :class:`TableUnion`, or a list or
    tuple of table names (a union of them).

    Raises:
        TableNameError: as :func:`coerce_table_name` and :class:`TableUnion`.
    """
    if isinstance(value, TableUnion):
        return value
    if isinstance(value, (list, tuple)):
        return TableUnion(value)
    return coerce_table_name(value)
