"""Read what ``hdq load`` ingests: a BEIR directory, or one JSONL, CSV or Parquet file.

A BEIR directory (Thakur et al., NeurIPS 2021 Datasets and Benchmarks) holds ``corpus.jsonl``
(``{"_id", "title", "text"}``), ``queries.jsonl`` (``{"_id", "text"}``) and
``qrels/<split>.tsv`` (``query-id  corpus-id  score``, with a header line). It becomes three
tables: ``corpus`` (``id``, ``title``, ``text`` and ``body`` = title + " " + text, the text
BEIR's own baselines index), ``queries`` (``id``, ``text``) and ``qrels`` (``query_id``,
``corpus_id``, ``score``, ``split``).

Every text file is read as strict UTF-8: a byte that is not UTF-8 is an error naming the file,
the line and the byte (never a silently replaced character, never a text column turned binary).
Lines of any length load (the readers' block size grows to the longest line). CSV key columns
are read as text, so ``001`` and ``1e3`` stay what they are written as.

A single file's default text column — indexed for BM25 and embedded unless the caller names
others — is its *longest* text column: the text column (other than the key) with the greatest
mean length in characters per row (a null counts 0, so a mostly empty column does not win on
a few long values), the first of them on a tie. A file with ``title`` and ``body`` is searched
by its body, not by whichever column comes first.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from hotdata_retrieval._json import MAX_JSON_NESTING
from hotdata_retrieval.engines.limits import DEFAULT_MAX_DECODED_BYTES
from hotdata_retrieval.engines.local._parquet import BATCH_BYTES, read_parquet
from hotdata_retrieval.errors import DecodedSizeError as DecodedSizeError
from hotdata_retrieval.errors import InvalidLimitError
from hotdata_retrieval.errors import LoadError as LoadError
from hotdata_retrieval.plan.values import INT64_MAX, INT64_MIN


@attrs.frozen(kw_only=True)
class Source:
    """Tables read from one path, with what to index by default.

    Attributes:
        tables: table name → rows.
        key_column: the key column of the searchable table.
        search_table: the table to index and search (``corpus`` for BEIR).
        text_columns: the default columns to index for BM25 and to embed.
        text_lengths: for a single file, each text column's mean length in characters (the
            default text column is the longest; see the module doc), in column order; empty
            for a BEIR directory, whose text column is fixed.
    """

    tables: dict[str, pa.Table]
    search_table: str
    key_column: str | None
    text_columns: tuple[str, ...]
    text_lengths: dict[str, float] = attrs.field(factory=dict)


_MINIMUM_BLOCK_BYTES = 1 << 20
"""pyarrow's default block size for its CSV and JSON readers; a row must fit in one block."""


MAX_LINE_BYTES = 16 << 20
"""The longest line (one row) a text file may hold: 16 MiB. A longer one is refused before it is
held whole (a 60 MB document took 213 s and 1.2 GB to load)."""

MAX_COLUMNS = 1000
"""The most columns a loaded row may have: a JSON object's keys, a CSV header's names (a
50,000-key JSON object did not load in 240 s)."""


