"""The ``hdq`` command line."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="hotdata-retrieval")
def main() -> None:
    """hdq: compile and run BM25, vector and fused retrieval plans as SQL."""


__all__ = ["main"]
