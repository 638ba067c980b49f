"""A fusion method and a filter operator registered here, outside the library, reach the
argument schemas and the descriptions of every door — the LangChain tools, the MCP server,
the DDN function and the LlamaIndex tools — with no adapter change: the doors generate them
from the registries (``register_fusion``, ``register_predicate``) when they are built. Each
check is also made without the registration, so it fails if a door lists a fixed set. The
operator then filters rows through each door as a plain Python reading of it does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pyarrow as pa
import pytest
from mcp import Client
from sqlglot import exp
from starlette.testclient import TestClient

from hotdata_retrieval.adapters import SearchToolkit, ToolError
from hotdata_retrieval.adapters.ddn import create_app
from hotdata_retrieval.adapters.langchain import make_search_tools
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.compile.compiler import SQL_SPELLINGS, SqlSpelling
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    Or,
    ValueRole,
    register_predicate,
    unregister_predicate,
)
from hotdata_retrieval.plan.search import Fusion, register_fusion, unregister_fusion

METHOD = "toy_vote"
OPERATOR = "$toy_outside"
RATINGS = [1, 2, 3, 4, 5, 6]


@attrs.frozen(kw_only=True)
class ToyVoteFusion(Fusion):
    """A toy fusion method: only its registration matters here."""

    visit_name: ClassVar[str] = "toy_vote_fusion"
    method: ClassVar[str] = METHOD

    boost: float = attrs.field(
        default=1.0, metadata={"schema": {"type": "number", "description": "A toy option."}}
    )


def _compose(self: Any, other: Any) -> Any:
    return And(operands=(self, other))


@attrs.frozen(kw_only=True)
class ToyOutside:
    """``column`` outside ``[low, high]``."""

    visit_name: ClassVar[str] = "toy_outside"

    column: str
    low: Any = attrs.field(metadata={"bound": True})
    high: Any = attrs.field(metadata={"bound": True})
    __and__ = _compose


def _outside(node: ToyOutside) -> Or:
    return Or(
        operands=(
            Comparison(column=node.column, operator="<", value=node.low),
            Comparison(column=node.column, operator=">", value=node.high),
        )
    )


def _outside_sql(compiler: Any, node: ToyOutside) -> exp.Expr:
    column = exp.column(node.column)
    return exp.Paren(
        this=exp.or_(
            exp.LT(this=column, expression=compiler.binder.literal(node, "low")),
            exp.GT(this=column.copy(), expression=compiler.binder.literal(node, "high")),
        )
    )


@pytest.fixture
def registered() -> Iterator[None]:
    register_fusion(ToyVoteFusion)
    register_predicate(
        ToyOutside,
        markers=("toy_outside",),
        description="column < low OR column > high",
        role=ValueRole.COMPARED,
        sql="toy_outside",
        expand=_outside,
        object_operator=OPERATOR,
    )
    SQL_SPELLINGS["toy_outside"] = SqlSpelling(lower=_outside_sql, text="toy_outside")
    try:
        yield
    finally:
        unregister_fusion(ToyVoteFusion)
        unregister_predicate(ToyOutside)
        del SQL_SPELLINGS["toy_outside"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    directory: Path = tmp_path_factory.mktemp("registered") / "db"
    table = pa.table(
        {
            "id": list(range(1, len(RATINGS) + 1)),
            "body": [f"red fox number {n}" for n in RATINGS],
            "rating": RATINGS,
        }
    )
    with LocalEngine(directory, embedder=HashingEmbedder()) as opened:
        opened.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        yield opened


def _langchain(engine: LocalEngine) -> tuple[str, str]:
    text_tool = make_search_tools(engine, table="docs", k=10)[0]
    schema = json.dumps(text_tool.args_schema.model_json_schema())
    return schema, text_tool.description


async def _mcp(engine: LocalEngine) -> tuple[str, str]:
    async with Client(create_server(engine, table="docs", k=10)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    text_tool = tools["hotdata_search_text"]
    return json.dumps(text_tool.input_schema), text_tool.description or ""


def _llamaindex(engine: LocalEngine) -> tuple[str, str]:
    from hotdata_retrieval.adapters.llamaindex import make_search_tools as llamaindex_tools

    text_tool = llamaindex_tools(engine, table="docs", k=10)[0]
    return json.dumps(text_tool.metadata.get_parameters_dict()), text_tool.metadata.description


def _ddn(engine: LocalEngine) -> tuple[str, str]:
    client = TestClient(create_app(engine, table="docs", default_top_k=10))
    (function,) = client.get("/schema").json()["functions"]
    return json.dumps(function["arguments"]), function["description"]


def _doors(engine: LocalEngine) -> dict[str, tuple[str, str]]:
    import anyio

    return {
        "langchain": _langchain(engine),
        "mcp": anyio.run(_mcp, engine),
        "ddn": _ddn(engine),
        "llamaindex": _llamaindex(engine),
    }


def test_without_the_registration_no_door_lists_them(engine: LocalEngine) -> None:
    for door, (schema, description) in _doors(engine).items():
        assert METHOD not in schema and METHOD not in description, door
        assert OPERATOR not in schema, door


def test_a_registered_fusion_and_operator_reach_every_schema_and_description(
    engine: LocalEngine, registered: None
) -> None:
    for door, (schema, description) in _doors(engine).items():
        assert METHOD in schema, door  # the fusion argument's choices
        assert "boost" in schema, door  # and its option, in the schema or its description
        assert METHOD in description, door
        assert OPERATOR in schema, door  # the filter argument's operators


def test_the_registered_fusion_is_read_by_the_search_path(
    engine: LocalEngine, registered: None
) -> None:
    toolkit = SearchToolkit(engine, table="docs")
    with pytest.raises(ToolError) as refused:
        toolkit.search_text("red fox", fusion={"method": METHOD, "boost": 2})
    # Read as the registered method and planned; no compiler here computes its score.
    assert "unknown fusion method" not in str(refused.value)
    assert METHOD in str(refused.value)


def test_the_registered_operator_filters_through_every_door(
    engine: LocalEngine, registered: None
) -> None:
    wanted = {key for key, rating in enumerate(RATINGS, 1) if not 2 <= rating <= 4}
    condition = {"rating": {OPERATOR: [2, 4]}}
    text_tool = make_search_tools(engine, table="docs", k=10)[0]
    rows = json.loads(text_tool.invoke({"query": "red fox", "filter": condition}))["rows"]
    assert {row["id"] for row in rows} == wanted

    async def mcp_rows() -> set[int]:
        async with Client(create_server(engine, table="docs", k=10)) as client:
            result = await client.call_tool(
                "hotdata_search_text", {"query": "red fox", "filter": condition}
            )
        assert result.is_error is False, result.content
        return {row["id"] for row in json.loads(result.content[0].text)["rows"]}

    import anyio

    assert anyio.run(mcp_rows) == wanted
    client = TestClient(create_app(engine, table="docs", default_top_k=10))
    arguments = {"query": "red fox", "filter": condition}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in arguments.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    answer = client.post("/query", json=body)
    assert answer.status_code == 200, answer.text
    ((row,),) = [row_set["rows"] for row_set in answer.json()]
    assert {hit["id"] for hit in row["__value"]} == wanted


MAX_DESCRIPTION = 2500
"""Characters of a search tool's description, registered methods and operators included."""

