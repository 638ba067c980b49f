"""The ``hdq`` command line.

Every command prints only its artefact on stdout, notes on stderr, and exits with one of the
codes in :mod:`hotdata_retrieval.cli.exit_codes`: 0 ok, 1 invalid plan, 2 usage error. Every
error starts with one line, ``hdq <command>: error: <message>`` (:mod:`hotdata_retrieval.cli.
_errors`).

The commands are imported when they are run (:data:`COMMANDS`), so ``hdq --help`` and one
command's start-up load only what that command uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import click

from hotdata_retrieval.cli._errors import PROGRAM, LazyHdqGroup
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE


class Subcommand(NamedTuple):
    """One ``hdq`` command: where it lives (``"module:attribute"``, imported when the command
    runs or its help is asked for) and the one line ``hdq --help`` lists it with."""

    location: str
    summary: str


COMMANDS: Mapping[str, Subcommand] = {
    "ddn": Subcommand(
        "hotdata_retrieval.cli.ddn:ddn",
        "Serve a table's search as a Hasura DDN command; print its metadata.",
    ),
    "demo": Subcommand(
        "hotdata_retrieval.cli.demo:demo",
        "Build a demo database and show text, semantic and hybrid search.",
    ),
    "explain": Subcommand(
        "hotdata_retrieval.cli.explain:explain",
        "Print the SQL statement a search compiles to, without running it.",
    ),
    "lint": Subcommand(
        "hotdata_retrieval.cli.lint:lint",
        "Find SQL that silently loses an index, the ranking or the bound.",
    ),
    "load": Subcommand(
        "hotdata_retrieval.cli.load:load",
        "Load a CSV, Parquet or JSON Lines file and build its indexes.",
    ),
    "mcp": Subcommand(
        "hotdata_retrieval.cli.mcp:mcp",
        "Serve a table's search and SQL tools to an MCP client over stdio.",
    ),
    "search": Subcommand(
        "hotdata_retrieval.cli.search:search",
        "Search a table by text, by meaning or both; print ranked rows.",
    ),
    "spec": Subcommand(
        "hotdata_retrieval.cli.spec:spec",
        "Export the hybrid_search conformance cases, or verify an engine.",
    ),
    "tune": Subcommand(
        "hotdata_retrieval.cli.tune:tune",
        "Choose the fusion of a table's hybrid search from judged queries.",
    ),
}
"""Every ``hdq`` command by name."""


@click.group(
    cls=LazyHdqGroup,
    name=PROGRAM,
    lazy_commands={name: command.location for name, command in COMMANDS.items()},
    summaries={name: command.summary for name, command in COMMANDS.items()},
)
@click.version_option(package_name="hotdata-retrieval")
def main() -> None:
    """hdq: compile and run BM25, vector and fused retrieval plans as SQL."""


__all__ = ["COMMANDS", "EXIT_INVALID_PLAN", "EXIT_OK", "EXIT_USAGE", "Subcommand", "main"]
