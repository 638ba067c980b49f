"""``hdq load``: ingest a BEIR directory or a JSONL, CSV or Parquet file into the local database."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hotdata_retrieval._words import counted
from hotdata_retrieval.cli._engines import loadable_engine_option, open_store, shown_location
from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._input import is_stdin
from hotdata_retrieval.cli._local import (
    database_note,
    database_option,
    embedder_named,
    reports_errors,
    utf8_path,
)
from hotdata_retrieval.engines.hnsw import (
    CONNECTIVITY_RANGE,
    EXPANSION_ADD_RANGE,
    EXPANSION_SEARCH_RANGE,
    STORAGES,
    HnswSettings,
    HnswSettingsError,
    VectorIndexKind,
)
from hotdata_retrieval.engines.limits import DEFAULT_MAX_DECODED_BYTES
from hotdata_retrieval.extras import require_extra

if TYPE_CHECKING:
    import pyarrow as pa


HNSW_OPTIONS = {
    "connectivity": "--hnsw-connectivity",
    "expansion_add": "--hnsw-expansion-add",
    "expansion_search": "--hnsw-expansion-search",
    "storage": "--hnsw-storage",
}
"""Each HNSW setting's option (:class:`~hotdata_retrieval.engines.hnsw.HnswSettings`)."""

_SETTING_NAME = re.compile(rf"\b({'|'.join(HNSW_OPTIONS)})\b")


def hnsw_settings(
    given: dict[str, Any], *, vector_index: str | None, engine_name: str
) -> HnswSettings | None:
    """The settings the ``--hnsw-*`` options ``given`` (setting → value, ``None`` when not
    given) choose, ``None`` when none is given.

    Raises:
        click.UsageError: an option without ``--vector-index hnsw``, or one PostgreSQL cannot
            keep (``--hnsw-expansion-search``, a ``--hnsw-storage`` other than float32).
    """
    chosen = {setting: value for setting, value in given.items() if value is not None}
    if not chosen:
        return None
    first = HNSW_OPTIONS[next(iter(chosen))]
    if vector_index is None:
        raise click.UsageError(f"{first} needs --vector-index hnsw")
    if engine_name == "postgres":
        if "expansion_search" in chosen:
            raise click.UsageError(
                "--hnsw-expansion-search is for --engine local: on postgres a search sets "
                "hnsw.ef_search to the rows it ranks"
            )
        if chosen.get("storage", "float32") != "float32":
            raise click.UsageError(
                f"--hnsw-storage {chosen['storage']} is for --engine local: pgvector's vector "
                "type stores float32"
            )
    return HnswSettings(**chosen)


def _in_option_terms(error: HnswSettingsError) -> CommandError:
    """``error`` as a command error naming the ``--hnsw-*`` options, not the settings."""
    message = _SETTING_NAME.sub(lambda found: HNSW_OPTIONS[found.group(1)], str(error))
    return CommandError(message)


_KEY_LIKE_NAME = re.compile(r"(?:^|_)(?:id|key|uuid)$|[a-z](?:Id|ID|Key)$", re.IGNORECASE)
"""A column name that reads as a key: ``key``, ``uuid``, ``review_id``, ``reviewId``."""


def likely_keys(data: pa.Table) -> list[str]:
    """The columns of ``data`` that could key its rows: with no null and a distinct value on
    every row, and either named like a key (``review_id``, ``sku_key``, ``uuid``: an integer or
    string column) or of an integer type; those named like a key first. Empty when the table
    has fewer than two rows (nothing to tell apart)."""
    import pyarrow as pa

    from hotdata_retrieval.engines._repeated_keys import repeated_key

    if data.num_rows < 2:
        return []
    found = []
    for name in data.column_names:
        column = data.column(name)
        kind = column.type
        named = bool(_KEY_LIKE_NAME.search(name))
        if not (pa.types.is_integer(kind) or (named and pa.types.is_string(kind))):
            continue
        if column.null_count:
            continue
        if repeated_key(column) is None:
            found.append(name)
    return sorted(found, key=lambda name: not _KEY_LIKE_NAME.search(name))