def _refusal(path: Path, limit: int) -> Callable[[int, bool, str], DecodedSizeError]:
    """What refuses ``path`` past ``limit``: ``(bytes, estimated, detail)`` → the error,
    naming the file, the bytes, the limit and how to raise it."""

    def refuse(size: int, estimated: bool, detail: str) -> DecodedSizeError:
        held = f"would hold {'up to' if estimated else 'at least'} {size:,}"
        return DecodedSizeError(
            f"{path}: {held} bytes once decoded ({detail}), more than the {limit:,} a load may "
            "hold; if the machine has the memory, raise the limit (hdq load "
            "--max-decoded-size MiB, read_source(max_decoded_bytes=...))",
            path=str(path),
            size=size,
            limit=limit,
            estimated=estimated,
        )

    return refuse


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of ``path``, decoded as strict UTF-8.

    Raises:
        LoadError: the file cannot be read, a line is longer than :data:`MAX_LINE_BYTES`
            (refused before it is held whole), or a line is not UTF-8 (the message names the
            line and the byte).
    """
    try:
        with path.open("rb") as handle:
            number = 0
            while True:
                raw = handle.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    return
                number += 1
                if len(raw) > MAX_LINE_BYTES:
                    raise LoadError(
                        f"{path}:{number}: the line is longer than {MAX_LINE_BYTES:,} bytes, "
                        "the most one row may hold; split the document"
                    )
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise LoadError(
                        f"{path}:{number}: byte {error.start + 1} of the line "
                        f"(0x{raw[error.start]:02x}) is not UTF-8; re-encode the file as UTF-8"
                    ) from None
    except OSError as error:
        raise LoadError(f"{path}: {error.strerror or error}") from None


def _fits_int64(text: str) -> bool:
    """Whether the integer written as ``text`` fits 64 bits (decided from its digits first, so
    a 5,000-digit integer is never converted: Python refuses more than 4,300)."""
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) <= 19 and INT64_MIN <= int(text) <= INT64_MAX


def _json_checked(path: Path, number: int, line: str) -> object:
    """``line`` parsed as JSON, refusing what would not load as written: a number that is no
    finite float (``NaN``, ``Infinity``, not JSON at all), an integer that does not fit
    a signed 64-bit integer (it would load as a rounded float, or ``inf``), an object of more than
    :data:`MAX_COLUMNS` keys.

    Raises:
        LoadError: naming the line, and the key or value.
    """

    def integer(text: str) -> int:
        if not _fits_int64(text):
            raise LoadError(
                f"{path}:{number}: the integer {text[:24]}{'…' if len(text) > 24 else ''} "
                f"({len(text.lstrip('-'))} digits) does not fit a signed 64-bit integer; write "
                "it as a string"
            )
        return int(text)

    def constant(text: str) -> object:
        raise LoadError(f"{path}:{number}: {text} is not a JSON number; write null or a number")

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise LoadError(f"{path}:{number}: the number {text[:24]} is too large for a float")
        return value

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        if len(items) > MAX_COLUMNS:
            raise LoadError(
                f"{path}:{number}: the object has {len(items):,} keys; a row holds at most "
                f"{MAX_COLUMNS:,} columns"
            )
        return dict(items)

    return json.loads(
        line,
        parse_int=integer,
        parse_float=finite,
        parse_constant=constant,
        object_pairs_hook=pairs,
    )


def _json_nesting(line: str) -> int:
    """How deep ``line``'s arrays and objects nest (brackets inside strings do not count)."""
    depth = deepest = 0
    in_string = escaped = False
    for character in line:
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    return deepest


def _check_nesting(path: Path, number: int, line: str) -> None:
    if line.count("[") + line.count("{") > MAX_JSON_NESTING and (
        _json_nesting(line) > MAX_JSON_NESTING
    ):
        raise LoadError(
            f"{path}:{number}: JSON nested more than {MAX_JSON_NESTING} levels deep; "
            "table rows hold flat values"
        )


MAX_FIELDS = 10_000
"""The most distinct fields a JSON lines file may hold, nested ones included (``{"m": {"a":
1}}`` holds ``m`` and ``m.a``): each is a column or a struct field of the table, and the
reader's cost grows with their number (an 8.8 MB line of 900 objects of 900 keys peaked at
5.4 GB before failing)."""

_EXACT_FLOAT_INTEGERS = 2**53
"""Integers of at most this magnitude are exact in a float64 (IEEE 754 binary64's 53-bit
significand)."""


