"""Agent-facing adapters: the same search and SQL tools for LangChain and for MCP.

- :mod:`hotdata_retrieval.adapters.langchain` (needs ``langchain-core``): ``make_search_tools``
  and ``HotdataRetriever``.
- :mod:`hotdata_retrieval.adapters.mcp` (needs ``mcp``): ``create_server``; ``hdq mcp`` serves it
  over stdio.
- :mod:`hotdata_retrieval.adapters.settings`: ``SearchSettings``, what every door of a table's
  search is set up with, and ``SEARCH_OPTIONS``, the options a search call takes.
- :mod:`hotdata_retrieval.adapters.toolkit`: what the tools do and say, for any engine.
- :mod:`hotdata_retrieval.adapters.envelope`: the one result shape, ``{metadata, rows}``.

Adapters only translate: they build plans and call ``engine.search`` or run agent SQL with
``engine.sql``; they never write SQL. Importing this package imports neither framework.
"""

from hotdata_retrieval.adapters.envelope import ToolWarning, envelope, jsonable, to_json
from hotdata_retrieval.adapters.settings import (
    SEARCH_OPTIONS,
    OptionKind,
    SearchOption,
    SearchSettings,
)
from hotdata_retrieval.adapters.toolkit import (
    DEFAULT_K,
    DEFAULT_MAX_ROWS,
    DEFAULT_NAME_PREFIX,
    FORBIDDEN_DESCRIPTION_WORDS,
    STORED_DATA_NOTICE,
    SearchEngine,
    SearchRoute,
    SearchToolkit,
    ToolError,
    ToolSearch,
)

__all__ = [
    "SearchSettings",
    "SearchOption",
    "OptionKind",
    "SEARCH_OPTIONS",
    "SearchToolkit",
    "ToolSearch",
    "SearchEngine",
    "SearchRoute",
    "ToolError",
    "ToolWarning",
    "envelope",
    "jsonable",
    "to_json",
    "DEFAULT_K",
    "DEFAULT_MAX_ROWS",
    "DEFAULT_NAME_PREFIX",
    "FORBIDDEN_DESCRIPTION_WORDS",
    "STORED_DATA_NOTICE",
]
