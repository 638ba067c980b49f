"""The ``hdq`` command line.

Every command prints only its artefact on stdout, notes on stderr, and exits with one of the
codes in :mod:`hotdata_retrieval.cli.exit_codes`: 0 ok, 1 invalid plan, 2 usage error. Every
error starts with one line, ``hdq <command>: error: <message>`` (:mod:`hotdata_retrieval.cli.
_errors`).
"""

from __future__ import annotations

import click

from hotdata_retrieval.cli._errors import PROGRAM, HdqGroup
from hotdata_retrieval.cli.demo import demo
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.cli.explain import explain
from hotdata_retrieval.cli.lint import lint
from hotdata_retrieval.cli.load import load
from hotdata_retrieval.cli.mcp import mcp
from hotdata_retrieval.cli.search import search
from hotdata_retrieval.cli.spec import spec
from hotdata_retrieval.cli.tune import tune


@click.group(cls=HdqGroup, name=PROGRAM)
@click.version_option(package_name="hotdata-retrieval")
def main() -> None:
    """hdq: compile and run BM25, vector and fused retrieval plans as SQL."""


main.add_command(explain)
main.add_command(lint)
main.add_command(load)
main.add_command(search)
main.add_command(demo)
main.add_command(mcp)
main.add_command(spec)
main.add_command(tune)

__all__ = ["EXIT_INVALID_PLAN", "EXIT_OK", "EXIT_USAGE", "main"]