def _rounded_by_float(value: object) -> bool:
    """Whether ``value`` is an integer a float64 holds only rounded (past 2**53)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return abs(value) > _EXACT_FLOAT_INTEGERS and float(value) != value


class _JsonFields:
    """The fields of a JSON lines file, line by line: at most :data:`MAX_COLUMNS` top-level
    keys across the file (a line of new keys each adds columns to every row: 120 lines of 998
    new keys took 122 s and 1.35 GB) and :data:`MAX_FIELDS` fields at any depth; and no field
    holding both a fraction and an integer a float holds only rounded (past 2**53), which the
    reader would store as that rounded float. It counts the rows and each list's elements, which
    bound what the table holds decoded (:meth:`decoded_bound`).

    Raises:
        LoadError: from :meth:`add`, naming the line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self.columns: set[str] = set()
        self.fields: set[tuple[str, ...]] = set()
        self.elements: dict[tuple[str, ...], int] = {}
        self.fractions: dict[tuple[str, ...], int] = {}
        self.large: dict[tuple[str, ...], tuple[int, int]] = {}

    def decoded_bound(self, text_bytes: int) -> int:
        """The most the file's table holds decoded, in bytes: every field, nested ones
        included, has a slot in every row (a field inside a list's objects, in every element
        of those lists), of at most 8 bytes (a number, a timestamp, a text's or a list's
        offset) and a validity bit; the text itself is at most ``text_bytes``, the file's.
        An object with one key beside one of a thousand is a thousand slots."""
        slots: dict[tuple[str, ...], int] = {(): self.rows}

        def count(path: tuple[str, ...]) -> int:
            if path not in slots:
                if path[-1] == "[]":
                    slots[path] = self.elements.get(path[:-1], 0)
                else:
                    slots[path] = count(path[:-1])
            return slots[path]

        paths = self.fields | {(*path, "[]") for path in self.elements}
        return sum(count(path) for path in sorted(paths, key=len)) * 65 // 8 + text_bytes

    def add(self, number: int, value: object) -> None:
        self.rows += 1
        if isinstance(value, dict):
            self.columns.update(value)
            if len(self.columns) > MAX_COLUMNS:
                raise LoadError(
                    f"{self.path}:{number}: the file's objects hold {len(self.columns):,} "
                    f"distinct keys by this line; a table holds at most {MAX_COLUMNS:,} columns"
                )
        pending: list[tuple[tuple[str, ...], object]] = [((), value)]
        while pending:
            where, item = pending.pop()
            if isinstance(item, dict):
                for key, child in item.items():
                    field = (*where, key)
                    if field not in self.fields:
                        self.fields.add(field)
                        if len(self.fields) > MAX_FIELDS:
                            raise LoadError(
                                f"{self.path}:{number}: the file holds more than "
                                f"{MAX_FIELDS:,} distinct fields, nested ones included, by "
                                "this line"
                            )
                    pending.append((field, child))
            elif isinstance(item, list):
                self.elements[where] = self.elements.get(where, 0) + len(item)
                pending.extend(((*where, "[]"), child) for child in item)
            elif isinstance(item, float):
                self.fractions.setdefault(where, number)
                self._check_exact(where)
            elif _rounded_by_float(item):
                self.large.setdefault(where, (number, cast(int, item)))
                self._check_exact(where)

    def _check_exact(self, where: tuple[str, ...]) -> None:
        if where in self.fractions and where in self.large:
            line, integer = self.large[where]
            shown = ".".join(part for part in where if part != "[]") or "the value"
            raise LoadError(
                f"{self.path}:{line}: field '{shown}': the integer {integer} is in a field of "
                f"fractions (line {self.fractions[where]}), whose floats hold it only rounded "
                f"({float(integer):.17g}); write it as a string"
            )


def _block_size(path: Path, fields: _JsonFields | None = None) -> int:
    """A reader block size that holds ``path``'s longest line, checking every line on the way:
    UTF-8 and at most :data:`MAX_LINE_BYTES`; given ``fields``, the file is JSON lines: its
    nesting, numbers and keys (:func:`_json_checked`) are checked and its fields gathered
    into ``fields``.

    Raises:
        LoadError: naming the line.
    """
    longest = 0
    for number, line in _text_lines(path):
        longest = max(longest, len(line.encode("utf-8")))
        if fields is not None:
            _check_nesting(path, number, line)
            if line.strip():
                try:
                    value = _json_checked(path, number, line)
                except json.JSONDecodeError as error:
                    raise LoadError(f"{path}:{number}: not JSON ({error.msg})") from None
                fields.add(number, value)
    size = _MINIMUM_BLOCK_BYTES
    while size <= longest + 1:
        size *= 2
    return size


def _check_csv(path: Path) -> tuple[list[str], int, bool]:
    """Read ``path`` as CSV in strict mode (Python's ``csv``, which reads quoting as pyarrow
    does: a quote is special only at a field's start; ``\\n``, ``\\r\\n`` and ``\\r`` end
    lines): a quote left open is refused, naming the line it opened on, where pyarrow took the
    rest of the file into one field; so are a row of more than :data:`MAX_COLUMNS` fields
    and a field longer than :data:`MAX_LINE_BYTES`.

    Returns:
        The header row's fields (none for an empty file), the rows after it, and whether
        any line holds more than whitespace.

    Raises:
        LoadError: naming the line.
    """
    # The module's limit is the process's; raised, never lowered, to the longest field loaded.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, strict=True)
        header: list[str] | None = None
        rows = 0
        written = False
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return header or [], rows, written
            except csv.Error as error:
                if "unexpected end of data" in str(error):
                    raise LoadError(
                        f"{path}:{start}: a quote opened on this line is never closed: the rest "
                        "of the file would be one field"
                    ) from None
                raise LoadError(f"{path}:{reader.line_num}: not CSV ({error})") from None
            if len(fields) > MAX_COLUMNS:
                raise LoadError(
                    f"{path}:{start}: the row has {len(fields):,} fields; a row holds at most "
                    f"{MAX_COLUMNS:,} columns"
                )
            written = written or any(field.strip() for field in fields)
            if header is None:
                header = fields
            elif fields:  # a blank line is no row
                rows += 1


