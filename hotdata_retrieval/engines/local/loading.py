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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from hotdata_retrieval.errors import LoadError as LoadError


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

MAX_PARQUET_BYTES = 4 << 30
"""The most a Parquet file may hold once decompressed and decoded: 4 GiB. Checked first in its
own metadata (the sizes of its row groups and column chunks), before a byte of data is read —
a 1,449-byte file that decompressed to 7.8 GB made ``hdq load`` peak at 7.8 GB — then batch by
batch as dictionary-encoded text would expand, which the metadata does not tell: a 4,875-byte
file of one 1 MB string referenced 2,000 times expands to 2 GB."""


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


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _fits_int64(text: str) -> bool:
    """Whether the integer written as ``text`` fits 64 bits (decided from its digits first, so
    a 5,000-digit integer is never converted: Python refuses more than 4,300)."""
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) <= 19 and _INT64[0] <= int(text) <= _INT64[1]


def _json_checked(path: Path, number: int, line: str) -> object:
    """``line`` parsed as JSON, refusing what would not load as written: a number that is no
    finite float (``NaN``, ``Infinity``, not JSON at all), an integer that does not fit
    64 bits (it would load as a rounded float, or ``inf``), an object of more than
    :data:`MAX_COLUMNS` keys.

    Raises:
        LoadError: naming the line, and the key or value.
    """

    def integer(text: str) -> int:
        if not _fits_int64(text):
            raise LoadError(
                f"{path}:{number}: the integer {text[:24]}{'…' if len(text) > 24 else ''} "
                f"({len(text.lstrip('-'))} digits) does not fit 64 bits; write it as a string"
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


MAX_JSON_NESTING = 64
"""The deepest a JSON value in a loaded file may nest arrays and objects. pyarrow's JSON reader
recurses per level and crashes the process on a line nested about 100,000 deep; no table
column nests anywhere near this."""


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
    reader would store as that rounded float.

    Raises:
        LoadError: from :meth:`add`, naming the line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.columns: set[str] = set()
        self.fields: set[tuple[str, ...]] = set()
        self.fractions: dict[tuple[str, ...], int] = {}
        self.large: dict[tuple[str, ...], tuple[int, int]] = {}

    def add(self, number: int, value: object) -> None:
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


def _block_size(path: Path, *, json_lines: bool = False) -> int:
    """A reader block size that holds ``path``'s longest line, checking every line on the way:
    UTF-8 and at most :data:`MAX_LINE_BYTES`; for JSON lines, nesting, numbers and keys
    (:func:`_json_checked`) and the fields of the whole file (:class:`_JsonFields`).

    Raises:
        LoadError: naming the line.
    """
    longest = 0
    fields = _JsonFields(path)
    for number, line in _text_lines(path):
        longest = max(longest, len(line.encode("utf-8")))
        if json_lines:
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


def _check_csv(path: Path) -> list[str]:
    """Read ``path`` as CSV in strict mode (Python's ``csv``, which reads quoting as pyarrow
    does: a quote is special only at a field's start; ``\\n``, ``\\r\\n`` and ``\\r`` end
    lines): a quote left open is refused, naming the line it opened on, where pyarrow took the
    rest of the file into one field; so are a row of more than :data:`MAX_COLUMNS` fields
    and a field longer than :data:`MAX_LINE_BYTES`.

    Returns:
        The header row's fields (none for an empty file).

    Raises:
        LoadError: naming the line.
    """
    # The module's limit is the process's; raised, never lowered, to the longest field loaded.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, strict=True)
        header: list[str] | None = None
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return header or []
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
            if header is None:
                header = fields


_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")

_LEADING_ZERO = re.compile(r"[+-]?0[0-9]")
"""A number written with a leading zero (``02134``, ``007``): a code whose zeros a number
would lose, so its column loads as text."""


def _checked_csv_numbers(path: Path, data: pa.Table, read: Callable[..., pa.Table]) -> pa.Table:
    """``data`` with its number columns as they were written. pyarrow reads an integer too
    long for 64 bits as a float (rounded, or ``inf`` past 309 digits), ``inf`` text as that
    float, ``0x10`` as 16 and ``02134`` as 2134: the number columns are read again as text to
    see what was written. A number column holding a value that is no decimal number, or one
    written with a leading zero, is text.

    Raises:
        LoadError: a float column holding an integer past 64 bits, or one its floats hold
            only rounded (past 2**53), or a number that is not finite, naming the column and
            the line.
    """
    numbers = [
        name
        for name in data.column_names
        if pa.types.is_floating(data.column(name).type)
        or pa.types.is_integer(data.column(name).type)
    ]
    if not numbers:
        return data
    texts = read({name: pa.string() for name in numbers})
    as_text: dict[str, pa.DataType] = {}
    for name in numbers:
        floating = pa.types.is_floating(data.column(name).type)
        for row, (text, value) in enumerate(
            zip(texts.column(name).to_pylist(), data.column(name).to_pylist())
        ):
            if text is None or value is None:
                continue
            written = text.strip()
            whole = _INTEGER_TEXT.fullmatch(written)
            if _LEADING_ZERO.match(written) or (not floating and not whole):
                as_text[name] = pa.string()  # 02134 is a code, not the number 2134
                break
            if not floating:
                continue
            if whole and not _fits_int64(written):
                shown = written[:24] + ("…" if len(written) > 24 else "")
                problem = f"the integer {shown} ({len(written.lstrip('+-'))} digits) does not "
                problem += "fit 64 bits"
            elif whole and float(int(written)) != int(written):
                problem = (
                    f"the integer {written} is in a column of fractions, whose floats hold it "
                    f"only rounded ({float(int(written)):.17g})"
                )
            elif not math.isfinite(value):
                problem = f"{written[:24]!r} is not a finite number"
            else:
                continue
            raise LoadError(
                f"{path}:{row + 2}: column '{name}': {problem}; write it as a string (quote "
                "it), or as a number that fits"
            )
    return read(as_text) if as_text else data


_CSV_NULLS = ["", "NULL", "null"]
"""What a CSV field reads as NULL: empty, or ``NULL``. pyarrow's default list also takes
``NA``, ``N/A``, ``NaN`` and others, so a country code ``NA`` or a ``NaN`` measurement would
become NULL without a word."""


def _read_parquet(path: Path) -> pa.Table:
    """``path`` read within :data:`MAX_PARQUET_BYTES` once decompressed and decoded.

    The metadata's sizes are checked first, before a byte of data is read (row groups and
    column chunks, uncompressed). They do not tell what a dictionary-encoded column expands
    to (a 1 MB string referenced a thousand times is a few kilobytes of indices), so the file
    is then read batch by batch with every text and binary column (at any depth: in lists and
    structs too) kept as dictionaries, and each batch's expanded size is counted — a
    dictionary as the lengths of the values its indices name — before anything is expanded.
    A value longer than :data:`MAX_LINE_BYTES` (one document) is refused too.

    Raises:
        LoadError: naming the sizes, or the file is not Parquet.
    """
    file = pq.ParquetFile(path)
    metadata = file.metadata
    stated = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        chunks = sum(
            max(0, row_group.column(column).total_uncompressed_size)
            for column in range(row_group.num_columns)
        )
        stated += max(chunks, row_group.total_byte_size)
    on_disk = path.stat().st_size
    if stated > MAX_PARQUET_BYTES:
        raise LoadError(
            f"{path}: the file holds {stated:,} bytes once decompressed (its metadata says), "
            f"more than the {MAX_PARQUET_BYTES:,} a load reads ({on_disk:,} bytes on disk)"
        )
    encoded = [column.path for column in file.schema if column.physical_type == "BYTE_ARRAY"]
    reopened = pq.ParquetFile(path, read_dictionary=encoded)
    batches: list[pa.RecordBatch] = []
    total = 0
    for batch in reopened.iter_batches(batch_size=8192):
        for name, column in zip(batch.schema.names, batch.columns):
            size, longest = _expanded_size(column)
            if longest > MAX_LINE_BYTES:
                raise LoadError(
                    f"{path}: column '{name}' holds a value of {longest:,} bytes; one value "
                    f"holds at most {MAX_LINE_BYTES:,} (split the document)"
                )
            total += size
        if total > MAX_PARQUET_BYTES:
            raise LoadError(
                f"{path}: the file holds more than {MAX_PARQUET_BYTES:,} bytes once decoded "
                f"(its dictionary-encoded values expand; {on_disk:,} bytes on disk)"
            )
        batches.append(batch)
    if not batches:
        return file.schema_arrow.empty_table()
    read = pa.Table.from_batches(batches)
    return read.cast(pa.schema([field.with_type(_decoded(field.type)) for field in read.schema]))


def _decoded(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every dictionary type, at any depth, replaced by its value type."""
    if pa.types.is_dictionary(kind):
        return _decoded(kind.value_type)
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_decoded(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_decoded(kind.value_type)))
    if pa.types.is_fixed_size_list(kind):
        field = kind.value_field.with_type(_decoded(kind.value_type))
        return pa.list_(field, kind.list_size)
    if pa.types.is_struct(kind):
        return pa.struct(
            [kind.field(i).with_type(_decoded(kind.field(i).type)) for i in range(kind.num_fields)]
        )
    if pa.types.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(_decoded(kind.key_type)),
            kind.item_field.with_type(_decoded(kind.item_type)),
        )
    return kind


def _expanded_size(column: pa.Array) -> tuple[int, int]:
    """``(bytes, longest value's bytes)`` of ``column`` once every dictionary in it is
    expanded, at any depth (the longest value counts text and binary values; 0 for none)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        lengths = pc.fill_null(pc.binary_length(column.dictionary), 0)
        named = pc.take(lengths, pc.drop_null(column.indices))
        total = int(pc.sum(named).as_py() or 0)
        return total, int(pc.max(named).as_py() or 0) if len(named) else 0
    if (
        pa.types.is_list(kind)
        or pa.types.is_large_list(kind)
        or pa.types.is_fixed_size_list(kind)
        or pa.types.is_map(kind)
    ):
        size, longest = _expanded_size(column.flatten())
        return size + 8 * (len(column) + 1), longest
    if pa.types.is_struct(kind):
        sizes = [_expanded_size(child) for child in column.flatten()]
        return sum(size for size, _ in sizes), max((longest for _, longest in sizes), default=0)
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    ):
        lengths = pc.fill_null(pc.binary_length(column), 0)
        return int(column.nbytes), int(pc.max(lengths).as_py() or 0) if len(column) else 0
    return int(column.nbytes), 0


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


def _beir(directory: Path) -> Source:
    corpus_path = directory / "corpus.jsonl"
    ids, titles, texts = [], [], []
    for number, record in enumerate(_jsonl_records(corpus_path), start=1):
        ids.append(_beir_id(record, corpus_path, f"document {number}"))
        titles.append(str(record.get("title") or ""))
        texts.append(str(record.get("text") or ""))
    bodies = [f"{title} {text}".strip() for title, text in zip(titles, texts)]
    tables = {
        "corpus": pa.table({"id": ids, "title": titles, "text": texts, "body": bodies}),
    }
    queries_path = directory / "queries.jsonl"
    if queries_path.exists():
        query_records = list(_jsonl_records(queries_path))
        query_ids = [
            _beir_id(record, queries_path, f"query {number}")
            for number, record in enumerate(query_records, start=1)
        ]
        tables["queries"] = pa.table(
            {
                "id": query_ids,
                "text": [str(record.get("text") or "") for record in query_records],
            }
        )
    qrels_directory = directory / "qrels"
    if qrels_directory.is_dir():
        columns: dict[str, list[object]] = {
            "query_id": [],
            "corpus_id": [],
            "score": [],
            "split": [],
        }
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
                columns["query_id"].append(parts[0])
                columns["corpus_id"].append(parts[1])
                columns["score"].append(score)
                columns["split"].append(split_file.stem)
        tables["qrels"] = pa.table(columns)
    return Source(tables=tables, search_table="corpus", key_column="id", text_columns=("body",))


def read_source(
    path: str | Path, *, table: str | None = None, key_column: str | None = None
) -> Source:
    """Read a BEIR directory or a ``.jsonl``/``.json``, ``.csv`` or ``.parquet`` file.

    Args:
        path: the directory or file.
        table: the table name for a single file (default: the file's stem).
        key_column: the key column of a single file (default ``id`` when the file has one);
            read as text from a CSV file.

    Raises:
        LoadError: a missing path, an unknown file type, or a malformed file (the message
            names the file, and the line where there is one).
    """
    location = Path(path)
    if not location.exists():
        raise LoadError(f"{location}: no such file or directory")
    if location.is_dir():
        if not (location / "corpus.jsonl").exists():
            raise LoadError(f"{location}: a directory must be in BEIR layout (corpus.jsonl)")
        return _beir(location)
    name = table or location.stem.replace("-", "_").replace(".", "_").lower()
    suffix = location.suffix.lower()
    try:
        if suffix in (".jsonl", ".json", ".ndjson"):
            options = pa_json.ReadOptions(block_size=_block_size(location, json_lines=True))
            data = pa_json.read_json(location, read_options=options)
        elif suffix == ".csv":
            block = _block_size(location)
            keys = _csv_key_types(_check_csv(location), key_column)

            def read(types: dict[str, pa.DataType]) -> pa.Table:
                return pa_csv.read_csv(
                    location,
                    read_options=pa_csv.ReadOptions(block_size=block),
                    convert_options=pa_csv.ConvertOptions(
                        column_types={**keys, **types},
                        null_values=_CSV_NULLS,
                        strings_can_be_null=True,
                    ),
                )

            data = _checked_csv_numbers(location, read({}), read)
        elif suffix == ".parquet":
            data = _read_parquet(location)
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
    """Refuse a file two of whose columns have one name (case aside: columns are stored
    lower-cased).

    Raises:
        LoadError: naming the column.
    """
    seen: set[str] = set()
    for name in data.column_names:
        if name.lower() in seen:
            raise LoadError(
                f"{path}: the column {name!r} appears twice (names are compared in lower "
                "case); rename one"
            )
        seen.add(name.lower())


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
