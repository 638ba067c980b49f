"""``hdq load``: ingest a BEIR directory or a JSONL, CSV or Parquet file into the local database."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from hotdata_retrieval.cli._local import database_option, embedder_named, reports_errors
from hotdata_retrieval.extras import require_extra

__all__ = ["load"]


@click.command("load")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@database_option
@click.option("--table", help="Table name for a single file.  [default: the file's stem]")
@click.option(
    "--text-column",
    "text_columns",
    multiple=True,
    metavar="COLUMN",
    help="Build a BM25 index on COLUMN (repeatable).  [default: body for BEIR, else the "
    "first text column]",
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
    type=click.Choice(["hnsw"]),
    help="Also build an approximate (HNSW) index of each vector column: unfiltered "
    "nearest-neighbour queries use it, all others scan exactly. Needs the ann extra.  "
    "[default: exact search only]",
)
@click.option("--key-column", metavar="COLUMN", help="The unique key.  [default: id]")
@click.option(
    "--embedder",
    type=click.Choice(["default", "hashing"]),
    default="default",
    show_default=True,
    help="default: the offline all-MiniLM-L6-v2 model; hashing: fast, no meaning (tests).",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@reports_errors
def load(
    source: Path,
    database: Path,
    table: str | None,
    text_columns: Sequence[str],
    embed_columns: Sequence[str],
    no_embed: bool,
    vector_index: str | None,
    key_column: str | None,
    embedder: str,
    batch_size: int,
    output_format: str,
) -> None:
    """Load SOURCE into the local database, index it for BM25 and embed it.

    SOURCE is a BEIR directory (corpus.jsonl, queries.jsonl, qrels/*.tsv) or a .jsonl, .csv or
    .parquet file. Loading again replaces the table; an interrupted load leaves the previous
    one intact, and unchanged texts are not embedded again.
    """
    require_extra("local", needed_by="hdq load")
    import pyarrow as pa

    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.engines.local.engine import TableLoad
    from hotdata_retrieval.engines.local.loading import read_source

    read = read_source(source, table=table, key_column=key_column)
    texts = tuple(text_columns) or read.text_columns
    embeds: tuple[str, ...] = () if no_embed else (tuple(embed_columns) or texts)
    model = embedder_named(embedder) if embeds else None
    summary: list[dict[str, Any]] = []
    with LocalEngine(database, embedder=model) as engine:
        loads: list[TableLoad] = []
        for name, data in read.tables.items():
            searchable = name == read.search_table
            key = key_column if (searchable and key_column) else read.key_column
            if not searchable:
                key = "id" if "id" in data.column_names else None
            elif key is None:
                data = data.append_column("id", pa.array(range(1, data.num_rows + 1), pa.int64()))
                key = "id"
                click.echo(
                    f"note: {source} has no 'id' column; added one numbering the rows from 1",
                    err=True,
                )
            loads.append(
                TableLoad(
                    name=name,
                    data=data,
                    key_column=key,
                    text_columns=texts if searchable else (),
                    embed_columns=embeds if searchable else (),
                    vector_index=vector_index if searchable else None,
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
        click.echo(json.dumps({"database": str(database), "tables": summary}, indent=2))
        return
    for item in summary:
        parts = [f"{item['table']}: {item['rows']} rows"]
        if item["bm25_columns"]:
            parts.append(f"BM25 on {', '.join(item['bm25_columns'])}")
        for vector in item["vector_columns"]:
            parts.append(f"{vector['column']} ({vector['dimensions']}-d)")
        click.echo("; ".join(parts))
    click.echo(f"database: {database}", err=True)