_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
"""An integer as a CSV field writes it; a field written with a leading zero (``02134``,
``007``, ``^[+-]?0[0-9]``) is a code whose zeros a number would lose, so its column loads as
text."""


def _csv_text_columns(path: Path, data: pa.Table, texts: Iterable[pa.RecordBatch]) -> list[str]:
    """The number columns of ``data`` to load as text, as they were written. pyarrow reads an
    integer too long for 64 bits as a float (rounded, or ``inf`` past 309 digits), ``inf``
    text as that float, ``0x10`` as 16 and ``02134`` as 2134: ``texts``, the number columns
    read again as text batch by batch, tell what was written. A number column holding a value
    that is no decimal number, or one written with a leading zero, is text. Checked a batch
    at a time with Arrow's kernels, never a Python object per value (a 40 MB file of one
    number per line peaked at 868 MB when it was).

    Raises:
        LoadError: a float column holding an integer past 64 bits, or one its floats hold
            only rounded (past 2**53), or a number that is not finite, before any value
            that makes the column text, naming the column and the line.
    """
    numbers = [
        name
        for name in data.column_names
        if pa.types.is_floating(data.column(name).type)
        or pa.types.is_integer(data.column(name).type)
    ]
    first_text: dict[str, int] = {}
    first_problem: dict[str, tuple[int, str]] = {}
    offset = 0
    for batch in texts if numbers else ():
        for name in numbers:
            if name in first_text:
                continue
            text = batch.column(name)
            value = data.column(name).slice(offset, len(text)).combine_chunks()
            floating = pa.types.is_floating(value.type)
            present = pc.and_(pc.is_valid(text), pc.is_valid(value))
            written = pc.utf8_trim_whitespace(text)
            whole = pc.match_substring_regex(written, r"^[+-]?[0-9]+$")
            textual = pc.match_substring_regex(written, r"^[+-]?0[0-9]")
            if not floating:
                textual = pc.or_(textual, pc.invert(whole))
            textual = pc.and_(present, textual)
            if pc.any(textual).as_py():
                first_text[name] = offset + int(pc.index(textual, True).as_py())
            if not floating or name in first_problem:
                continue
            # Past 15 digits an integer may not fit 64 bits or a float: looked at one by one.
            long = pc.and_(whole, pc.greater(pc.utf8_length(written), 15))
            suspect = pc.and_(present, pc.or_(long, pc.invert(pc.is_finite(value))))
            for row in pc.indices_nonzero(pc.fill_null(suspect, False)).to_pylist():
                problem = _csv_number_problem(text[row].as_py(), value[row].as_py())
                if problem is not None:
                    first_problem[name] = (offset + row, problem)
                    break
        offset += batch.num_rows
    as_text = []
    for name in numbers:
        row, problem = first_problem.get(name, (None, ""))
        if row is not None and row < first_text.get(name, row + 1):
            raise LoadError(
                f"{path}:{row + 2}: column '{name}': {problem}; write it as a string (quote "
                "it), or as a number that fits"
            )
        if name in first_text:
            as_text.append(name)  # 02134 is a code, not the number 2134
    return as_text


def _csv_number_problem(text: str, value: float) -> str | None:
    """Why the float ``value`` a CSV field written ``text`` reads as does not load as
    written (``None``: it does)."""
    written = text.strip()
    whole = _INTEGER_TEXT.fullmatch(written)
    if whole and not _fits_int64(written):
        shown = written[:24] + ("…" if len(written) > 24 else "")
        return (
            f"the integer {shown} ({len(written.lstrip('+-'))} digits) does not fit a signed "
            "64-bit integer"
        )
    if whole and float(int(written)) != int(written):
        return (
            f"the integer {written} is in a column of fractions, whose floats hold it only "
            f"rounded ({float(int(written)):.17g})"
        )
    if not math.isfinite(value):
        return f"{written[:24]!r} is not a finite number"
    return None


