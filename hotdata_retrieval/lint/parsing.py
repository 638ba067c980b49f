"""SQL text → one sqlglot tree per statement, with positions that point into the text.

Parsing uses a variant of the ``hotdata`` dialect that keeps a few PostgreSQL-shaped calls as
written (``to_char``, ``to_date``, ``to_timestamp``, ``date_sub``, ``datediff``): the
``postgres`` parser would translate their templates and arguments, and the linter needs to see
what the author wrote (a ``'YYYY-MM-DD'`` template, which the engine does not understand).

A long numeric ``ARRAY[...]`` — a real query vector of 384 or 1,536 components — costs
milliseconds to tokenize and parse as one literal node per component (engine notes,
``docs/benchmarks.md``). Such a literal is cut out of the text before tokenizing and comes
back as one opaque :class:`~hotdata_retrieval.compile.nodes.VectorLiteral` node holding its
exact text, with positions mapped back to the original text.

Every offset (tokens, node ``meta``, :class:`Statement` bounds) points into the text as given,
byte order mark and line endings included, so a fix can splice its replacement into that text
and leave every other character as it was.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import logging
import re
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

import hotdata_retrieval.compile  # noqa: F401  (registers the hotdata dialect)
from hotdata_retrieval.compile.hotdata import Hotdata
from hotdata_retrieval.compile.nodes import VectorLiteral
from hotdata_retrieval.lint.errors import SqlParseError

_VERBATIM_FUNCTIONS = frozenset({"TO_CHAR", "TO_DATE", "TO_TIMESTAMP", "DATE_SUB", "DATEDIFF"})
"""Calls kept as written (plain calls) instead of being translated by the postgres parser."""


class LintDialect(Hotdata):
    """The ``hotdata`` dialect, keeping :data:`_VERBATIM_FUNCTIONS` calls as written."""

    class Parser(Hotdata.Parser):
        FUNCTIONS: ClassVar[dict[str, Any]] = {
            name: builder
            for name, builder in Hotdata.Parser.FUNCTIONS.items()
            if name not in _VERBATIM_FUNCTIONS
        }


_DIALECT = LintDialect()


class _LinesAsShown(LintDialect):
    """:class:`LintDialect` with a ``--`` comment ending at a carriage return too, as an
    editor shows the lines (and as sqlglot's PostgreSQL tokenizer reads them)."""

    class Tokenizer(LintDialect.Tokenizer):
        COMMENTS_TERMINATE_AT_NEWLINE_ONLY = False


_LINES_AS_SHOWN = _LinesAsShown()

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LONG_VECTOR = re.compile(
    rf"\bARRAY\s*\[\s*({_NUMBER})(?:\s*,\s*{_NUMBER}){{7,}}\s*\]", re.IGNORECASE
)
"""An ``ARRAY[...]`` of at least eight numeric literals."""


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]+, text: (.*?), line: \d+, col: \d+, start: .*?>")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""A line break: ``\\r\\n``, a lone ``\\r`` or ``\\n``."""

_BOM = "\ufeff"


class Positions:
    """Maps offsets in a text to 1-based line and column numbers (lines end at ``\\r\\n``,
    ``\\r`` or ``\\n``)."""

    def __init__(self, text: str) -> None:
        self._line_starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]

    def line_column(self, offset: int) -> tuple[int, int]:
        """``(line, column)`` of the character at ``offset``, both 1-based."""
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


@attrs.frozen(kw_only=True)
class Statement:
    """One parsed statement.

    Attributes:
        tree: its sqlglot tree (node ``meta`` offsets point into the whole text).
        start: offset of its first token in the whole text.
        end: offset just past its last token.
        region_start / region_end: the text the statement owns between its semicolons,
            comments included and surrounding whitespace excluded.
        tokens: its tokens in text order; each token's ``start`` and ``end`` (inclusive)
            are offsets into the whole text (a long vector literal is four tokens: ``ARRAY``,
            ``[``, its first number and ``]``). Fixes place their edits with them.
    """

    tree: exp.Expr
    start: int
    end: int
    region_start: int
    region_end: int
    tokens: tuple[Token, ...]


@attrs.frozen
class _Cut:
    """A long vector literal replaced by a short stand-in before tokenizing."""

    start: int  # in the original text
    end: int
    stand_in_start: int  # in the shortened text
    stand_in_end: int
    text: str


