"""Read what ``hdq load`` ingests: a BEIR directory, or one JSONL, CSV or Parquet file.

A BEIR directory (Thakur et al., NeurIPS 2021 Datasets and Benchmarks) holds ``corpus.jsonl``
(``{"_id", "title", "text"}``), ``queries.jsonl`` (``{"_id", "text"}``) and
``qrels/<split>.tsv`` (``query-id  corpus-id  score``, with a header line). It becomes three
tables: ``corpus`` (``id``, ``title``, ``text`` and ``body`` = title + " " + text, the text
BEIR's own baselines index), ``queries`` (``id``, ``text``) and ``qrels`` (``query_id``,
``corpus_id``, ``score``, ``split``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyarrow as pa
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
    """

    tables: dict[str, pa.Table]
    search_table: str
    key_column: str | None
    text_columns: tuple[str, ...]


def _jsonl_records(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
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
        if "_id" not in record:
            raise LoadError(f"{corpus_path}: document {number} has no '_id'")
        ids.append(str(record["_id"]))
        titles.append(str(record.get("title") or ""))
        texts.append(str(record.get("text") or ""))
    bodies = [f"{title} {text}".strip() for title, text in zip(titles, texts)]
    tables = {
        "corpus": pa.table({"id": ids, "title": titles, "text": texts, "body": bodies}),
    }
    queries_path = directory / "queries.jsonl"
    if queries_path.exists():
        query_records = list(_jsonl_records(queries_path))
        for number, record in enumerate(query_records, start=1):
            if "_id" not in record:
                raise LoadError(f"{queries_path}: query {number} has no '_id'")
        tables["queries"] = pa.table(
            {
                "id": [str(record["_id"]) for record in query_records],
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
            with split_file.open(encoding="utf-8") as lines:
                for number, line in enumerate(lines, start=1):
                    parts = line.rstrip("\n").split("\t")
                    if number == 1 and not parts[-1].lstrip("-").isdigit():
                        continue  # the header line
                    if len(parts) != 3:
                        raise LoadError(f"{split_file}:{number}: expected 3 tab-separated fields")
                    try:
                        score = int(float(parts[2]))
                    except ValueError:
                        raise LoadError(
                            f"{split_file}:{number}: relevance {parts[2]!r} is not a number"
                        ) from None
                    columns["query_id"].append(parts[0])
                    columns["corpus_id"].append(parts[1])
                    columns["score"].append(score)
                    columns["split"].append(split_file.stem)
        tables["qrels"] = pa.table(columns)
    return Source(tables=tables, search_table="corpus", key_column="id", text_columns=("body",))


def read_source(path: str | Path, *, table: str | None = None) -> Source:
    """Read a BEIR directory or a ``.jsonl``/``.json``, ``.csv`` or ``.parquet`` file.

    Args:
        path: the directory or file.
        table: the table name for a single file (default: the file's stem).

    Raises:
        LoadError: a missing path, an unknown file type, or a malformed file.
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
            data = pa_json.read_json(location)
        elif suffix == ".csv":
            data = pa_csv.read_csv(location)
        elif suffix == ".parquet":
            data = pq.read_table(location)
        else:
            raise LoadError(
                f"{location}: unknown file type {suffix!r}; use .jsonl, .csv or .parquet"
            )
    except (pa.ArrowInvalid, OSError) as error:
        raise LoadError(f"{location}: {error}") from None
    data = normalize_text_types(data)
    key = "id" if "id" in [c.lower() for c in data.column_names] else None
    texts = tuple(
        field.name.lower()
        for field in data.schema
        if pa.types.is_string(field.type) and field.name.lower() != key
    )
    return Source(tables={name: data}, search_table=name, key_column=key, text_columns=texts[:1])


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
