"""The settings every door is built from, and filter text through the agents' tools.

``SearchSettings`` checks its values once; the toolkit, the LangChain tools and the MCP server
take it or the old keyword arguments, which build the same settings. An agent may send a filter
as text (``"rating <= 2"``) as well as an object; when neither reads, the error shows the shapes
to send. The rows a filtered search returns are checked against a plain Python reading."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SEARCH_OPTIONS, SearchSettings, SearchToolkit, ToolError
from hotdata_retrieval.adapters.langchain import make_search_tools, make_text_search_tool
from hotdata_retrieval.engines.limits import InputLimits
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import Comparison

BODIES = ["red fox", "red car", "red sky", "red wine", "red rose", "blue fox"]
RATINGS = [1, 2, 3, 4, 5, 2]
LANGS = ["en", "fr", "en", "en", "fr", "en"]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as opened:
        opened.load_table(
            "docs",
            pa.table(
                {
                    "id": list(range(1, len(BODIES) + 1)),
                    "body": BODIES,
                    "rating": RATINGS,
                    "lang": LANGS,
                }
            ),
            text_columns=["body"],
        )
        yield opened


def _kept(truth: Any) -> set[int]:
    return {
        key
        for key, (body, rating, lang) in enumerate(zip(BODIES, RATINGS, LANGS), 1)
        if "red" in body and truth(rating, lang)
    }


# -- the settings ------------------------------------------------------------------------------


def test_settings_are_frozen_and_checked_once() -> None:
    settings = SearchSettings(table="docs", k=3, max_rows=10, columns=["id", "body"])
    assert settings.columns == ("id", "body") and settings.default_k == 3
    assert SearchSettings(table="docs", max_rows=2).default_k == 2
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        settings.k = 4  # type: ignore[misc]
    with pytest.raises(ToolError, match=r"k \(11\) must not exceed max_rows \(10\)"):
        SearchSettings(table="docs", k=11, max_rows=10)
    for field, value in (("k", 0), ("max_rows", True), ("max_bytes", "5")):
        with pytest.raises(ToolError, match=f"{field} must be a whole number of at least 1"):
            SearchSettings(table="docs", **{field: value})
    with pytest.raises(ToolError, match="name_prefix must be up to 64 letters"):
        SearchSettings(table="docs", name_prefix="a b")
    with pytest.raises(ToolError, match="input_limits must be an InputLimits"):
        SearchSettings(table="docs", input_limits={"max_query_characters": 5})
    with pytest.raises(ToolError, match=r"fusion: unknown fusion method 'nope'"):
        SearchSettings(table="docs", fusion="nope")
    with pytest.raises(ToolError, match="descriptions has no tool 'search'"):
        SearchSettings(table="docs", descriptions={"search": "x"})
    with pytest.raises(TypeError):
        SearchSettings(table="docs", limit=3)  # type: ignore[call-arg]


def test_of_builds_from_keywords_or_replaces_fields() -> None:
    base = SearchSettings(table="docs", k=3)
    assert SearchSettings.of(base) is base
    assert SearchSettings.of(base, k=4) == attrs.evolve(base, k=4)
    assert SearchSettings.of(None, table="docs", k=3) == base
    with pytest.raises(ToolError, match="settings must be a SearchSettings"):
        SearchSettings.of({"table": "docs"})  # type: ignore[arg-type]


def test_every_door_takes_settings_or_the_old_keywords(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.mcp import create_server

    settings = SearchSettings(table="docs", k=2, name_prefix="shop_", sql=False)
    by_settings = [tool.name for tool in make_search_tools(engine, settings)]
    by_keywords = [
        tool.name
        for tool in make_search_tools(engine, table="docs", k=2, name_prefix="shop_", sql=False)
    ]
    assert by_settings == by_keywords == ["shop_search_text"]
    assert (
        SearchToolkit(engine, settings).settings
        == SearchToolkit(engine, table="docs", k=2, name_prefix="shop_", sql=False).settings
    )
    server = create_server(engine, settings, name="shop")
    assert server.name == "shop"


def test_a_description_of_ones_own_keeps_the_stored_data_notice(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters import STORED_DATA_NOTICE

    own = "Find rows of the shop's catalogue."
    tool = make_text_search_tool(
        engine, SearchSettings(table="docs", descriptions={"search_text": own})
    )
    assert tool.description == f"{own} {STORED_DATA_NOTICE}"


def test_the_settings_filter_holds_with_the_calls(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs", k=10, filter="lang = 'en'")
    rows = toolkit.search_text("red", filter={"rating": {"$gte": 3}})["rows"]
    assert {row["id"] for row in rows} == _kept(lambda rating, lang: lang == "en" and rating >= 3)
    rows = toolkit.search_text("red")["rows"]
    assert {row["id"] for row in rows} == _kept(lambda rating, lang: lang == "en")


def test_a_default_fusion_is_taken_only_by_a_fused_search(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, table="docs", fusion="dbsf")
    assert toolkit.text_route is not None and not toolkit.text_route.fused
    assert "fusion" not in [option.name for option in toolkit.search_options(toolkit.text_route)]
    assert toolkit.search_text("red")["rows"]  # the default is not forced on one ranking


def test_the_option_table_names_each_argument_once() -> None:
    names = [option.name for option in SEARCH_OPTIONS]
    assert names[0] == "query" and len(names) == len(set(names))


# -- filter text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "truth"),
    [
        ("rating <= 2", lambda rating, lang: rating <= 2),
        ("rating BETWEEN 2 AND 4 AND lang = 'en'", lambda r, lang: 2 <= r <= 4 and lang == "en"),
        ("ends_with(lang, 'r')", lambda rating, lang: lang.endswith("r")),
    ],
)
def test_filter_text_through_the_toolkit_and_the_langchain_tool(
    engine: LocalEngine, text: str, truth: Any
) -> None:
    toolkit = SearchToolkit(engine, table="docs", k=10)
    assert {row["id"] for row in toolkit.search_text("red", filter=text)["rows"]} == _kept(truth)
    tool = make_text_search_tool(engine, table="docs", k=10)
    answer = json.loads(tool.invoke({"query": "red", "filter": text}))
    assert {row["id"] for row in answer["rows"]} == _kept(truth)


def test_a_filter_of_neither_form_shows_the_shapes_to_send(engine: LocalEngine) -> None:
    tool = make_text_search_tool(engine, table="docs", k=10)
    for bad, form in (("rating <=", "filter text"), ({"rating": {"$lte": []}}, "filter object")):
        answer = str(tool.invoke({"query": "red", "filter": bad}))
        assert f"the {form} does not read" in answer
        assert '{"lang": "en", "rating": {"$gte": 4}}' in answer
        assert "\"rating <= 2 AND lang = 'en'\"" in answer
    answer = str(tool.invoke({"query": "red", "filter": 3}))
    assert "filter must be an object or text, got 3" in answer


def test_filter_text_is_bounded_as_filter_objects_are(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(
        engine, table="docs", input_limits=InputLimits(max_filter_characters=20)
    )
    with pytest.raises(ToolError, match="max_filter_characters"):
        toolkit.search_text("red", filter="rating <= 2 AND rating <= 3 AND rating <= 4")
    schema = toolkit.filter_schema
    assert {"type": "string", "maxLength": 20} in schema["anyOf"]


def test_the_settings_filter_reads_every_form() -> None:
    predicate = Comparison(column="lang", operator="=", value="en")
    for form in ("lang = 'en'", {"lang": "en"}, predicate):
        assert SearchSettings(table="docs", filter=form).filter == predicate
    with pytest.raises(ToolError, match="filter: "):
        SearchSettings(table="docs", filter="lang =")


def test_the_retriever_reads_what_it_is_not_given_from_the_settings(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import HotdataRetriever

    settings = SearchSettings(table="docs", k=10, filter="lang = 'en'", columns=["rating"])
    retriever = HotdataRetriever(engine=engine, settings=settings, filter={"rating": {"$gte": 3}})
    assert retriever.table == "docs" and retriever.k == 10
    documents = retriever.invoke("red")
    assert {int(document.id) for document in documents} == _kept(
        lambda rating, lang: lang == "en" and rating >= 3
    )
    assert all("rating" in document.metadata for document in documents)
    assert HotdataRetriever(engine=engine, settings=settings, k=1).k == 1  # given wins
    with pytest.raises(PlanError, match="give the table to search"):
        HotdataRetriever(engine=engine)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_filter_text_through_the_mcp_tool(engine: LocalEngine, anyio_backend: str) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    async with Client(create_server(engine, table="docs", k=10)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["hotdata_search_text"].input_schema["properties"]["filter"]
        assert {"type": "string", "maxLength": 8192} in schema["anyOf"]
        found = await client.call_tool(
            "hotdata_search_text", {"query": "red", "filter": "rating <= 2"}
        )
        refused = await client.call_tool(
            "hotdata_search_text", {"query": "red", "filter": "rating <= "}
        )
    assert found.is_error is False, found.content
    rows = json.loads(found.content[0].text)["rows"]
    assert {row["id"] for row in rows} == _kept(lambda rating, lang: rating <= 2)
    assert refused.is_error is True
    message = refused.content[0].text
    assert "the filter text does not read" in message and '"rating": {"$gte": 4}' in message


@pytest.fixture(scope="module")
def hybrid_engine() -> Iterator[LocalEngine]:
    from hotdata_retrieval.embed import HashingEmbedder

    bodies = [f"disk full on host {number % 7} after {number} days" for number in range(320)]
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as opened:
        opened.load_table(
            "logs",
            pa.table({"id": list(range(len(bodies))), "body": bodies}),
            text_columns=["body"],
            embed_columns=["body"],
        )
        yield opened


def _fusion_depth_maxima(schema: Any) -> set[int]:
    return {
        branch["maximum"]
        for choice in schema["anyOf"]
        if isinstance(choice.get("properties"), dict) and "depth" in choice["properties"]
        for branch in choice["properties"]["depth"]["anyOf"]
        if branch.get("type") == "integer"
    }


@pytest.mark.parametrize(("max_rows", "most"), [(50, 1000), (1500, 1500)])
def test_an_agents_fusion_depth_is_bounded(
    hybrid_engine: LocalEngine, max_rows: int, most: int
) -> None:
    tool = make_search_tools(hybrid_engine, SearchSettings(table="logs", max_rows=max_rows))[0]
    assert _fusion_depth_maxima(tool.args_schema.model_json_schema()["properties"]["fusion"]) == {
        most
    }
    answer = tool.invoke({"query": "disk", "fusion": {"method": "rrf", "depth": 1_000_000_000}})
    assert answer == f"Error: fusion: depth must be at most {most:,} here, got 1000000000"
    answer = tool.invoke({"query": "disk", "fusion": {"method": "rrf", "depth": most}})
    assert json.loads(answer)["metadata"]["returned"] == 5


@pytest.mark.parametrize("fusion", [None, "dbsf", {"method": "rrf", "rank_constant": 10}])
def test_a_k_above_the_default_depth_is_served_when_max_rows_allows_it(
    hybrid_engine: LocalEngine, fusion: Any
) -> None:
    from hotdata_retrieval.routing import FusionChoice, SearchRequest

    tool = make_search_tools(hybrid_engine, SearchSettings(table="logs", max_rows=300))[0]
    arguments = {"query": "disk full", "k": 250, **({} if fusion is None else {"fusion": fusion})}
    rows = json.loads(tool.invoke(arguments))["rows"]
    choice = FusionChoice.of(fusion) or FusionChoice()
    deep = FusionChoice(method=choice.method, options={**choice.options, "depth": 300})
    request = SearchRequest(table="logs", query="disk full", limit=250, fusion=deep)
    expected = hybrid_engine.search(hybrid_engine.plan_search(request)).keys
    assert [row["id"] for row in rows] == expected and len(expected) == 250