def _shorten(sql: str) -> tuple[str, list[_Cut]]:
    cuts: list[_Cut] = []
    pieces: list[str] = []
    position = 0
    length = 0
    for match in _LONG_VECTOR.finditer(sql):
        pieces.append(sql[position : match.start()])
        length += match.start() - position
        stand_in = f"ARRAY[{match.group(1)}]"
        cuts.append(
            _Cut(
                start=match.start(),
                end=match.end(),
                stand_in_start=length,
                stand_in_end=length + len(stand_in),
                text=match.group(0),
            )
        )
        pieces.append(stand_in)
        length += len(stand_in)
        position = match.end()
    if not cuts:
        return sql, cuts
    pieces.append(sql[position:])
    return "".join(pieces), cuts


def _tokenize(sql: str) -> tuple[list[Token], list[_Cut]]:
    """Tokenize ``sql``, cutting long vector literals; token offsets refer to ``sql``."""
    short, cuts = _shorten(sql)
    tokens = _DIALECT.tokenize(short)
    if not cuts:
        return tokens, cuts
    starts = {cut.stand_in_start: cut for cut in cuts}
    seen = 0
    for token in tokens:
        if token.start in starts and token.token_type == TokenType.ARRAY:
            seen += 1
    if seen != len(cuts):  # a cut landed inside a string or a comment: no shortcut
        return _DIALECT.tokenize(sql), []
    stand_in_starts = [cut.stand_in_start for cut in cuts]
    for token in tokens:
        index = bisect.bisect_right(stand_in_starts, token.start) - 1
        if index < 0:
            continue
        cut = cuts[index]
        if token.start >= cut.stand_in_end:
            shift = cut.end - cut.stand_in_end
        elif token.token_type == TokenType.R_BRACKET:
            shift = (cut.end - 1) - token.start
        else:
            shift = cut.start - cut.stand_in_start
        token.start += shift
        token.end += shift
    return tokens, cuts


def _restore_vectors(tree: exp.Expr, cuts: list[_Cut]) -> None:
    by_start = {cut.start: cut for cut in cuts}
    for array in list(tree.find_all(exp.Array)):
        if len(array.expressions) != 1:
            continue
        first = array.expressions[0]
        literal = first.this if isinstance(first, exp.Neg) else first
        if not isinstance(literal, exp.Literal):
            continue
        begin = literal.meta.get("start")
        cut = next(
            (
                candidate
                for candidate in by_start.values()
                if begin is not None and candidate.start < begin < candidate.end
            ),
            None,
        )
        if cut is None:
            continue
        node = VectorLiteral(this=cut.text)
        node.meta.update({"start": cut.start, "end": cut.end - 1})
        array.replace(node)


def _split(tokens: list[Token], length: int) -> list[tuple[list[Token], int, int]]:
    """Statements' tokens, each with the text region between its semicolons."""
    chunks: list[tuple[list[Token], int, int]] = []
    current: list[Token] = []
    region_start = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                chunks.append((current, region_start, token.start))
            current = []
            region_start = token.end + 1
        else:
            current.append(token)
    if current:
        chunks.append((current, region_start, length))
    return chunks


def _trim(sql: str, start: int, end: int) -> tuple[int, int]:
    while start < end and sql[start].isspace():
        start += 1
    while end > start and sql[end - 1].isspace():
        end -= 1
    return start, end


_EXPLAIN_OPTIONS = re.compile(r"(?:\s*\b(?:ANALYZE|VERBOSE)\b)*\s*", re.IGNORECASE)


def _explained(
    chunk: list[Token], sql: str, region_end: int
) -> tuple[list[Token], list[_Cut], int] | None:
    """``EXPLAIN [ANALYZE] [VERBOSE] <query>`` tokenizes as one command; re-tokenize the
    query so it is linted. Returns its tokens, cuts and start offset."""
    first = chunk[0]
    if first.token_type != TokenType.COMMAND or first.text.upper() != "EXPLAIN":
        return None
    options = _EXPLAIN_OPTIONS.match(sql, first.end + 1, region_end)
    start = options.end() if options is not None else first.end + 1
    tokens, cuts = _tokenize(sql[start:region_end])
    for token in tokens:
        token.start += start
        token.end += start
    shifted = [attrs.evolve(cut, start=cut.start + start, end=cut.end + start) for cut in cuts]
    return tokens, shifted, start


_PARSING: contextvars.ContextVar[bool] = contextvars.ContextVar("hdq_lint_parsing", default=False)
"""True while this context parses a chunk for the linter."""


class _CommandFallbackFilter(logging.Filter):
    """Drops sqlglot's records only while the linter parses in the same context (thread or
    task); the logger's level and every other record are left as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _PARSING.get()


logging.getLogger("sqlglot").addFilter(_CommandFallbackFilter())


@contextlib.contextmanager
def _quiet_parser() -> Iterator[None]:
    """sqlglot logs a warning for each statement it keeps as an opaque command (``SHOW
    TABLES``); the linter has nothing to say about those, and says nothing. Scoped by a context
    variable, so another thread's sqlglot warnings are still logged."""
    token = _PARSING.set(True)
    try:
        yield
    finally:
        _PARSING.reset(token)


