"""``hdq demo``: build a local database of support tickets and show text, semantic and hybrid
search side by side — no account, no key, no server."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import click

from hotdata_retrieval._console import make_console
from hotdata_retrieval.cli._local import (
    database_note,
    embedder_named,
    local_database_option,
    reports_errors,
)
from hotdata_retrieval.cli.search import render_hits
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.extras import require_extra

DEMO_TABLE = "tickets"
DEMO_QUERY = "sync stopped working"
"""The search the demo suggests trying next."""


@click.command("demo")
@local_database_option
@click.option(
    "-k",
    "--limit",
    "limit",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Hits shown per search and mode.",
)
@click.option(
    "--embedder",
    type=click.Choice(["default", "hashing"]),
    default="default",
    show_default=True,
    help="default: the offline all-MiniLM-L6-v2 model; hashing: instant, no meaning.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the hits side by side; json: one JSON document on stdout.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a table named tickets that holds other data than the demo's.",
)
@reports_errors
def demo(database: Path, limit: int, embedder: str, output_format: str, replace: bool) -> None:
    """Load generated support tickets and run searches where text, semantic and hybrid
    rank differently."""
    require_extra("local", needed_by="this command")
    from hotdata_retrieval.demo import DEMO_QUERIES, support_tickets
    from hotdata_retrieval.engines.local import LocalEngine

    console = make_console(stderr=output_format == "json")
    started = time.perf_counter()
    model = embedder_named(embedder)
    tickets = support_tickets()
    report: list[dict[str, Any]] = []
    distinct = len(set(tickets.column("body").to_pylist()))
    created = not (database / "catalog.json").exists()
    with LocalEngine(database, embedder=model) as engine:
        if not replace and DEMO_TABLE in engine.tables and not _holds_demo(engine, tickets):
            raise click.UsageError(
                f"table '{DEMO_TABLE}' in {database.resolve()} holds other data than the demo's "
                "tickets, and the demo would replace it; give another --database, or --replace "
                "to replace it"
            )
        console.print(
            f"Loading {tickets.num_rows} support tickets into {database.resolve()}: a BM25 "
            f"index on body and {model.name} embeddings of its {distinct} distinct texts…",
            markup=False,
        )
        engine.load_table(
            DEMO_TABLE,
            tickets,
            text_columns=["body"],
            embed_columns=["body"],
            progress=True,
        )
        for query in DEMO_QUERIES:
            if output_format == "table":
                console.rule(f"[bold]{query.text}")
                console.print(query.point)
            entry: dict[str, Any] = {"query": query.text, "point": query.point, "modes": {}}
            for mode in ("text", "semantic", "hybrid"):
                plan = engine.plan_search(
                    DEMO_TABLE,
                    query.text,
                    mode=mode,
                    limit=limit,
                    columns=["ticket", "title"],
                    embed_query=model.embed_query,
                )
                result = engine.search(plan)
                entry["modes"][mode] = [
                    {
                        "key": hit.key,
                        "ticket": hit.columns["ticket"],
                        "title": hit.columns["title"],
                        result.ranked_by.lstrip("_"): hit.ranking_value,
                    }
                    for hit in result
                ]
                if output_format == "table":
                    console.print(
                        render_hits(
                            result,
                            title=mode,
                            ranks=mode == "hybrid",
                            key_column=plan.key_column,
                            width=console.width,
                        ),
                        crop=False,
                    )
            report.append(entry)
    elapsed = time.perf_counter() - started
    if output_format == "json":
        loaded = {"table": DEMO_TABLE, "rows": tickets.num_rows, "distinct_texts": distinct}
        document = {"database": str(database.resolve()), "loaded": loaded, "queries": report}
        click.echo(json.dumps(document, indent=2))
        console.print(
            database_note(database, created=created), markup=False, highlight=False, soft_wrap=True
        )
        return
    console.rule()
    console.print(f"Done in {elapsed:.1f} s. Try:", markup=False, highlight=False)
    # The command on a line of its own, never wrapped (a log or a narrow terminal would cut
    # it mid-word), so that it can be copied and run as it is.
    console.print(next_command(database), markup=False, highlight=False, soft_wrap=True, crop=False)
    console.print(
        database_note(database, created=created), markup=False, highlight=False, soft_wrap=True
    )


def next_command(database: Path) -> str:
    """The search ``hdq demo`` suggests at its end, as a shell command (the database path
    quoted for the shell)."""
    return shlex.join(
        [
            "hdq",
            "search",
            DEMO_QUERY,
            "--table",
            DEMO_TABLE,
            "--database",
            str(database),
            "--explain",
        ]
    )


def _holds_demo(engine: Any, tickets: Any) -> bool:
    """Whether the engine's demo table holds the demo's tickets (an earlier ``hdq demo``)."""
    try:
        existing = engine.read_table(DEMO_TABLE)
        embedded = {vector.name for vector in engine.tables[DEMO_TABLE].vector_columns}
    except HotdataRetrievalError:
        return False
    if set(existing.column_names) - embedded != set(tickets.column_names):
        return False  # a column of the user's would be lost
    return bool(existing.select(tickets.column_names).equals(tickets))