_CSV_NULLS = ["", "NULL", "null"]
"""What a CSV field reads as NULL: empty, or ``NULL``. pyarrow's default list also takes
``NA``, ``N/A``, ``NaN`` and others, so a country code ``NA`` or a ``NaN`` measurement would
become NULL without a word."""


def _jsonl_records(path: Path) -> Iterator[dict[str, object]]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        _check_nesting(path, number, line)
        try:
            record = _json_checked(path, number, line)
        except json.JSONDecodeError as error:
            raise LoadError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise LoadError(f"{path}:{number}: expected a JSON object")
        yield record


class _Budget:
    """The decoded bytes a load holds so far, against its limit.

    Raises:
        DecodedSizeError: from :meth:`add`, past the limit.
    """

    def __init__(self, limit: int, refuse: Callable[[int, bool, str], DecodedSizeError]):
        self.limit = limit
        self.refuse = refuse
        self.held = 0

    def add(self, size: int, where: str) -> None:
        self.held += size
        if self.held > self.limit:
            raise self.refuse(self.held, False, f"counted while reading, by {where}")


_GATHER_ROWS = 1 << 16


class _Gathered:
    """Rows of one table, made into Arrow batches every 65,536 rows or
    :data:`~._parquet.BATCH_BYTES` of text, so that the Python objects a batch is made from
    never outnumber a batch (a 20 MB corpus of ``{"_id": 1}`` lines peaked at 414 MB held as
    Python lists); each batch's decoded bytes count against the load's ``budget``."""

    def __init__(self, schema: pa.Schema, budget: _Budget) -> None:
        self.schema = schema
        self.budget = budget
        self.pending: list[list[object]] = [[] for _ in schema]
        self.pending_bytes = 0
        self.batches: list[pa.RecordBatch] = []

    def append(self, row: tuple[object, ...], where: str) -> None:
        for column, value in zip(self.pending, row):
            column.append(value)
        self.pending_bytes += sum(len(value) for value in row if isinstance(value, str))
        if len(self.pending[0]) >= _GATHER_ROWS or self.pending_bytes >= BATCH_BYTES:
            self.flush(where)

    def flush(self, where: str) -> None:
        if self.pending[0]:
            batch = pa.record_batch(
                [pa.array(values, field.type) for values, field in zip(self.pending, self.schema)],
                schema=self.schema,
            )
            self.pending = [[] for _ in self.schema]
            self.pending_bytes = 0
            self.budget.add(batch.nbytes, where)
            self.batches.append(batch)

    def table(self, where: str) -> pa.Table:
        self.flush(where)
        return pa.Table.from_batches(self.batches, schema=self.schema)


def _beir(directory: Path, budget: _Budget) -> Source:
    corpus_path = directory / "corpus.jsonl"
    text = pa.string()
    corpus = _Gathered(
        pa.schema([("id", text), ("title", text), ("text", text), ("body", text)]), budget
    )
    for number, record in enumerate(_jsonl_records(corpus_path), start=1):
        title = str(record.get("title") or "")
        body = str(record.get("text") or "")
        document = _beir_id(record, corpus_path, f"document {number}")
        corpus.append(
            (document, title, body, f"{title} {body}".strip()),
            f"{corpus_path}, document {number:,}",
        )
    tables = {"corpus": corpus.table(str(corpus_path))}
    if not tables["corpus"].num_rows:
        raise _empty_file_error(corpus_path, corpus_path.suffix)
    queries_path = directory / "queries.jsonl"
    if queries_path.exists():
        queries = _Gathered(pa.schema([("id", text), ("text", text)]), budget)
        for number, record in enumerate(_jsonl_records(queries_path), start=1):
            query = _beir_id(record, queries_path, f"query {number}")
            queries.append(
                (query, str(record.get("text") or "")), f"{queries_path}, query {number:,}"
            )
        tables["queries"] = queries.table(str(queries_path))
    qrels_directory = directory / "qrels"
    if qrels_directory.is_dir():
        qrels = _Gathered(
            pa.schema(
                [("query_id", text), ("corpus_id", text), ("score", pa.int64()), ("split", text)]
            ),
            budget,
        )
        for split_file in sorted(qrels_directory.glob("*.tsv")):
            for number, line in _text_lines(split_file):
                parts = line.rstrip("\r\n").split("\t")
                if number == 1 and _is_qrels_header(parts):
                    continue
                if len(parts) != 3:
                    raise LoadError(f"{split_file}:{number}: expected 3 tab-separated fields")
                try:
                    score = int(float(parts[2]))
                except (ValueError, OverflowError):
                    raise LoadError(
                        f"{split_file}:{number}: relevance {parts[2]!r} is not a whole number"
                    ) from None
                qrels.append((parts[0], parts[1], score, split_file.stem), f"{split_file}:{number}")
        tables["qrels"] = qrels.table(str(qrels_directory))
    return Source(tables=tables, search_table="corpus", key_column="id", text_columns=("body",))


