"""Every door reads a setting that names columns (``columns``, ``filter_columns``) by one rule,
the settings': a list of names, never a single text.

Before: ``SearchSettings(columns="body")`` (and so the toolkit, the LangChain and LlamaIndex
tools, the MCP server and the DDN function) read the text as one column while
``HotdataRetriever(columns="body")`` refused it; ``filter_columns="author"`` was read as one
column too. The reference is the plan's own request
(:class:`~hotdata_retrieval.routing.SearchRequest`): a door refuses a value exactly when the
request refuses it, and keeps the names the request keeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters.ddn import SearchDocuments, create_app
from hotdata_retrieval.adapters.langchain import HotdataRetriever
from hotdata_retrieval.adapters.langchain import make_search_tools as langchain_tools
from hotdata_retrieval.adapters.llamaindex import make_search_tools as llamaindex_tools
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.adapters.toolkit import SearchToolkit
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from hotdata_retrieval.routing import SearchRequest


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as opened:
        opened.load_table(
            "docs",
            pa.table(
                {
                    "id": [1, 2],
                    "body": ["red fox", "blue sky"],
                    "lang": ["en", "fr"],
                    "tag": ["a", "b"],
                }
            ),
            text_columns=["body"],
        )
        yield opened


COLUMN_DOORS: dict[str, Callable[[Any, Any], Any]] = {
    "settings": lambda engine, names: SearchSettings(table="docs", columns=names),
    "toolkit": lambda engine, names: SearchToolkit(engine, table="docs", columns=names),
    "langchain tools": lambda engine, names: langchain_tools(engine, table="docs", columns=names),
    "langchain retriever": lambda engine, names: HotdataRetriever(
        engine=engine, table="docs", columns=names
    ),
    "llamaindex tools": lambda engine, names: llamaindex_tools(engine, table="docs", columns=names),
    "mcp": lambda engine, names: create_server(engine, table="docs", columns=names),
    "ddn": lambda engine, names: SearchDocuments(engine, table="docs", columns=names),
    "ddn app": lambda engine, names: create_app(engine, table="docs", columns=names),
}

FILTER_COLUMN_DOORS: dict[str, Callable[[Any, Any], Any]] = {
    "settings": lambda engine, names: SearchSettings(table="docs", filter_columns=names),
    "ddn": lambda engine, names: SearchDocuments(engine, table="docs", filter_columns=names),
    "ddn app": lambda engine, names: create_app(engine, table="docs", filter_columns=names),
}

REFUSED = ["lang", "id,lang", b"lang", {"lang": "string"}, 3, ["lang", 3]]


def _refusal(label: str, names: Any) -> str:
    """The message the rule gives: the whole value, or the first item that is no text."""
    if isinstance(names, list):
        bad = next(name for name in names if not isinstance(name, str))
        return f"{label} must hold column names \\(text\\), got {re.escape(repr(bad))}"
    return f"{label} must be a list of column names, got {re.escape(repr(names))}"


KEPT = [["lang"], ("lang", "tag")]


def _a_list_of_names(names: Any) -> bool:
    """The rule, written out: a list or tuple whose every item is text."""
    return isinstance(names, (list, tuple)) and all(isinstance(name, str) for name in names)


def _request_refuses(names: Any) -> bool:
    try:
        SearchRequest(table="docs", query="fox", columns=names)
    except PlanError:
        return True
    return False


@pytest.mark.parametrize("names", REFUSED, ids=repr)
@pytest.mark.parametrize("door", list(COLUMN_DOORS))
def test_every_door_refuses_columns_the_request_refuses(
    engine: LocalEngine, door: str, names: Any
) -> None:
    assert not _a_list_of_names(names) and _request_refuses(names)
    with pytest.raises(HotdataRetrievalError, match=_refusal("columns", names)):
        COLUMN_DOORS[door](engine, names)


@pytest.mark.parametrize("names", REFUSED, ids=repr)
@pytest.mark.parametrize("door", list(FILTER_COLUMN_DOORS))
def test_every_door_refuses_filter_columns_as_it_refuses_columns(
    engine: LocalEngine, door: str, names: Any
) -> None:
    with pytest.raises(HotdataRetrievalError, match=_refusal("filter_columns", names)):
        FILTER_COLUMN_DOORS[door](engine, names)


@pytest.mark.parametrize("names", KEPT, ids=repr)
@pytest.mark.parametrize("door", list(COLUMN_DOORS))
def test_every_door_keeps_the_columns_the_request_keeps(
    engine: LocalEngine, door: str, names: Any
) -> None:
    assert _a_list_of_names(names)
    kept = SearchRequest(table="docs", query="fox", columns=names).columns
    assert kept == tuple(names)
    built = COLUMN_DOORS[door](engine, names)
    read = getattr(built, "columns", None)
    if door in {"settings", "toolkit", "langchain retriever"}:
        assert tuple(read) == kept


@pytest.mark.parametrize("names", KEPT, ids=repr)
@pytest.mark.parametrize("door", list(FILTER_COLUMN_DOORS))
def test_every_door_keeps_the_filter_columns_it_is_given(
    engine: LocalEngine, door: str, names: Any
) -> None:
    built = FILTER_COLUMN_DOORS[door](engine, names)
    if door == "settings":
        assert built.filter_columns == tuple(names)
    elif door == "ddn":
        assert tuple(built.filters) == tuple(names)


def test_the_retriever_names_the_setting_and_its_value(engine: LocalEngine) -> None:
    with pytest.raises(PlanError) as refused:
        HotdataRetriever(engine=engine, table="docs", columns="lang")
    assert refused.value.field == "columns" and refused.value.value == "lang"