def _numbered(source: Path, data: pa.Table) -> tuple[pa.Table, str]:
    """``data`` with an ``id`` column numbering its rows from 1, and the note that says so,
    naming a column that could key the rows instead (``--key-column``)."""
    import pyarrow as pa

    candidates = likely_keys(data)
    numbered = data.append_column("id", pa.array(range(1, data.num_rows + 1), pa.int64()))
    note = f"note: {source} has no 'id' column; added one numbering the rows from 1"
    if candidates:
        note += (
            f" ('{candidates[0]}' has a distinct value on every row: "
            f"--key-column {shlex.quote(candidates[0])} keys the rows by it)"
        )
    click.echo(note, err=True)
    return numbered, "id"


def _text_column_note(
    source: Path, lengths: dict[str, float], chosen: Sequence[str], embedded: bool
) -> str:
    """The note saying which text column a file is indexed on by default, and how to change
    it."""
    what = "BM25 index and embeddings" if embedded else "BM25 index"
    if not chosen:
        return (
            f"note: {source} has no text column, so no {what}: hdq search cannot search it "
            "(text search needs a text column)"
        )
    (column,) = chosen
    if len(lengths) == 1:
        return f"note: {what} on '{column}', the only text column"
    others = ", ".join(
        f"'{name}' {length:.0f}" for name, length in lengths.items() if name != column
    )
    return (
        f"note: {what} on '{column}', the longest text column (mean {lengths[column]:.0f} "
        f"characters; {others}); choose others with --text-column COLUMN (repeatable)"
    )


def _taken_message(tables: Sequence[str], where: str, *, single: bool) -> str:
    """The error for a load into tables that already exist in ``where`` (the database as a
    report shows it: never a password)."""
    if len(tables) == 1:
        message = f"table '{tables[0]}' already exists in {where}; pass --replace to replace it"
    else:
        names = ", ".join(f"'{table}'" for table in tables)
        message = f"tables {names} already exist in {where}; pass --replace to replace them"
    if single:
        message += ", or --table NAME to load the file as another table"
    return message


def _store_exists(engine: Any, name: str) -> bool:
    from hotdata_retrieval.engines.errors import EngineError

    try:
        engine.indexes(name)
    except EngineError:
        return False
    return True