def _read_csv(
    location: Path,
    key_column: str | None,
    limit: int,
    refuse: Callable[[int, bool, str], DecodedSizeError],
) -> pa.Table:
    """``location`` read as CSV within ``limit`` bytes decoded: its lines and quoting checked
    first (:func:`_block_size`, :func:`_check_csv`), which counts its rows; every field
    decodes to at most 8 bytes (a number, a timestamp, a text's offset) and a validity bit,
    and the text itself is at most the file, so rows times columns bound the table before a
    value is decoded. The number columns are then checked as written
    (:func:`_csv_text_columns`), read again as text a block at a time.

    Raises:
        DecodedSizeError: the bound is past ``limit``.
        LoadError: naming the line.
    """
    block = _block_size(location)
    header, rows, written = _check_csv(location)
    if not written:
        raise _empty_file_error(location, location.suffix.lower())
    bound = rows * max(len(header), 1) * 65 // 8 + location.stat().st_size
    if bound > limit:
        raise refuse(
            bound,
            True,
            f"{rows:,} rows of {len(header):,} columns, counted line by line before decoding",
        )
    keys = _csv_key_types(header, key_column)

    def options(types: dict[str, pa.DataType], columns: list[str]) -> dict[str, Any]:
        return {
            "read_options": pa_csv.ReadOptions(block_size=block),
            "convert_options": pa_csv.ConvertOptions(
                column_types={**keys, **types},
                include_columns=columns,
                null_values=_CSV_NULLS,
                strings_can_be_null=True,
            ),
        }

    data = pa_csv.read_csv(location, **options({}, []))
    numbers = [
        field.name
        for field in data.schema
        if pa.types.is_floating(field.type) or pa.types.is_integer(field.type)
    ]
    if not numbers:
        return data
    as_strings = {name: pa.string() for name in numbers}
    with pa_csv.open_csv(location, **options(as_strings, numbers)) as texts:
        as_text = _csv_text_columns(location, data, texts)
    if as_text:
        rewritten = pa_csv.read_csv(location, **options(as_strings, as_text))
        for name in as_text:
            position = data.schema.get_field_index(name)
            data = data.set_column(position, name, rewritten.column(name))
    return data


_EMPTY_FILE_NEEDS = {
    ".jsonl": "one JSON object a line",
    ".json": "one JSON object a line",
    ".ndjson": "one JSON object a line",
    ".csv": "a header line naming the columns",
    ".parquet": "a Parquet file's schema and footer",
}
"""What a file of each suffix ``hdq load`` reads must hold at least, for
:func:`_empty_file_error`."""


def _empty_file_error(location: Path, suffix: str) -> LoadError:
    """The refusal of a file holding nothing to load: no byte, or (a text file) only blank
    lines; the same words for every format, naming the file and what it needs (pyarrow's
    own words differ by format: ``Empty CSV file``, ``Empty JSON file``, ``Parquet file size
    is 0 bytes``, and a JSON lines file of blank lines read as a table of no column)."""
    what = "is empty" if location.stat().st_size == 0 else "holds only blank lines"
    return LoadError(
        f"{location}: the file {what}, so there is nothing to load; a {suffix} file needs "
        f"{_EMPTY_FILE_NEEDS[suffix]}"
    )