def _parse_chunk(chunk: list[Token], sql: str) -> list[exp.Expr | None]:
    try:
        with _quiet_parser():
            return _DIALECT.parser().parse(chunk, sql)
    except ParseError as error:
        details = error.errors[0] if error.errors else {}
        description = str(details.get("description") or _first_line(str(error)))
        raise SqlParseError(
            _TOKEN_REPR.sub(lambda match: repr(match.group(1)), description),
            line=details.get("line"),
            column=details.get("col"),
        ) from None


def parse_statements(sql: str) -> list[Statement]:
    """Parse every statement of ``sql`` in the Hotdata dialect (the query of an ``EXPLAIN``
    is parsed as that query). A leading byte order mark is read as white space; offsets
    still count it. A ``--`` comment ends at a line feed only, as the engine reads it.

    Raises:
        SqlParseError: as :func:`iter_statements`.
    """
    return list(iter_statements(sql))


def iter_statements(sql: str) -> Iterator[Statement]:
    """:func:`parse_statements` one statement at a time: the text is tokenized and split
    first, and each statement parsed when it is asked for, so a caller that is done with a
    statement before asking for the next holds one tree in memory, not the whole file's.

    Raises:
        SqlParseError: the text does not tokenize or parse, or is nested too deeply for the
            parser; carries the parser's message and the offending token's line and column.
            When the text would parse with every ``--`` comment ending at a carriage return
            or a Unicode line separator too, the message says so: the engine reads the lines
            after such a comment as comment.
    """
    try:
        yield from _parse_statements(sql)
    except RecursionError:
        raise SqlParseError("the SQL is nested too deeply to read") from None
    except SqlParseError as error:
        if "--" not in sql or _SHOWN_LINE_BREAK.search(sql) is None or not _parses_as_shown(sql):
            raise
        raise SqlParseError(
            f"{error.description} (a `--` comment ends only at a line feed (\\n) on the "
            "engine, and one here ends at a carriage return alone or a Unicode line "
            "separator, so the engine reads the lines after it as comment; see HDQ050)",
            line=error.line,
            column=error.column,
            start=error.start,
        ) from None


def _parses_as_shown(sql: str) -> bool:
    """Whether ``sql`` parses when a carriage return alone or a line separator ends a ``--``
    comment."""
    if sql.startswith(_BOM):
        sql = " " + sql[1:]
    try:
        with _quiet_parser():
            _LINES_AS_SHOWN.parse(sql.translate(_AS_CARRIAGE_RETURN))
    except (ParseError, TokenError):
        return False
    return True


def _parse_statements(sql: str) -> Iterator[Statement]:
    if sql.startswith(_BOM):  # same length, so every offset still points into ``sql``
        sql = " " + sql[1:]
    positions = Positions(sql)
    try:
        tokens, cuts = _tokenize(sql)
        chunks = _split(tokens, len(sql))
        statements_tokens: list[tuple[list[Token], list[_Cut], int, int]] = []
        for chunk, region_start, region_end in chunks:
            explained = _explained(chunk, sql, region_end)
            if explained is not None:
                inner, inner_cuts, inner_start = explained
                if inner:
                    statements_tokens.append((inner, inner_cuts, inner_start, region_end))
                continue
            statements_tokens.append((chunk, cuts, region_start, region_end))
    except TokenError as error:
        raise _token_error(error, sql, positions) from None
    for chunk, chunk_cuts, region_start, region_end in statements_tokens:
        for token in chunk:  # lines and columns as the parser reports them, from real offsets
            token.line, token.col = positions.line_column(token.start)
        inside = [cut for cut in chunk_cuts if chunk[0].start <= cut.start <= chunk[-1].end]
        region = _trim(sql, region_start, region_end)
        for tree in _parse_chunk(chunk, sql):
            if tree is None:
                continue
            if inside:
                _restore_vectors(tree, inside)
            yield Statement(
                tree=tree,
                start=chunk[0].start,
                end=chunk[-1].end + 1,
                region_start=region[0],
                region_end=region[1],
                tokens=tuple(chunk),
            )


_SHOWN_LINE_BREAK = re.compile("\r(?!\n)|[\x85\u2028\u2029]")
"""What an editor may show as a line break but the engine does not take to end a ``--``
comment: a carriage return alone, U+0085 (next line), U+2028 and U+2029 (line and paragraph
separators)."""