MAX_SCHEMA = 12_288
"""Characters of a search tool's argument schema as JSON: every option of SEARCH_OPTIONS
(13 by now) with its description, the registered methods and operators included; about 8,200
measured with the toys registered, and more when other tests of the same process have
registered methods of their own."""


def test_schemas_and_descriptions_stay_bounded(engine: LocalEngine, registered: None) -> None:
    for door, (schema, description) in _doors(engine).items():
        assert len(description) <= MAX_DESCRIPTION, (door, len(description))
        assert len(schema) <= MAX_SCHEMA, (door, len(schema))


# -- a door option is one row ------------------------------------------------------------------


def test_an_option_added_as_one_row_reaches_every_door(
    engine: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row added to SEARCH_OPTIONS (here the request's existing ``query_syntax``) is listed by
    every door's schema and read from every door's call, with no adapter change."""
    import anyio

    import hotdata_retrieval.adapters.settings as settings_module
    from hotdata_retrieval.adapters.llamaindex import make_search_tools as llamaindex_tools
    from hotdata_retrieval.adapters.settings import SEARCH_OPTIONS, OptionKind, SearchOption

    seen: list[str] = []

    def read(settings: Any, route: Any, value: Any, call: Any) -> None:
        if value not in ("text", "terms"):
            raise ToolError(f"query_syntax must be 'text' or 'terms', got {value!r}")
        seen.append(value)
        call.request["query_syntax"] = value

    row = SearchOption(
        name="query_syntax",
        kind=OptionKind.TEXT,
        schema=lambda settings: {
            "type": "string",
            "enum": ["text", "terms"],
            "description": "How the words of the query are read.",
        },
        read=read,
    )
    monkeypatch.setattr(settings_module, "SEARCH_OPTIONS", (*SEARCH_OPTIONS, row))
    for door, (schema, _) in _doors(engine).items():
        assert "query_syntax" in schema and "How the words of the query are read." in schema, door
    arguments = {"query": "red fox", "query_syntax": "terms"}
    make_search_tools(engine, table="docs")[0].invoke(arguments)
    llamaindex_tools(engine, table="docs")[0].call(**arguments)

    async def through_mcp() -> None:
        async with Client(create_server(engine, table="docs")) as client:
            result = await client.call_tool("hotdata_search_text", arguments)
        assert result.is_error is False, result.content

    anyio.run(through_mcp)
    client = TestClient(create_app(engine, table="docs"))
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in arguments.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    assert client.post("/query", json=body).status_code == 200
    assert seen == ["terms"] * 4
    refused = make_search_tools(engine, table="docs")[0].invoke({**arguments, "query_syntax": "x"})
    assert "query_syntax must be 'text' or 'terms', got 'x'" in str(refused)