def read_source(
    path: str | Path,
    *,
    table: str | None = None,
    key_column: str | None = None,
    max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES,
) -> Source:
    """Read a BEIR directory or a ``.jsonl``/``.json``, ``.csv`` or ``.parquet`` file.

    Args:
        path: the directory or file.
        table: the table name for a single file (default: the file's stem).
        key_column: the key column of a single file (default ``id`` when the file has one);
            read as text from a CSV file.

        max_decoded_bytes: the most the tables may hold once decoded, in bytes (default
            :data:`DEFAULT_MAX_DECODED_BYTES`, 4 GiB): bounded before a value is decoded where the
            file tells, counted batch by batch where it does not.

    Raises:
        DecodedSizeError: the file would hold more than ``max_decoded_bytes`` decoded (the
            message names the file, the bytes, the limit and how to raise it).
        LoadError: a missing path, an unknown file type, an empty file (no byte, only blank
            lines, a BEIR corpus of no document), or a malformed file (the message names the
            file, and the line where there is one).
        InvalidLimitError: ``max_decoded_bytes`` is not a whole number of at least 1.
    """
    if (
        isinstance(max_decoded_bytes, bool)
        or not isinstance(max_decoded_bytes, int)
        or max_decoded_bytes < 1
    ):
        raise InvalidLimitError(
            f"max_decoded_bytes must be a whole number of at least 1, got {max_decoded_bytes!r}"
        )
    location = Path(path)
    if not location.exists():
        raise LoadError(f"{location}: no such file or directory")
    if location.is_dir():
        if not (location / "corpus.jsonl").exists():
            raise LoadError(
                f"{location} is not a BEIR directory (no corpus.jsonl); to load one file, "
                "name it: a .jsonl, .csv or .parquet file"
            )
        return _beir(location, _Budget(max_decoded_bytes, _refusal(location, max_decoded_bytes)))
    name = table or location.stem.replace("-", "_").replace(".", "_").lower()
    suffix = location.suffix.lower()
    refuse = _refusal(location, max_decoded_bytes)
    if suffix in _EMPTY_FILE_NEEDS and location.stat().st_size == 0:
        raise _empty_file_error(location, suffix)
    try:
        if suffix in (".jsonl", ".json", ".ndjson"):
            fields = _JsonFields(location)
            options = pa_json.ReadOptions(block_size=_block_size(location, fields))
            if not fields.rows:
                raise _empty_file_error(location, suffix)
            bound = fields.decoded_bound(location.stat().st_size)
            if bound > max_decoded_bytes:
                raise refuse(
                    bound,
                    True,
                    f"{fields.rows:,} rows of {len(fields.columns):,} columns, "
                    f"{len(fields.fields):,} fields in all, counted line by line before "
                    "decoding",
                )
            data = pa_json.read_json(location, read_options=options)
        elif suffix == ".csv":
            data = _read_csv(location, key_column, max_decoded_bytes, refuse)
        elif suffix == ".parquet":
            data = read_parquet(
                location,
                limit=max_decoded_bytes,
                max_value_bytes=MAX_LINE_BYTES,
                refuse=refuse,
            )
        else:
            raise LoadError(
                f"{location}: unknown file type {suffix!r}; use .jsonl, .csv or .parquet"
            )
    except (pa.ArrowInvalid, OSError) as error:
        raise LoadError(f"{location}: {error}") from None
    except (pa.ArrowMemoryError, MemoryError):
        raise LoadError(
            f"{location}: the file needs more memory to read than this machine has"
        ) from None
    _check_column_names(location, data)
    data = _empty_columns_as_text(location, data)
    try:
        data = normalize_text_types(data)
    except (pa.ArrowInvalid, pa.ArrowCapacityError) as error:
        raise LoadError(f"{location}: {' '.join(str(error).split())}") from None
    names = [c.lower() for c in data.column_names]
    if key_column is not None:
        key: str | None = key_column.lower()
    else:
        key = "id" if "id" in names else None
    if key is not None and key in names:
        kind = data.schema.field(names.index(key)).type
        if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
            raise LoadError(
                f"{location}: key column '{key}' holds numbers that are not exact integers "
                f"(read as {kind}: a key such as 99999999999999999999 or 1.5 would change); "
                "write keys as strings"
            )
    lengths = {
        field.name.lower(): _mean_length(data.column(position))
        for position, field in enumerate(data.schema)
        if pa.types.is_string(field.type) and field.name.lower() != key
    }
    longest = max(lengths, key=lambda column: lengths[column], default=None)  # first on a tie
    return Source(
        tables={name: data},
        search_table=name,
        key_column=key,
        text_columns=() if longest is None else (longest,),
        text_lengths=lengths,
    )


def _check_column_names(path: Path, data: pa.Table) -> None:
    """Refuse a file whose columns no engine could store: two of one name (case aside:
    columns are stored lower-cased) or a name that is no identifier (empty, a double quote,
    a control character), by the check every engine's load makes
    (:func:`~hotdata_retrieval.engines.checks.column_names`), before anything is embedded.

    Raises:
        LoadError: naming the file and the column.
    """
    from hotdata_retrieval.engines.checks import column_names
    from hotdata_retrieval.errors import EngineError, PlanError

    try:
        column_names(data.schema)
    except (EngineError, PlanError) as error:
        raise LoadError(f"{path}: {error}") from None