def _load_into_store(
    engine_name: str,
    source: Path,
    database: Path,
    *,
    table: str | None,
    text_columns: Sequence[str],
    embed_columns: Sequence[str],
    no_embed: bool,
    vector_index: str | None,
    settings: HnswSettings | None,
    key_column: str | None,
    embedder: str,
    batch_size: int,
    replace: bool,
    output_format: str,
    max_decoded_bytes: int,
) -> None:
    """``hdq load --engine <store>``: the same tables, text indexes and embeddings as the
    local engine's load, written to the store (a NULL, empty or whitespace-only text gets no
    vector)."""

    from hotdata_retrieval.engines.local._embedding_cache import embed_column, embedded_vectors
    from hotdata_retrieval.engines.local.loading import read_source

    if vector_index is not None and engine_name != "postgres":
        raise CommandError(
            f"--vector-index hnsw is for --engine local or postgres, not {engine_name}"
        )
    read = read_source(
        source, table=table, key_column=key_column, max_decoded_bytes=max_decoded_bytes
    )
    texts = tuple(text_columns) or read.text_columns
    embeds: tuple[str, ...] = () if no_embed else (tuple(embed_columns) or texts)
    model = embedder_named(embedder) if embeds else None
    source_kind = click.get_current_context().get_parameter_source("database")
    given = source_kind is not None and source_kind.name != "DEFAULT"
    summary: list[dict[str, Any]] = []
    with open_store(engine_name, database, given=given) as engine:
        taken = [name for name in read.tables if _store_exists(engine, name)]
        if taken and not replace:
            raise CommandError(
                _taken_message(
                    taken,
                    shown_location(engine_name, database),
                    single=len(read.tables) == 1,
                )
            )
        for name, data in read.tables.items():
            searchable = name == read.search_table
            key = key_column if (searchable and key_column) else read.key_column
            if not searchable:
                key = "id" if "id" in data.column_names else None
            elif key is None:
                data, key = _numbered(source, data)
            options: dict[str, Any] = {}
            if searchable and embeds:
                assert model is not None
                for column in embeds:
                    values = data.column(column).to_pylist()
                    # the user's embedding cache: texts any database embedded are not again
                    matrix = embed_column(None, model, name, column, values, True, batch_size)
                    # of the model's length, even when no text is embeddable
                    data = data.append_column(
                        f"{column}_embedding", embedded_vectors(values, matrix)
                    )
                options["vector_model"] = str(model.name)
            if searchable and vector_index is not None:
                options["vector_index"] = vector_index
                if settings is not None:
                    options["hnsw_settings"] = settings
            engine.load_table(
                name,
                data,
                key_column=key,
                text_columns=texts if searchable else (),
                **options,
            )
            indexes = engine.indexes(name)
            summary.append(
                {
                    "table": str(indexes.table),
                    "rows": data.num_rows,
                    "key_column": key,
                    "bm25_columns": list(indexes.bm25_columns),
                    "vector_columns": [vector.column for vector in indexes.vectors],
                }
            )
    if output_format == "json":
        document = {
            "engine": engine_name,
            "database": shown_location(engine_name, database),
            "tables": summary,
        }
        click.echo(json.dumps(document, indent=2))
        return
    for item in summary:
        parts = [f"{item['table']}: {counted(item['rows'], 'row')}"]
        if item["bm25_columns"]:
            parts.append(f"full-text index on {', '.join(item['bm25_columns'])}")
        if item["vector_columns"]:
            parts.append(f"vectors {', '.join(item['vector_columns'])}")
        click.echo("; ".join(parts))


