"""The optional extras of the package, the modules each one brings, and the one-line error
raised when a feature needs an extra that is not installed.

``pip install hotdata-retrieval`` installs only the core (sqlglot, attrs, click, rich and
tantivy, whose analyser is the library's one analysis of text for every store): plans,
the compiler, the linter, the conformance cases and ``hdq explain`` / ``hdq lint`` /
``hdq spec export``. Everything that runs a search needs an extra; the extras and what they
bring are declared in ``pyproject.toml`` (``[project.optional-dependencies]``), and
:data:`EXTRA_MODULES` names the modules of each that the library imports.

>>> install_command("local")
"pip install 'hotdata-retrieval[local]'"
>>> sorted(EXTRA_MODULES)
['ann', 'ddn', 'duckdb', 'hotdata', 'ibis', 'lancedb', 'langchain', 'llamaindex', 'local', \
'mcp', 'pandas', 'postgres', 'sqlite', 'tune', 'turbopuffer']
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence

from hotdata_retrieval.errors import MissingExtraError as MissingExtraError

DISTRIBUTION = "hotdata-retrieval"

EXTRA_MODULES: Mapping[str, tuple[str, ...]] = {
    # the embedded engine: DataFusion, Arrow tables, numpy vectors, the writer lock (tantivy,
    # its BM25 and the library's text analysis, is in the core). The offline embedding model
    # of the same extra is checked by default_embedder().
    "local": ("datafusion", "numpy", "pyarrow", "filelock"),
    "ann": ("usearch",),
    "hotdata": ("hotdata_framework", "hotdata", "pyarrow"),
    "langchain": ("langchain_core",),
    "llamaindex": ("llama_index.core",),
    "ibis": ("ibis",),
    "mcp": ("mcp",),
    "ddn": ("starlette", "uvicorn", "pydantic", "yaml"),  # the NDC connector and its HML
    "tune": ("ir_measures",),  # hdq tune's nDCG@10 and recall@100
    "pandas": ("pandas", "pyarrow"),  # SearchResult.to_pandas()
    # the stores: the same plans on SQLite, PostgreSQL + pgvector, DuckDB, LanceDB and
    # turbopuffer
    "sqlite": ("sqlean", "sqlite_vec"),
    "postgres": ("psycopg",),
    "duckdb": ("duckdb", "duckdb_extension_fts"),
    "lancedb": ("lancedb",),
    "turbopuffer": ("turbopuffer",),
}
"""For each extra, the top-level modules the library imports from it (``pyproject.toml``
lists the distributions that provide them)."""


EXTRA_ENVIRONMENT: Mapping[str, Mapping[str, str]] = {
    # LanceDB's Rust log reads LANCEDB_LOG when the module is first imported; at its default
    # it writes a WARN line to standard error for every new table ("No existing dataset ...,
    # it will be created", lancedb 0.40). Errors only, unless the user chose a level.
    "lancedb": {"LANCEDB_LOG": "error"},
}
"""For each extra, environment defaults set (where the user has not set them) before its
modules are first imported by :func:`require_extra`."""


def install_command(extra: str) -> str:
    """The shell command that installs ``extra``, e.g. ``pip install
    'hotdata-retrieval[local]'`` (quoted for POSIX shells)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(extra: str, *, missing: Sequence[str], needed_by: str) -> MissingExtraError:
    """The error saying ``needed_by`` needs ``extra``, whose modules ``missing`` do not
    import, with the command that installs it (for the caller to raise)."""
    return MissingExtraError(
        extra, missing=missing, needed_by=needed_by, install=install_command(extra)
    )


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def require_extra(extra: str, *, needed_by: str) -> None:
    """Check that every module of ``extra`` imports; the modules stay imported.

    Args:
        extra: a key of :data:`EXTRA_MODULES`.
        needed_by: what needs the extra, as the message should name it (``"hdq search"``).

    Raises:
        MissingExtraError: a module of the extra does not import; the message names the
            extra, the missing modules and the install command, on one line.
        KeyError: ``extra`` is not a known extra (a programming error, not user input).
    """
    for name, value in EXTRA_ENVIRONMENT.get(extra, {}).items():
        os.environ.setdefault(name, value)
    missing = [module for module in EXTRA_MODULES[extra] if not _importable(module)]
    if missing:
        raise missing_extra(extra, missing=missing, needed_by=needed_by)
