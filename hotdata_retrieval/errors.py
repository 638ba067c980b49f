"""The typed errors every part of the library raises.

All of them derive from :class:`HotdataRetrievalError`, so one ``except`` clause catches
everything the library raises on purpose. Each error carries the offending value as an
attribute as well as in its message, and its message says what would have been valid.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any


class HotdataRetrievalError(Exception):
    """Base class of every error raised by ``hotdata_retrieval``."""


def row_name(index: int) -> str:
    """How every message names a row (of a table, of rows being loaded or written, of an
    answer): ``row N`` counted from 1, as people count and as ``path:N`` names a file's
    line, for the row at 0-based ``index``.

    >>> row_name(0)
    'row 1'
    """
    return f"row {index + 1}"


def position_name(index: int, length: int) -> str:
    """How every message names a component of a vector (or an item of a list) at 0-based
    ``index`` in one of ``length``: ``position N of M``, counted from 1 as rows are
    (:func:`row_name`), with the length so that no reader takes it for an offset.

    >>> position_name(0, 3)
    'position 1 of 3'
    """
    return f"position {index + 1} of {length}"


class PlanError(HotdataRetrievalError, ValueError):
    """A retrieval plan (or one of its parts) would be invalid.

    Raised at construction time, so an invalid plan never exists.

    Attributes:
        field: the name of the offending field, e.g. ``"limit"`` or ``"query_vector"``.
        value: the offending value, exactly as the caller passed it.
        mentions: other field names the message names as words (say the options a fusion
            method does take), so a command line can spell them as its options, as it does
            ``field``.
        reason: what is wrong: the message without its advice.
        advice: what a caller of the library does about it, naming the library's own
            parameters (``pass allow_empty=True ...``; those it names are in ``mentions``),
            or ``None``. The message is ``reason; advice``; a command line without such a
            parameter gives its own advice instead
            (:func:`hotdata_retrieval.cli._errors.in_option_terms`).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: Any = None,
        mentions: tuple[str, ...] = (),
        advice: str | None = None,
    ) -> None:
        super().__init__(message if advice is None else f"{message}; {advice}")
        self.field = field
        self.value = value
        self.mentions = mentions
        self.reason = message
        self.advice = advice

    def worded_for(self, parameters: Container[str], advice: Mapping[str, str]) -> str:
        """The message as a door whose own parameters are ``parameters`` gives it: unchanged
        when its :attr:`advice` names none the door lacks (:attr:`mentions`), else
        :attr:`reason` followed by the door's own advice for the first parameter it lacks
        (``advice[name]``), or by none when ``advice`` has no entry for it.

        >>> error = PlanError("no word", mentions=("allow_empty",), advice="pass allow_empty")
        >>> error.worded_for(("query",), {"allow_empty": "search with words"})
        'no word; search with words'
        >>> error.worded_for(("allow_empty",), {})
        'no word; pass allow_empty'
        """
        lacking = [name for name in self.mentions if name not in parameters]
        if self.advice is None or not lacking:
            return str(self)
        instead = advice.get(lacking[0])
        return self.reason if instead is None else f"{self.reason}; {instead}"


class TableNameError(PlanError):
    """A table reference cannot be parsed or completed into ``catalog.schema.table``."""