@click.command("load")
@click.argument(
    "source",
    type=click.Path(exists=True, allow_dash=True, path_type=Path),
    callback=utf8_path,
)
@database_option
@loadable_engine_option
@click.option("--table", help="Table name for a single file.  [default: the file's stem]")
@click.option(
    "--text-column",
    "text_columns",
    multiple=True,
    metavar="COLUMN",
    help="Build a BM25 index on COLUMN (repeatable).  [default: body for BEIR, else the "
    "longest text column, by mean length]",
)
@click.option(
    "--embed-column",
    "embed_columns",
    multiple=True,
    metavar="COLUMN",
    help="Embed COLUMN into COLUMN_embedding (repeatable).  [default: the text columns]",
)
@click.option("--no-embed", is_flag=True, help="Build BM25 indexes only; no vectors.")
@click.option(
    "--vector-index",
    type=click.Choice([kind.value for kind in VectorIndexKind]),
    help="Also build an approximate (HNSW) index of each vector column: unfiltered "
    "nearest-neighbour queries use it, all others scan exactly. Needs the ann extra.  "
    "[default: exact search only]",
)
@click.option(
    "--hnsw-connectivity",
    type=click.IntRange(*CONNECTIVITY_RANGE),
    metavar="N",
    help="Neighbours each row links to in the HNSW index (pgvector's m): more is better recall, "
    "more memory, a slower build.  [default: 16]",
)
@click.option(
    "--hnsw-expansion-add",
    type=click.IntRange(*EXPANSION_ADD_RANGE),
    metavar="N",
    help="Candidates each insert considers while the HNSW index is built (pgvector's "
    "ef_construction).  [default: 64]",
)
@click.option(
    "--hnsw-expansion-search",
    type=click.IntRange(*EXPANSION_SEARCH_RANGE),
    metavar="N",
    help="Candidates each search gathers from the HNSW index and re-scores exactly; local "
    "engine only.  [default: 64]",
)
@click.option(
    "--hnsw-storage",
    type=click.Choice(STORAGES),
    help="How the HNSW index stores vectors; local engine only (postgres: float32).  "
    "[default: int8 for cosine, float32 otherwise]",
)
@click.option("--key-column", metavar="COLUMN", help="The unique key.  [default: id]")
@click.option(
    "--embedder",
    type=click.Choice(["default", "hashing"]),
    default="default",
    show_default=True,
    help="default: the offline all-MiniLM-L6-v2 model; hashing: fast, no meaning (tests).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Texts embedded per call of the model.",
)
@click.option(
    "--max-decoded-size",
    "max_decoded_mib",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_DECODED_BYTES // (1024 * 1024),
    show_default=True,
    metavar="MiB",
    help="The most the file may hold once decoded; a file past it is refused before it is "
    "held (bounded from its metadata or its lines before decoding, else counted batch by "
    "batch).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace tables of the same name (the file's stem or --table; corpus, queries and "
    "qrels for BEIR). Without it, loading into an existing table is an error.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a line per table; json: one JSON document on stdout.",
)
@reports_errors
def load(
    source: Path,
    database: Path,
    engine_name: str,
    table: str | None,
    text_columns: Sequence[str],
    embed_columns: Sequence[str],
    no_embed: bool,
    vector_index: str | None,
    hnsw_connectivity: int | None,
    hnsw_expansion_add: int | None,
    hnsw_expansion_search: int | None,
    hnsw_storage: str | None,
    key_column: str | None,
    embedder: str,
    batch_size: int,
    max_decoded_mib: int,
    replace: bool,
    output_format: str,
) -> None:
    """Load SOURCE into the local database (or the store --engine names), index it for BM25
    and embed it.

    SOURCE is a BEIR directory (corpus.jsonl, queries.jsonl, qrels/*.tsv) or a .jsonl, .csv or
    .parquet file. A file's BM25 index and embeddings go on its longest text column (by mean
    length) unless --text-column names others. Loading into an existing table needs --replace;
    an interrupted load leaves the previous one intact, and unchanged texts are not embedded
    again. The --hnsw-* options choose how --vector-index hnsw builds and searches its index.
    """
    settings = hnsw_settings(
        {
            "connectivity": hnsw_connectivity,
            "expansion_add": hnsw_expansion_add,
            "expansion_search": hnsw_expansion_search,
            "storage": hnsw_storage,
        },
        vector_index=vector_index,
        engine_name=engine_name,
    )
    try:
        _load(
            source,
            database,
            engine_name,
            table,
            text_columns,
            embed_columns,
            no_embed,
            vector_index,
            settings,
            key_column,
            embedder,
            batch_size,
            replace,
            output_format,
            max_decoded_mib * 1024 * 1024,
        )
    except HnswSettingsError as error:
        raise _in_option_terms(error) from None