def _mean_length(column: pa.ChunkedArray) -> float:
    """The mean length in characters of a text column's values, a null counting 0 (0 for no
    rows)."""
    mean = pc.mean(pc.fill_null(pc.utf8_length(column), 0)).as_py()
    return 0.0 if mean is None else float(mean)


def _csv_key_types(header: list[str], key_column: str | None) -> dict[str, pa.DataType]:
    """Read the key column (``key_column``, else ``id``, in any case) of a CSV file whose
    header row is ``header`` as text."""
    wanted = (key_column or "id").lower()
    names = [name.removeprefix("\ufeff") for name in header[:1]] + header[1:]  # Excel's BOM
    return {name: pa.string() for name in names if name.strip().lower() == wanted}


def _is_qrels_header(parts: list[str]) -> bool:
    """Whether a qrels file's first line is its header (``query-id  corpus-id  score``)
    rather than a judgment: its last field is a word, not a number."""
    last = parts[-1].strip().lower()
    return (
        bool(last)
        and last.replace("-", "").replace("_", "").isalpha()
        and last
        not in (
            "inf",
            "infinity",
            "nan",
        )
    )


def _beir_id(record: dict[str, object], path: Path, what: str) -> str:
    """A BEIR record's ``_id`` as text; a missing or null one is an error."""
    value = record.get("_id")
    if value is None or isinstance(value, (dict, list)):
        raise LoadError(f"{path}: {what} has no '_id' (got {value!r})")
    return str(value)


def _empty_columns_as_text(path: Path, data: pa.Table) -> pa.Table:
    """A file's column without a single value, which Arrow types ``null``, read as text, at
    any depth: an empty CSV column, a JSON field that is ``null`` on every line, a Parquet
    column of the null type read as ``string``; a JSON field that is ``[]`` (or a list of
    ``null``) on every line, which Arrow types ``list<null>``, as ``list<string>``; a field of
    objects whose key is ``null`` on every line, a struct of that key as text. Text is the
    type a CSV field has and the one a value with no type reads as, so a list of no element
    loads as a list of strings: on every engine that stores lists (SQLite stores none, and
    refuses it as it refuses any list column). A column of Arrow's null type at any depth is
    refused at load on every engine
    (:func:`hotdata_retrieval.engines.checks.check_no_null_type`).

    Raises:
        LoadError: a field that is an object of no key (``{}``) on every line, at any
            depth, which Arrow types ``struct<>`` and no engine stores (Parquet cannot write
            it), naming the file and the column.
    """
    for position, field in enumerate(data.schema):
        typed = _null_as_text(field.type)
        if typed is None:
            raise LoadError(
                f"{path}: column {field.name!r} ({field.type}) holds only objects of no "
                "key ({}) or nulls: a column of no field, which no engine stores; drop it "
                "or give its objects a key"
            )
        if typed != field.type:
            data = data.set_column(
                position, pa.field(field.name, typed), data.column(position).cast(typed)
            )
    return data


def _null_as_text(kind: pa.DataType) -> pa.DataType | None:
    """``kind`` with Arrow's null type, at any depth, made ``string``; ``None`` for a type
    holding a struct of no field."""
    if pa.types.is_null(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        if kind.num_fields == 0:
            return None
        fields = []
        for position in range(kind.num_fields):
            child = kind.field(position)
            typed = _null_as_text(child.type)
            if typed is None:
                return None
            fields.append(child.with_type(typed))
        return pa.struct(fields)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        element = _null_as_text(kind.value_type)
        if element is None:
            return None
        field = kind.value_field.with_type(element)
        return pa.list_(field) if pa.types.is_list(kind) else pa.large_list(field)
    return kind


def normalize_text_types(data: pa.Table) -> pa.Table:
    """Cast dictionary-encoded, large and view strings to plain ``string`` columns, so that
    every text column can be indexed and searched the same way."""
    for position, field in enumerate(data.schema):
        if _is_other_text(field.type):
            data = data.set_column(position, field.name, data.column(position).cast(pa.string()))
    return data


def _is_other_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        return _is_other_text(kind.value_type) or pa.types.is_string(kind.value_type)
    is_view = getattr(pa.types, "is_string_view", None)
    return pa.types.is_large_string(kind) or (is_view is not None and is_view(kind))
