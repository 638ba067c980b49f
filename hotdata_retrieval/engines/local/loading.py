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
import io
import json
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from hotdata_retrieval.errors import HotdataRetrievalError

__all__ = ["LoadError", "Source", "normalize_text_types", "read_source"]


class LoadError(HotdataRetrievalError):
    """A file or directory cannot be read as a table (the message names the file and line)."""


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


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of ``path``, decoded as strict UTF-8.

    Raises:
        LoadError: the file cannot be read, or a line is not UTF-8 (the message names the
            line and the byte).
    """
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise LoadError(
                        f"{path}:{number}: byte {error.start + 1} of the line "
                        f"(0x{raw[error.start]:02x}) is not UTF-8; re-encode the file as UTF-8"
                    ) from None
    except OSError as error:
        raise LoadError(f"{path}: {error.strerror or error}") from None


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


def _block_size(path: Path, *, json_lines: bool = False) -> int:
    """A reader block size that holds ``path``'s longest line (checking it is UTF-8, and for
    JSON lines that they do not nest too deeply)."""
    longest = 0
    for number, line in _text_lines(path):
        longest = max(longest, len(line.encode("utf-8")))
        if json_lines:
            _check_nesting(path, number, line)
    size = _MINIMUM_BLOCK_BYTES
    while size <= longest + 1:
        size *= 2
    return size


def _jsonl_records(path: Path) -> Iterator[dict[str, object]]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        _check_nesting(path, number, line)
        try:
            record = json.loads(line)
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
            data = pa_csv.read_csv(
                location,
                read_options=pa_csv.ReadOptions(block_size=_block_size(location)),
                convert_options=pa_csv.ConvertOptions(
                    column_types=_csv_key_types(location, key_column)
                ),
            )
        elif suffix == ".parquet":
            data = pq.read_table(location)
        else:
            raise LoadError(
                f"{location}: unknown file type {suffix!r}; use .jsonl, .csv or .parquet"
            )
    except (pa.ArrowInvalid, OSError) as error:
        raise LoadError(f"{location}: {error}") from None
    data = normalize_text_types(data)
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


def _mean_length(column: pa.ChunkedArray) -> float:
    """The mean length in characters of a text column's values, a null counting 0 (0 for no
    rows)."""
    mean = pc.mean(pc.fill_null(pc.utf8_length(column), 0)).as_py()
    return 0.0 if mean is None else float(mean)


def _csv_key_types(path: Path, key_column: str | None) -> dict[str, pa.DataType]:
    """Read the key column (``key_column``, else ``id``, in any case) of a CSV file as text."""
    wanted = (key_column or "id").lower()
    header = next(_text_lines(path), (1, ""))[1].removeprefix("\ufeff")  # Excel's UTF-8 BOM
    names = next(csv.reader(io.StringIO(header)), [])
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