def _load(
    source: Path,
    database: Path,
    engine_name: str,
    table: str | None,
    text_columns: Sequence[str],
    embed_columns: Sequence[str],
    no_embed: bool,
    vector_index: str | None,
    settings: HnswSettings | None,
    key_column: str | None,
    embedder: str,
    batch_size: int,
    replace: bool,
    output_format: str,
    max_decoded_bytes: int,
) -> None:
    """``hdq load``'s work, its options checked."""
    if is_stdin(source):
        raise click.BadParameter(
            "'-' (stdin) cannot be loaded: the format comes from the file's suffix (.jsonl, "
            ".csv, .parquet) or a BEIR directory's layout; save the data to a file first",
            param_hint="'SOURCE'",
        )
    if table is not None and not table.strip():
        raise click.BadParameter("must not be empty", param_hint="'--table'")
    if table is not None and source.is_dir():
        raise click.BadParameter(
            f"{table!r} names the table of a single file; a BEIR directory loads the tables "
            "corpus, queries and qrels",
            param_hint="'--table'",
        )
    if engine_name != "local":
        _load_into_store(
            engine_name,
            source,
            database,
            table=table,
            text_columns=text_columns,
            embed_columns=embed_columns,
            no_embed=no_embed,
            vector_index=vector_index,
            settings=settings,
            key_column=key_column,
            embedder=embedder,
            batch_size=batch_size,
            replace=replace,
            output_format=output_format,
            max_decoded_bytes=max_decoded_bytes,
        )
        return
    require_extra("local", needed_by="this command")
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.engines.local.engine import TableLoad
    from hotdata_retrieval.engines.local.loading import read_source

    read = read_source(
        source, table=table, key_column=key_column, max_decoded_bytes=max_decoded_bytes
    )
    columns = read.tables[read.search_table].column_names
    for flag, given in (("--text-column", text_columns), ("--embed-column", embed_columns)):
        for column in given:
            if column not in columns:
                raise CommandError(
                    f"{flag} {column!r} is not a column of {source}; columns: {', '.join(columns)}"
                )
    texts = tuple(text_columns) or read.text_columns
    embeds: tuple[str, ...] = () if no_embed else (tuple(embed_columns) or texts)
    model = embedder_named(embedder) if embeds else None
    summary: list[dict[str, Any]] = []
    default_text = not text_columns and bool(read.text_lengths or not read.text_columns)
    created = not (database / "catalog.json").exists()
    with LocalEngine(database, embedder=model) as engine:
        taken = [
            str(engine.table_name(name))
            for name in read.tables
            if engine.table_name(name).name in engine.tables
        ]
        if taken and not replace:
            raise CommandError(
                _taken_message(taken, str(database.resolve()), single=len(read.tables) == 1)
            )
        if default_text:
            note = _text_column_note(source, read.text_lengths, texts, bool(embeds))
            click.echo(note, err=True)
        loads: list[TableLoad] = []
        for name, data in read.tables.items():
            searchable = name == read.search_table
            key = key_column if (searchable and key_column) else read.key_column
            if not searchable:
                key = "id" if "id" in data.column_names else None
            elif key is None:
                data, key = _numbered(source, data)
            loads.append(
                TableLoad(
                    name=name,
                    data=data,
                    key_column=key,
                    text_columns=texts if searchable else (),
                    embed_columns=embeds if searchable else (),
                    vector_index=vector_index if searchable else None,
                    hnsw_settings=settings if searchable else None,
                )
            )
        # One commit for every table of the source: a BEIR directory lands whole or not at all.
        for entry in engine.load_tables(loads, progress=True, batch_size=batch_size):
            summary.append(
                {
                    "table": f"{engine.catalog}.{engine.schema}.{entry.name}",
                    "rows": entry.rows,
                    "key_column": entry.key_column,
                    "bm25_columns": list(entry.text_indexes),
                    "ann_indexes": [
                        {"column": index.column, "function": index.function}
                        for index in entry.ann_indexes
                    ],
                    "hnsw_settings": (
                        entry.hnsw_settings.to_document() if entry.hnsw_settings else None
                    ),
                    "vector_columns": [
                        {
                            "column": vector.name,
                            "source_column": vector.source_column,
                            "model": vector.model,
                            "dimensions": vector.dimensions,
                        }
                        for vector in entry.vector_columns
                    ],
                }
            )
    if output_format == "json":
        document: dict[str, Any] = {"database": str(database.resolve()), "tables": summary}
        document["replaced"] = taken
        document["default_text_column"] = (
            {"columns": list(texts), "mean_characters": read.text_lengths} if default_text else None
        )
        click.echo(json.dumps(document, indent=2))
        click.echo(database_note(database, created=created), err=True)
        return
    for name in taken:
        click.echo(f"note: replaced the previous {name}", err=True)
    for item in summary:
        parts = [f"{item['table']}: {counted(item['rows'], 'row')}"]
        if item["bm25_columns"]:
            parts.append(f"BM25 on {', '.join(item['bm25_columns'])}")
        for vector in item["vector_columns"]:
            parts.append(f"{vector['column']} ({vector['dimensions']}-d)")
        click.echo("; ".join(parts))
    click.echo(database_note(database, created=created), err=True)