_AS_CARRIAGE_RETURN = {ord(character): "\r" for character in "\x85\u2028\u2029"}


@attrs.frozen
class HiddenText:
    """Text that reads as code on a line of its own but that the engine reads as part of a
    ``--`` comment.

    Attributes:
        start / end: ``sql[start:end]`` is the hidden text (offsets into the text given).
        line_break: the character that ends the comment's line as shown (``"\r"``,
            ``"\x85"``, ``"\u2028"`` or ``"\u2029"``).
    """

    start: int
    end: int
    line_break: str


def hidden_by_line_comments(sql: str) -> list[HiddenText]:
    """The stretches of ``sql`` that read as code when a carriage return alone or a Unicode
    line separator ends a line, but that the engine reads as part of a ``--`` comment: the
    engine ends such a comment only at a line feed (see
    :class:`~hotdata_retrieval.compile.hotdata.Hotdata`'s tokenizer), so everything up to the
    next ``\n`` is comment. Each stretch runs from the first token the engine does not see
    to the end of the last one (or, when the lines as shown do not tokenize, to the end of
    the engine's comment), in text order.

    Only the white space and comments between the engine's tokens are read again, each
    stretch by itself, so a stretch never runs past the next token the engine does see.
    Empty when the text does not tokenize (:func:`parse_statements` reports that).
    """
    if "--" not in sql or _SHOWN_LINE_BREAK.search(sql) is None:
        return []
    if sql.startswith(_BOM):
        sql = " " + sql[1:]
    try:
        tokens, _ = _tokenize(sql)
        bounds: list[tuple[int, int]] = []
        for chunk, _start, region_end in _split(tokens, len(sql)):
            explained = _explained(chunk, sql, region_end)
            inner = chunk if explained is None else [chunk[0], *explained[0]]
            bounds.extend((token.start, token.end + 1) for token in inner)
    except TokenError:
        return []
    bounds.extend(
        (token.start, token.end + 1) for token in tokens if token.token_type == TokenType.SEMICOLON
    )
    bounds.sort()
    hidden: list[HiddenText] = []
    previous = 0
    for start, end in [*bounds, (len(sql), len(sql))]:
        if start > previous:
            stretch = _hidden_in(sql, previous, start)
            if stretch is not None:
                hidden.append(stretch)
        previous = max(previous, end)
    return hidden


def _hidden_in(sql: str, start: int, end: int) -> HiddenText | None:
    """The hidden stretch of ``sql[start:end]``, text the engine reads as white space and
    comments (or, after ``EXPLAIN``, its options)."""
    gap = sql[start:end]
    comment = gap.find("--")
    if comment == -1 or _SHOWN_LINE_BREAK.search(gap, comment) is None:
        return None
    engine = {(token.start, token.end) for token in _DIALECT.tokenize(gap)}
    try:
        shown = _LINES_AS_SHOWN.tokenize(gap.translate(_AS_CARRIAGE_RETURN))
    except TokenError:  # e.g. an apostrophe in the comment's prose: hidden from there on
        after = _SHOWN_LINE_BREAK.search(gap, comment)
        assert after is not None
        text = gap[after.end() :].split("\n", 1)[0]
        first = after.end() + len(text) - len(text.lstrip())
        last = after.end() + len(text.rstrip())
        if last <= first:
            return None
        return HiddenText(start + first, start + last, after.group())
    unseen = [token for token in shown if (token.start, token.end) not in engine]
    if not unseen:
        return None
    breaks = list(_SHOWN_LINE_BREAK.finditer(gap, comment, unseen[0].start))
    line_break = breaks[-1].group() if breaks else "\r"
    return HiddenText(start + unseen[0].start, start + unseen[-1].end + 1, line_break)


def _token_error(error: TokenError, sql: str, positions: Positions) -> SqlParseError:
    # the error's offsets bracket a context snippet that ends where tokenizing stopped
    stop = getattr(error, "end", None)
    if isinstance(stop, int) and sql:
        stop = max(0, min(stop, len(sql) - 1))
        line, column = positions.line_column(stop)
        return SqlParseError(
            "cannot tokenize (an unterminated string, quoted name or comment?): "
            + _first_line(str(error)),
            line=line,
            column=column,
            start=stop,
        )
    return SqlParseError(_first_line(str(error)))


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "cannot parse the SQL"


def render(tree: exp.Expr, *, pretty: bool = False) -> str:
    """SQL text for a node, in the Hotdata dialect (fixes render only the new text they
    insert: a name, a literal, a sort key)."""
    return _DIALECT.generate(tree, pretty=pretty)