class UnknownDialectError(HotdataRetrievalError, ValueError):
    """The requested SQL dialect is not one this library can compile to.

    Attributes:
        dialect: the name that was asked for.
        known: the names that are available.
    """

    def __init__(self, dialect: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown dialect {dialect!r}; known dialects: {', '.join(known)}")
        self.dialect = dialect
        self.known = known


class UnsupportedFeatureError(HotdataRetrievalError, NotImplementedError):
    """A plan uses a feature that the target dialect cannot express.

    Attributes:
        feature: what the plan asked for, e.g. ``"bm25_search"``.
        dialect: the dialect that cannot express it.
    """

    def __init__(self, feature: str, dialect: str) -> None:
        super().__init__(f"dialect {dialect!r} does not support {feature}")
        self.feature = feature
        self.dialect = dialect


class DuplicateColumnError(HotdataRetrievalError, ValueError):
    """A result names two of its columns alike: read as rows (a mapping of column names to
    values) one of the two values would be lost.

    Attributes:
        column: the repeated name.
    """

    def __init__(self, column: str) -> None:
        super().__init__(
            f"the result has more than one column named {column!r}; give each column a name "
            "of its own (SELECT a.id AS a_id, b.id AS b_id ...)"
        )
        self.column = column


class UnknownEngineError(HotdataRetrievalError, ValueError):
    """No engine of that name is registered
    (:func:`~hotdata_retrieval.engines.registry.engine_kind`).

    Attributes:
        name: the name asked for.
        known: the registered names.
    """

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown engine {name!r}; known engines: {', '.join(known)}")
        self.name = name
        self.known = known


class EngineError(HotdataRetrievalError):
    """The engine rejected or failed a statement; the message is the engine's own.

    Attributes:
        sql: the statement that failed, if a statement was being run.
    """

    def __init__(self, message: str, *, sql: str | None = None) -> None:
        super().__init__(message)
        self.sql = sql


class MissingCapabilityError(EngineError):
    """An engine lacks capabilities a caller needs (``docs/engines.md``, "Optional
    capabilities"): the message names each one and why the engine has none.

    Attributes:
        engine: the engine's class name.
        capabilities: the missing capabilities, in the order the caller needs them.
        reasons: why each is missing, by capability.
    """

    def __init__(
        self, message: str, *, engine: str, capabilities: Sequence[str], reasons: Any = None
    ) -> None:
        super().__init__(message)
        self.engine = engine
        self.capabilities = tuple(capabilities)
        self.reasons = dict(reasons or {})


class SqlLimitError(EngineError):
    """A statement went past one of its :class:`SqlLimits`.

    Attributes:
        limit: which limit: ``timeout_seconds``, ``memory_bytes`` or ``recursion``.
        value: the limit's value.
    """

    def __init__(self, message: str, *, limit: str, value: Any, sql: str | None = None) -> None:
        super().__init__(message, sql=sql)
        self.limit = limit
        self.value = value


class ResponseLimitError(EngineError):
    """A remote engine's service answered with more than one of its :class:`ResponseLimits`
    allows; the request was stopped and its connection closed.

    Attributes:
        limit: which limit: ``max_response_bytes`` (the body as sent) or
            ``max_decompressed_bytes`` (the body once decompressed).
        value: the limit's value, in bytes.
    """

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class HnswSettingsError(EngineError, ValueError):
    """An HNSW index setting out of its range, of the wrong type, or not one the index being
    built can take (int8 storage for an L2 or dot-product index; a setting an engine has no
    way to apply).

    Attributes:
        setting: the setting's name (``connectivity``, ``expansion_add``,
            ``expansion_search`` or ``storage``).
        value: the offending value, exactly as given.
    """

    def __init__(self, message: str, *, setting: str, value: Any) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class RefusedStatementError(EngineError):
    """A statement the closed session refuses before or while the store prepares it: a
    write, a setting, a file or a table outside the searchable ones (the message says which)."""


class OutdatedIndexError(EngineError):
    """A table whose full-text index an earlier release wrote in a layout this one neither
    searches nor keeps (no per-column postings): a change by key would leave that index out
    of date, so it is refused until the table is loaded again.

    Attributes:
        table: the table, ``catalog.schema.table``.
        columns: its text columns in the earlier layout.
    """

    def __init__(self, table: str, columns: Sequence[str]) -> None:
        named = ", ".join(f"'{column}'" for column in columns)
        super().__init__(
            f"table '{table}' holds the full-text index of column {named} in an earlier "
            "release's layout (no per-column postings), which changes by key would leave out "
            "of date; load the table again (load_table) before changing its rows"
        )
        self.table = table
        self.columns = tuple(columns)


class HotdataApiError(EngineError):
    """The Hotdata API refused a request or the engine failed a statement.

    The message is the API's own (the ``message`` of its error body) when it sent one.

    Attributes:
        sql: the statement that failed, if one was being run.
        status: the HTTP status, if the API answered.
        code: the machine-readable ``error.code`` of the API's error body, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        sql: str | None = None,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, sql=sql)
        self.status = status
        self.code = code


class HotdataConfigError(HotdataRetrievalError, ValueError):
    """The engine cannot be set up as asked: no API key, no such database (or several with
    that name), a catalog the database does not have, or the ``hotdata`` extra missing."""


class InvalidLimitError(HotdataRetrievalError, ValueError):
    """A limit that is not a positive number (the message names it and the value)."""


class InputLimitError(HotdataRetrievalError, ValueError):
    """A call's text is over one of its :class:`InputLimits`.

    Attributes:
        limit: which limit (``max_query_characters``, ``max_query_terms``).
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class DatabaseError(HotdataRetrievalError):
    """The local database directory is missing, unreadable or inconsistent."""


class ConcurrentWriteError(DatabaseError):
    """Another writer changed a table between the start of this write and its commit.

    Attributes:
        table: the table.
        expected: the version this write started from (``None``: no table).
        found: the version the catalog holds now.
    """

    def __init__(self, table: str, expected: str | None, found: str | None) -> None:
        super().__init__(
            f"table {table!r} was changed by another writer while this write ran "
            f"(version {expected or 'none'} became {found or 'none'}); nothing was written, "
            "run the write again"
        )
        self.table = table
        self.expected = expected
        self.found = found


class LoadError(HotdataRetrievalError):
    """A file or directory cannot be read as a table (the message names the file and line)."""


class DecodedSizeError(LoadError):
    """A file would hold more memory once decoded than a load may: its decoded size, bounded
    before a value is decoded (a Parquet file's metadata and page headers; a CSV or JSON
    lines file's rows and fields, read line by line) or counted batch by batch while it is
    decoded, is past the limit.

    Attributes:
        path: the file, as given.
        size: the decoded bytes it would hold: the bound found before decoding, or, counted
            while decoding, what it held when the count passed the limit (at least that).
        limit: the most a load may hold decoded, in bytes (``read_source``'s
            ``max_decoded_bytes``; ``hdq load --max-decoded-size`` in MiB).
        estimated: ``True`` when ``size`` is the bound found before decoding.
    """

    def __init__(self, message: str, *, path: str, size: int, limit: int, estimated: bool) -> None:
        super().__init__(message)
        self.path = path
        self.size = size
        self.limit = limit
        self.estimated = estimated


class HybridSearchError(HotdataRetrievalError, ValueError):
    """``hybrid_search`` rejected its arguments or its table; the message is the engine's."""


class DimensionMismatchError(HotdataRetrievalError, ValueError):
    """A query vector's length differs from a stored vector's (raised inside the engine)."""


class UnvisitableNodeError(HotdataRetrievalError, TypeError):
    """A visitor has no ``visit_<name>`` method for a node (or the node has no visit name).

    Built by :meth:`hotdata_retrieval.plan.visitor.NodeVisitor.unvisitable`, which works out
    the method's name from the node's ``visit_name``.

    Attributes:
        visitor: the visitor's class name.
        node: the node.
        method: the method the visitor lacks (``visit_<visit_name>``), or ``None`` when the
            node's class has no visit name.
    """

    def __init__(self, visitor: str, node: Any, *, method: str | None) -> None:
        lacking = method if method is not None else "visit method"
        super().__init__(f"{visitor} has no {lacking} for {type(node).__name__} nodes")
        self.visitor = visitor
        self.node = node
        self.method = method


class KeyTypeError(PlanError):
    """Keys given to a fusion are ``None``, NaN or of different kinds (say ``1`` and
    ``"1"``)."""


class CatalogError(HotdataRetrievalError, ValueError):
    """An index catalog document is malformed.

    Also exported as ``hotdata_retrieval.lint.CatalogError`` (the same class).

    Attributes:
        field: where in the document the problem is, e.g. ``"indexes[2].kind"``.
        value: the offending value, as read.
    """

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class SqlParseError(HotdataRetrievalError, ValueError):
    """The SQL text cannot be parsed in the Hotdata dialect.

    Attributes:
        description: the parser's message, without position or context.
        line: 1-based line of the offending token (``None`` when the parser gave none).
        column: 1-based column of the offending token's first character.
        start: 0-based offset of the offending token in the SQL text, when known.
    """

    def __init__(
        self,
        description: str,
        *,
        line: int | None = None,
        column: int | None = None,
        start: int | None = None,
    ) -> None:
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{description}")
        self.description = description
        self.line = line
        self.column = column
        self.start = start


class UnknownRuleError(HotdataRetrievalError, ValueError):
    """A rule code passed to the linter (``ignore=``) names no rule.

    Attributes:
        codes: the codes that name no rule, as passed.
    """

    def __init__(self, codes: list[Any], message: str | None = None) -> None:
        listed = ", ".join(code if isinstance(code, str) else repr(code) for code in codes)
        super().__init__(message or f"unknown rule code(s): {listed}; see hdq lint --list-rules")
        self.codes = codes


class EmbeddingError(HotdataRetrievalError):
    """Base class of the errors raised while embedding text."""


class RerankerUnavailableError(HotdataRetrievalError, RuntimeError):
    """A reranker cannot run here: its model directory or an optional dependency is missing.

    Attributes:
        model: the model asked for (a directory, or a registered reranker's name).
        missing: what is missing (files, modules), in the order found.
    """

    def __init__(self, message: str, *, model: str, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.model = model
        self.missing = tuple(missing)


class EmbedderUnavailableError(EmbeddingError, RuntimeError):
    """An embedder cannot run here: an optional dependency or a model file is missing or wrong.

    Attributes:
        embedder: which embedder was asked for, e.g. ``"all-MiniLM-L6-v2 (ONNX int8)"``.
        missing: what is missing or wrong (module names, files), in the order found.
        install_hint: the command that installs what is missing.
    """

    def __init__(
        self,
        message: str,
        *,
        embedder: str,
        missing: Sequence[str] = (),
        install_hint: str | None = None,
    ) -> None:
        text = message
        if install_hint:
            text = f"{message}; install it with: {install_hint}"
        super().__init__(text)
        self.embedder = embedder
        self.missing = tuple(missing)
        self.install_hint = install_hint


class EmbeddingInputError(EmbeddingError, TypeError):
    """The texts to embed are not what an embedder takes (a sequence of ``str``).

    Attributes:
        position: 0-based index of the offending item in the sequence, or ``None`` when the
            argument as a whole is wrong (e.g. a bare ``str`` passed where a list is expected).
        value: the offending value, exactly as the caller passed it.
    """

    def __init__(self, message: str, *, position: int | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.position = position
        self.value = value


class EmbeddingOutputError(EmbeddingError, ValueError):
    """An embedder returned vectors that cannot be used: NaN or infinite components, the
    wrong number of vectors, or vectors of the wrong length.

    Attributes:
        embedder: the ``name`` of the embedder that produced them.
        positions: 0-based indices (into the texts of that call) of the offending vectors;
            empty when the problem is the count of vectors.
    """

    def __init__(self, message: str, *, embedder: str, positions: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.embedder = embedder
        self.positions = tuple(positions)


class TuningError(HotdataRetrievalError):
    """Queries or qrels that cannot be read, or that leave nothing to tune on."""


class MissingExtraError(HotdataRetrievalError, ImportError):
    """A feature needs an optional extra whose modules are not installed.

    An :class:`ImportError` as well, so code that guards an optional import with
    ``except ImportError`` still works.

    Attributes:
        extra: the extra to install, e.g. ``"local"``.
        missing: the modules of that extra that could not be imported, in
            :data:`EXTRA_MODULES` order.
        needed_by: what needs it, e.g. ``"hdq search"``.
        install: the shell command that installs the extra
            (:func:`hotdata_retrieval.extras.install_command`).
    """

    def __init__(self, extra: str, *, missing: Sequence[str], needed_by: str, install: str) -> None:
        super().__init__(
            f"{needed_by} needs the {extra} extra, which is not installed (no module "
            f"{', '.join(missing)}): {install}"
        )
        self.extra = extra
        self.missing = tuple(missing)
        self.needed_by = needed_by
        self.install = install


class ToolError(HotdataRetrievalError):
    """A tool call that cannot be answered: a bad argument or a failed query.

    The message is written for the model that made the call, so it can correct itself.
    """


class ConnectorError(ToolError):
    """A request the DDN connector (:mod:`hotdata_retrieval.adapters.ddn`) refuses.

    Attributes:
        status: the HTTP status of the NDC error response (400 bad input, 501 unsupported).
    """

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class UnsupportedOnDialectError(UnsupportedFeatureError):
    """A plan needs something a dialect cannot express; the message reads
    ``unsupported on <dialect>: <what>``.

    Attributes:
        feature: what the plan asked for.
        dialect: the dialect's name.
    """

    def __init__(self, feature: str, dialect: str) -> None:
        super().__init__(feature, dialect)
        self.args = (f"unsupported on {dialect}: {feature}",)


class CaseError(HotdataRetrievalError):
    """A case document is malformed, or a fixture would leave a ranking undefined."""


class EngineUnavailableError(HotdataRetrievalError):
    """The engine asked for cannot be opened here; the message says why."""
